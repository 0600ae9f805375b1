"""The job protocol (services/jobs.py): the tasks' stable names and their discovery, the typed results, and
the one wait loop of the commands (management/wait.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.utils import timezone

from rubrics_app.management import wait
from rubrics_app.management.wait import JobGone, wait_for_job
from rubrics_app.models import (
    RESULT_MODELS,
    EvidenceCheckResult,
    Job,
    JobKind,
    JobStatus,
    SweepResult,
    ValidationResult,
    result_json,
)
from rubrics_app.services import jobs

ROOT = Path(__file__).resolve().parents[2]

# The names the tasks had in rubrics_app/tasks.py: messages already queued, and the beat schedule, use them.
OLD_NAMES = {
    "rubrics_app.tasks.export_revision_to_checkout",
    "rubrics_app.tasks.check_repository_evidence",
    "rubrics_app.tasks.calibrate_revision",
    "rubrics_app.tasks.sweep_runs",
    "rubrics_app.tasks.draft_rubric_job",
    "rubrics_app.tasks.check_evidence_everywhere",
    "rubrics_app.tasks.reap_lost_jobs",
}
# Tasks added since, named the same way.
NEW_NAMES = {"rubrics_app.tasks.keep_report_ready"}

_FRESH = """
import json, django
django.setup()
from rubrics_app.celery import app
from rubrics_app.models import JobKind
from rubrics_app.services import jobs
before = sorted(n for n in app.tasks if n.startswith("rubrics_app."))
of_kind = {kind: getattr(jobs.task_of(kind), "name", None) for kind in JobKind}
after = sorted(n for n in app.tasks if n.startswith("rubrics_app."))
print(json.dumps({"before": before, "of_kind": of_kind, "after": after}))
"""


def test_a_fresh_process_finds_every_task_by_its_old_name() -> None:
    """A process that imported only the protocol (the reaper's case) finds each kind's task, and then every
    task a worker registers, under the names they always had."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "rubrics_app.settings"}
    env.pop("DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-c", _FRESH],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "rubrics_app.tasks.sweep_runs" not in seen["before"]  # not imported until asked for
    assert seen["of_kind"] == {kind: jobs.TASK_NAMES.get(kind) for kind in JobKind}  # retired: None
    assert set(seen["after"]) == OLD_NAMES | NEW_NAMES


def test_the_beat_schedule_names_registered_tasks() -> None:
    """The periodic tasks are sent by name: a name no module registers would be dropped by every worker."""
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled
    assert scheduled <= OLD_NAMES


def test_every_kind_has_a_task_name_and_a_result_model() -> None:
    assert set(JobKind) == set(RESULT_MODELS)  # a retired kind's old rows still read
    assert set(jobs.TASK_NAMES) == set(JobKind) - {JobKind.VALIDATE_REVISION}  # retired: nothing sends it


def test_a_job_of_a_retired_kind_left_queued_is_failed_by_the_reaper(db: None) -> None:
    # e.g. sent by an older version, whose message no worker now knows
    old = Job.objects.create(kind=JobKind.VALIDATE_REVISION, sent_at=timezone.now() - timedelta(days=1))
    assert jobs.reap().failed == [old.pk]
    old.refresh_from_db()
    assert (old.status, old.error) == (JobStatus.FAILED, "no task for validate_revision jobs")


def test_a_result_is_written_and_read_through_the_model_of_its_kind(db: None) -> None:
    job = Job.objects.create(kind=JobKind.VALIDATE_REVISION, status=JobStatus.RUNNING, attempts=1)
    jobs.finish(job, JobStatus.DONE, result=ValidationResult(valid=True))
    job.refresh_from_db()
    assert job.result == {"valid": True, "errors": []}  # the JSON the pages read
    assert job.result_as(ValidationResult) == ValidationResult(valid=True)
    with pytest.raises(TypeError, match="validate_revision job's result is not a SweepResult"):
        job.result_as(SweepResult)
    with pytest.raises(TypeError, match="sweep job's result is not a ValidationResult"):
        result_json(JobKind.SWEEP, ValidationResult(valid=False))


def test_a_stored_result_of_another_shape_is_refused_on_reading(db: None) -> None:
    job = Job.objects.create(kind=JobKind.CHECK_EVIDENCE, result={"head": "abc", "open": "many"})
    with pytest.raises(ValueError, match="open"):
        job.result_as(EvidenceCheckResult)


@pytest.fixture
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wait, "POLL_SECONDS", 0.01)


@pytest.mark.usefixtures("fast_polls")
def test_wait_for_job_returns_the_finished_job_and_shows_each_read(db: None) -> None:
    job = Job.objects.create(kind=JobKind.SWEEP, status=JobStatus.RUNNING)
    seen: list[str] = []

    def poll(fresh: Job) -> None:
        seen.append(fresh.status)
        if len(seen) == 3:
            Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE)

    done = wait_for_job(job, timeout=30, on_poll=poll)
    assert done.status == JobStatus.DONE
    assert seen == ["running", "running", "running", "done"]


@pytest.mark.usefixtures("fast_polls")
def test_wait_for_job_gives_up_after_its_timeout_with_exit_code_2(db: None) -> None:
    job = Job.objects.create(kind=JobKind.SWEEP, status=JobStatus.QUEUED)
    with pytest.raises(CommandError, match=f"job {job.pk} is still queued after 0.05 s") as raised:
        wait_for_job(job, timeout=0.05)
    assert raised.value.returncode == 2


@pytest.mark.usefixtures("fast_polls")
def test_wait_for_job_waits_for_its_condition_and_says_when_the_job_is_gone(db: None) -> None:
    job = Job.objects.create(kind=JobKind.SWEEP, status=JobStatus.RUNNING, attempts=1)
    again = wait_for_job(job, timeout=30, until=lambda j: j.attempts == 1)
    assert again.pk == job.pk
    Job.objects.filter(pk=job.pk).delete()
    with pytest.raises(JobGone, match=f"job {job.pk} is gone"):
        wait_for_job(job, timeout=30)
