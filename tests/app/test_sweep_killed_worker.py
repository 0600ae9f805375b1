"""A worker killed (SIGKILL) mid-sweep: only whole grades are stored; the job reaper queues the job again and
the next run of it grades only the rest, so no verdict is lost and none is stored twice.

A module of its own: no other worker may listen on the test queue while this one is killed."""

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
    ItemVerdict,
    Job,
    JobKind,
    JobStatus,
    JudgeSetting,
    Repository,
    RubricRevision,
    RunGrade,
)
from rubrics_app.services import jobs
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import sweep_runs
from tests.app.sweep_helpers import import_runs
from tests.app.worker_helpers import SONNET, WAIT_SECONDS, celery_worker, database_url, environment
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture

__all__ = ["fake_server_fixture"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_a_worker_killed_mid_sweep_loses_no_verdict_and_duplicates_none(
    fake_server: FakeProviderServer,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET)
    import_runs(repository, tmp_path / "runs", 6)
    fake_server.latency = 0.5  # two runs at a time: the kill lands with some stored and some not
    log = tmp_path / "killed.log"
    with (
        environment({"SWEEP_PROVIDER_LIMITS": "anthropic=2"}),
        celery_worker(log, fake_server, database_url()) as process,
    ):
        sweep = sweeps.start(repository, Actor.member(maintainer))
        deadline = time.monotonic() + WAIT_SECONDS
        while not RunGrade.objects.exists():
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        process.kill()  # SIGKILL: no cleanup of any kind
        process.wait()
    fake_server.latency = 0.0
    job = Job.objects.get(pk=sweep.job_id)
    stored = list(RunGrade.objects.all())
    assert job.status == JobStatus.RUNNING and 1 <= len(stored) < 6
    for grade in stored:  # whole grades only: every judged item's verdict is there
        assert ItemVerdict.objects.filter(judge__grade=grade).count() == 4, grade
    made = len(fake_server.model_calls())

    # The reaper (every worker runs it) finds the job lost once its heartbeat is stale and queues it again;
    # the message is caught here and the job run in this process, as the next worker would run it.
    assert jobs.task_of(JobKind.SWEEP).name == sweep_runs.name  # type: ignore[union-attr]
    sent: list[int] = []
    # jobs.send hands every message to Celery through apply_async, after the commit.
    monkeypatch.setattr(sweep_runs, "apply_async", lambda args, **options: sent.extend(args))
    reaped = jobs.reap(now=timezone.now() + timedelta(minutes=5))
    assert reaped.requeued == [job.pk] and sent == [job.pk]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    sweep_runs(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.DONE, 2), job.error
    assert job.result is not None and job.result["already_graded"] == len(stored)
    grades = list(RunGrade.objects.order_by("run__repetition"))
    assert [g.run.repetition for g in grades] == list(range(6))  # every run once
    assert {g.pk for g in stored} <= {g.pk for g in grades}  # the grades stored before the kill are kept
    assert ItemVerdict.objects.count() == 6 * 4
    # Calls answered before the kill but not stored come from the verdict cache: at most the rest is paid.
    assert len(fake_server.model_calls()) - made <= 6 - len(stored)
