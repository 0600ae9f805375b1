"""A worker killed (SIGKILL) mid-calibration: only whole rows are stored; the job reaper queues the job again
and the next worker takes the run over, keeping the rows stored before and paying only for the rest.

A module of its own: no other worker may listen on the test queue while this one is killed (another would
take the job, or finish it after the test)."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationRow,
    CalibrationStatus,
    Job,
    JobKind,
    JobStatus,
    JudgeSetting,
    Repository,
    RevisionStatus,
)
from rubrics_app.services import jobs
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.run import calibrate_revision
from tests.app.conftest import MakeRevision
from tests.app.worker_helpers import WAIT_SECONDS, celery_worker, database_url, use_fake_providers
from tests.grading.judge.fake_servers import FakeProviderServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_a_worker_killed_mid_calibration_leaves_whole_rows_and_the_rerun_pays_only_the_rest(
    calibration_provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    use_fake_providers(repository, maintainer)
    JudgeSetting.objects.filter(repository=repository).update(second_judge="")  # one judge: 5 calls in all
    revision = make_revision(RevisionStatus.APPROVED)
    calibration_provider.latency = 1.5  # the first row is answered alone, then the other four together
    try:
        with celery_worker(tmp_path / "killed.log", calibration_provider, database_url()) as process:
            run = calibration.start(revision, Actor.member(maintainer))
            deadline = time.monotonic() + WAIT_SECONDS
            while not CalibrationRow.objects.filter(run=run).exists():
                assert time.monotonic() < deadline, (tmp_path / "killed.log").read_text(errors="replace")
                time.sleep(0.05)
            process.kill()  # SIGKILL: no cleanup of any kind
            process.wait()
    finally:
        calibration_provider.latency = 0.0
    run.refresh_from_db()
    stored = list(run.rows.all())
    assert run.status == CalibrationStatus.RUNNING and 1 <= len(stored) < 5
    for row in stored:  # whole rows only: every judged item's verdict is there
        assert row.verdicts.count() == 4, row
    # The job reaper (every worker runs it) finds the job lost once its heartbeat is stale, and queues it
    # again: the message is caught here and the job run in this process, as the next worker would.
    assert jobs.task_of(JobKind.CALIBRATE_REVISION).name == calibrate_revision.name  # type: ignore[union-attr]
    sent: list[int] = []
    # jobs.send hands every message to Celery through apply_async, after the commit.
    monkeypatch.setattr(calibrate_revision, "apply_async", lambda args, **options: sent.extend(args))
    settings.JOB_MAX_ATTEMPTS = 2
    reaped = jobs.reap(now=timezone.now() + timedelta(minutes=5))
    assert run.job is not None and reaped.requeued == [run.job.pk] and sent == [run.job.pk]
    assert calibration.fail_stale_runs() == 0  # its job is queued again, not failed: the run is not lost
    monkeypatch.setenv("ANTHROPIC_BASE_URL", calibration_provider.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    before = len(calibration_provider.model_calls())
    calibrate_revision(run.job.pk)
    run.refresh_from_db()
    assert run.status == CalibrationStatus.PASSED, run.reason
    job = Job.objects.get(pk=run.job.pk)
    assert (job.status, job.attempts) == (JobStatus.DONE, 2)
    rows = list(run.rows.all())
    assert [r.position for r in rows] == list(range(5))
    assert {r.pk for r in stored} <= {r.pk for r in rows}  # the rows stored before the kill are kept
    assert len(calibration_provider.model_calls()) - before <= 5 - len(stored)
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED  # "Run calibration", not "Admit"
