"""A worker killed (SIGKILL) mid-calibration: only whole rows are stored, the run is failed with its reason
once its heartbeat is stale, and calibrating again pays only for the rows not judged before.

A module of its own: no other worker may listen on the test queue while this one is killed (another would
take the job, or finish it after the test)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from rubrics_app.models import (
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    Job,
    JobStatus,
    JudgeSetting,
    Repository,
    RevisionStatus,
)
from rubrics_app.services import calibration
from tests.app.conftest import MakeRevision
from tests.app.test_calibration_worker import celery_worker, provider, use_fake_providers
from tests.app.test_celery_worker import WAIT_SECONDS, database_url
from tests.grading.judge.fake_servers import FakeProviderServer

__all__ = ["provider"]  # the module-scoped fake server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_a_worker_killed_mid_calibration_leaves_whole_rows_and_the_rerun_pays_only_the_rest(
    provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_fake_providers(repository, maintainer)
    JudgeSetting.objects.filter(repository=repository).update(second_judge="")  # one judge: 5 calls in all
    revision = make_revision(RevisionStatus.APPROVED)
    provider.latency = 1.5  # the first row is answered alone, then the other four together
    try:
        with celery_worker(tmp_path / "killed.log", provider, database_url()) as process:
            run = calibration.start(revision, maintainer)
            deadline = time.monotonic() + WAIT_SECONDS
            while not CalibrationRow.objects.filter(run=run).exists():
                assert time.monotonic() < deadline, (tmp_path / "killed.log").read_text(errors="replace")
                time.sleep(0.05)
            process.kill()  # SIGKILL: no cleanup of any kind
            process.wait()
    finally:
        provider.latency = 0.0
    run.refresh_from_db()
    stored = list(run.rows.all())
    assert run.status == CalibrationStatus.RUNNING and 1 <= len(stored) < 5
    for row in stored:  # whole rows only: every judged item's verdict is there
        assert row.verdicts.count() == 4, row
    # Its heartbeat stops; once stale, the run is failed with its reason (the page and commands do this).
    CalibrationRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert calibration.fail_stale_runs() == 1
    run.refresh_from_db()
    assert run.status == CalibrationStatus.ERROR and "worker stopped mid-run" in run.reason
    assert run.job is not None and Job.objects.get(pk=run.job.pk).status == JobStatus.FAILED
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
    # Calibrating again (here, in this process): the rows judged before the kill come from the verdict cache.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    before = len(provider.model_calls())
    again = calibration.calibrate_now(revision, maintainer, admit=True)
    assert again.status == CalibrationStatus.PASSED, again.reason
    assert again.calls == len(provider.model_calls()) - before <= 5 - len(stored)
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
