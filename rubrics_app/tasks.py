"""Celery jobs. Each takes a Job id, claims the row with a conditional QUEUED -> RUNNING update (so a
redelivered message never runs a job twice), loads its objects, calls grading/ through the services, and saves
the result on the Job row that the pages poll. Send them with ``delay_on_commit`` (see services/jobs.py).

While a job runs, a thread of the worker touches its heartbeat. Every worker runs the reaper in a thread of
its own (started when the worker is ready): it queues again a running job whose heartbeat stopped, or fails
it with "worker lost" after JOB_MAX_ATTEMPTS claims. ``reap_lost_jobs`` is the same as a job anyone may send
(``manage.py reap_jobs``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from celery.contrib.django.task import DjangoTask
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from rubrics_app.access import Actor
from rubrics_app.celery import app
from rubrics_app.models import (
    CalibrationRun,
    Job,
    JobKind,
    JobStatus,
    Repository,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services import calibration
from rubrics_app.services.calibration import CalibrationError
from rubrics_app.services.drafting import DraftFailed, run_draft
from rubrics_app.services.import_export import ExportError, write_to_checkout
from rubrics_app.services.rereview import EvidenceCheckError, check_evidence
from rubrics_app.services.sweeps import SweepError, run_sweep

log = logging.getLogger(__name__)

# Failures a maintainer can act on; their message is shown as is. Anything else is a bug and is logged.
EXPECTED_FAILURES = (
    ExportError,
    TransitionError,
    PermissionDenied,
    RubricRevision.DoesNotExist,
    CalibrationError,
    CalibrationRun.DoesNotExist,
    EvidenceCheckError,
    SweepError,
    DraftFailed,
)


def _claim(job_id: int) -> Job | None:
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, attempts=F("attempts") + 1
    )
    if not claimed:
        return None
    return Job.objects.select_related("revision__task__repository", "created_by").get(pk=job_id)


class _Heartbeat(threading.Thread):
    """Touches a running job's heartbeat until stopped: the reaper tells a live job from a lost one by it."""

    def __init__(self, job: Job) -> None:
        super().__init__(name=f"job-{job.pk}-heartbeat", daemon=True)
        self.job_id = job.pk
        self.attempts = job.attempts
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    Job.objects.filter(
                        pk=self.job_id, status=JobStatus.RUNNING, attempts=self.attempts
                    ).update(heartbeat_at=timezone.now())
                except Exception:
                    # A missed beat is retried at the next one; the reaper allows for several. A connection
                    # the database dropped is closed, so the next beat opens a new one.
                    log.warning("job %s: heartbeat not recorded", self.job_id, exc_info=True)
                    connections.close_all()
        finally:
            connections.close_all()  # this thread's own connections

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def _run(job_id: int, body: Callable[[Job], dict[str, Any]]) -> None:
    job = _claim(job_id)
    if job is None:
        log.info("job %s was not queued (already taken or gone); skipping", job_id)
        return
    heartbeat = _Heartbeat(job)
    heartbeat.start()
    try:
        result = body(job)
    except EXPECTED_FAILURES as exc:
        _finish(job, JobStatus.FAILED, error=str(exc))
    except Exception as exc:
        log.exception("job %s failed", job_id)
        _finish(job, JobStatus.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")
        raise
    else:
        _finish(job, JobStatus.DONE, result=result)
    finally:
        heartbeat.stop()


def _finish(job: Job, status: JobStatus, *, result: dict[str, Any] | None = None, error: str = "") -> None:
    # Only this claim's run: a run the reaper took for lost (and queued again) does not overwrite the next.
    Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts).update(
        status=status, result=result, error=error, progress=100, finished_at=timezone.now()
    )


def _validate(job: Job) -> dict[str, Any]:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    errors = revision.validation_errors()
    return {
        "valid": not errors,
        "errors": [
            {
                "path": e.path,
                "message": e.message,
                "field": e.field,
                "item_pk": e.item_pk,
                "diff_pk": e.diff_pk,
            }
            for e in errors
        ],
    }


def _export(job: Job) -> dict[str, Any]:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    private = bool(job.params.get("private", False))
    branch = job.params.get("branch") or None
    exported = write_to_checkout(
        revision, private=private, branch=branch, by=Actor.command_line(job.created_by)
    )
    return {
        "root": str(exported.root),
        "paths": exported.paths,
        "branch": exported.branch,
        "commit": exported.commit,
    }


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def validate_revision(job_id: int) -> None:
    """Check a revision against grading.schema and store the errors, mapped to fields, on the job."""
    _run(job_id, _validate)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def export_revision_to_checkout(job_id: int) -> None:
    """Write an admitted revision into its repository's checkout (or private path), optionally on a branch."""
    _run(job_id, _export)


def _calibrate(job: Job) -> dict[str, Any]:
    run = CalibrationRun.objects.get(job=job)
    # A job the reaper queued again (its worker was lost) takes its run over: the Job claim is the lock.
    if not calibration.claim(run, takeover=job.attempts > 1):
        raise CalibrationError(f"calibration #{run.pk} is {run.status}, not queued: not run again")
    run = calibration.run_calibration(run.pk)
    run.revision.refresh_from_db()
    return {
        "calibration": run.pk,
        "status": run.status,
        "admitted": run.revision.status == "admitted",
        "calls": run.calls,
        "cost_usd": run.cost_usd,
    }


def _check_evidence(job: Job) -> dict[str, Any]:
    if job.repository is None:
        raise EvidenceCheckError("the repository of this job is gone")
    report = check_evidence(job.repository)
    return {
        "head": report.head,
        "open": len(report.changes),
        "new": report.new,
        "changes": [
            {
                "task": c.revision.task.task_id,
                "revision": c.revision.number,
                "item": c.item.item_id,
                "cite": f"{c.path}:{c.line_start}-{c.line_end}",
                "old": c.old_text,
                "new": None if c.new_missing else c.new_text,
            }
            for c in report.changes
        ],
        "notes": report.notes,
    }


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def calibrate_revision(job_id: int) -> None:
    """Judge a revision's admission rows (§5) with the repository's judges, storing each row as it finishes;
    admit the revision when it passes and the run was started by "Admit"."""
    _run(job_id, _calibrate)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def check_repository_evidence(job_id: int) -> None:
    """Compare every admitted blocker's cited lines at the base commit with the checkout's HEAD (§6)."""
    _run(job_id, _check_evidence)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def draft_rubric_job(job_id: int) -> None:
    """Draft a task's rubric from its merged PR (§6) and store it as a draft revision with its problems."""
    _run(job_id, run_draft)


@app.task(ignore_result=True)
def check_evidence_everywhere() -> None:
    """The periodic job (Celery beat, RUNS_EVIDENCE_CHECK_HOURS): one evidence check per repository that has
    a checkout path."""
    from rubrics_app.services.jobs import start_evidence_check

    for repository in Repository.objects.exclude(checkout_path=""):
        start_evidence_check(repository, by=Actor.command_line())


def _sweep(job: Job) -> dict[str, Any]:
    # A job the reaper queued again (its worker was lost) runs the same sweep: the Job claim is the lock,
    # and the runs graded before are skipped.
    return run_sweep(job.sweep.pk).result()


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def sweep_runs(job_id: int) -> None:
    """Grade the runs of a sweep with the repository's judges, storing each run's grade as it is done."""
    _run(job_id, _sweep)


# The task that runs each kind of job: what the reaper sends again for a job whose worker was lost.
TASK_OF_KIND: dict[str, DjangoTask[Any, Any]] = {
    JobKind.VALIDATE_REVISION: validate_revision,
    JobKind.EXPORT_REVISION: export_revision_to_checkout,
    JobKind.CHECK_EVIDENCE: check_repository_evidence,
    JobKind.CALIBRATE_REVISION: calibrate_revision,
    JobKind.SWEEP: sweep_runs,
    JobKind.DRAFT_RUBRIC: draft_rubric_job,
}


@dataclass
class Reaped:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def lost_jobs(now: datetime | None = None) -> list[Job]:
    """Running jobs whose worker stopped beating: none for JOB_LOST_AFTER_SECONDS."""
    before = (now or timezone.now()) - timedelta(seconds=settings.JOB_LOST_AFTER_SECONDS)
    stale = Q(heartbeat_at__lt=before) | Q(heartbeat_at__isnull=True, started_at__lt=before)
    return list(Job.objects.filter(stale, status=JobStatus.RUNNING).order_by("pk"))


def reap(now: datetime | None = None) -> Reaped:
    """Re-queue each lost job, or fail it with "worker lost" once it has had JOB_MAX_ATTEMPTS claims."""
    now = now or timezone.now()
    reaped = Reaped()
    for job in lost_jobs(now):
        task = TASK_OF_KIND.get(job.kind)
        # Conditional on the heartbeat read: a worker that beats meanwhile is alive and keeps its job.
        still_lost = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, heartbeat_at=job.heartbeat_at)
        with transaction.atomic():
            if task is not None and job.attempts < settings.JOB_MAX_ATTEMPTS:
                if still_lost.update(status=JobStatus.QUEUED, started_at=None, heartbeat_at=None, progress=0):
                    task.delay_on_commit(job.pk)
                    reaped.requeued.append(job.pk)
                    log.warning("job %s: worker lost; queued again (attempt %s)", job.pk, job.attempts + 1)
                continue
            error = (
                f"worker lost: no heartbeat for {settings.JOB_LOST_AFTER_SECONDS} s "
                f"(claimed {job.attempts} time{'s' if job.attempts != 1 else ''})"
            )
            if still_lost.update(status=JobStatus.FAILED, error=error, progress=100, finished_at=now):
                reaped.failed.append(job.pk)
                log.warning("job %s: %s", job.pk, error)
    return reaped


@app.task(ignore_result=True)
def reap_lost_jobs() -> None:
    """What each worker's reaper thread does, as a job (``manage.py reap_jobs`` sends it)."""
    reap()


class _Reaper(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="job-reaper", daemon=True)
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while True:
                try:
                    reap()
                except Exception:
                    log.warning(
                        "job reaper: this round failed; next in %ss",
                        settings.JOB_REAP_EVERY_SECONDS,
                        exc_info=True,
                    )
                if self.stopped.wait(settings.JOB_REAP_EVERY_SECONDS):
                    return
        finally:
            connections.close_all()  # this thread's own connections


_reaper: _Reaper | None = None


@worker_ready.connect
def _start_reaper(**kwargs: Any) -> None:
    global _reaper
    _reaper = _Reaper()
    _reaper.start()


@worker_shutdown.connect
def _stop_reaper(**kwargs: Any) -> None:
    if _reaper is not None:
        _reaper.stopped.set()
        _reaper.join(timeout=10)
