"""The job protocol, and nothing else: claiming a Job, its heartbeat, finishing it, and reaping jobs whose
worker was lost. It imports no service; each service defines the Celery task of its own kind of job
(``@job_task(JobKind.X)``), with the body that does the work.

A job's task takes the Job id, claims the row with a conditional QUEUED -> RUNNING update (so a redelivered
message never runs a job twice), runs the body, and stores the body's typed result (``models.jobs``) or its
error on the row the pages poll. Services send a task with ``delay_on_commit``, once the Job row is
committed.

While a job runs, a thread of the worker touches its heartbeat. Every worker runs the reaper in a thread of
its own (started when the worker is ready): it queues again a running job whose heartbeat stopped, or fails
it with "worker lost" after JOB_MAX_ATTEMPTS claims. ``reap_lost_jobs`` is the same as a task anyone may send
(``manage.py reap_jobs``). The reaper finds the task of a job's kind in the Celery registry by its name
(``TASK_NAMES``), so it needs no import of the service that defines it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from celery.contrib.django.task import DjangoTask
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from rubrics_app.celery import app
from rubrics_app.models import (
    CalibrationRun,
    Job,
    JobKind,
    JobResult,
    JobStatus,
    RubricRevision,
    TransitionError,
    result_json,
)

log = logging.getLogger(__name__)

# The Celery name of each kind of job's task. The names are those the tasks had when they all lived in
# rubrics_app/tasks.py: queued messages and workers of the old layout keep finding them.
TASK_NAMES: dict[str, str] = {
    JobKind.VALIDATE_REVISION: "rubrics_app.tasks.validate_revision",
    JobKind.EXPORT_REVISION: "rubrics_app.tasks.export_revision_to_checkout",
    JobKind.CHECK_EVIDENCE: "rubrics_app.tasks.check_repository_evidence",
    JobKind.CALIBRATE_REVISION: "rubrics_app.tasks.calibrate_revision",
    JobKind.SWEEP: "rubrics_app.tasks.sweep_runs",
    JobKind.DRAFT_RUBRIC: "rubrics_app.tasks.draft_rubric_job",
}


class JobFailed(Exception):
    """A failure a maintainer can act on: the job fails with this message, shown as is. Each service's own
    errors derive from it; anything else a job raises is a bug, logged as an internal error."""


# Failures from the models and Django that a maintainer can act on as well.
EXPECTED_FAILURES: tuple[type[Exception], ...] = (
    JobFailed,
    TransitionError,
    PermissionDenied,
    RubricRevision.DoesNotExist,
    CalibrationRun.DoesNotExist,
)

JobBody = Callable[[Job], JobResult]


def job_task(kind: JobKind) -> Callable[[Callable[[int], None]], DjangoTask[[int], None]]:
    """The Celery task decorator for ``kind``'s task: its stable name, acknowledged late and rejected when
    its worker is lost (the reaper then queues the job again)."""
    return app.task(name=TASK_NAMES[kind], acks_late=True, reject_on_worker_lost=True, ignore_result=True)


def task_of(kind: str) -> DjangoTask[[int], None] | None:
    """The registered task of ``kind``; importing the task modules (celery.TASK_MODULES) first if this
    process has not imported it yet."""
    name = TASK_NAMES.get(kind)
    if name is None:
        return None
    if name not in app.tasks:
        app.loader.import_default_modules()
    return cast("DjangoTask[[int], None] | None", app.tasks.get(name))


def claim(job_id: int) -> Job | None:
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


def run(job_id: int, body: JobBody) -> None:
    """What every job's task does: claim the job, beat while ``body`` runs, store its result or error."""
    job = claim(job_id)
    if job is None:
        log.info("job %s was not queued (already taken or gone); skipping", job_id)
        return
    heartbeat = _Heartbeat(job)
    heartbeat.start()
    try:
        result = body(job)
    except EXPECTED_FAILURES as exc:
        finish(job, JobStatus.FAILED, error=str(exc))
    except Exception as exc:
        log.exception("job %s failed", job_id)
        finish(job, JobStatus.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")
        raise
    else:
        finish(job, JobStatus.DONE, result=result)
    finally:
        heartbeat.stop()


def finish(job: Job, status: JobStatus, *, result: JobResult | None = None, error: str = "") -> None:
    # Only this claim's run: a run the reaper took for lost (and queued again) does not overwrite the next.
    stored = None if result is None else result_json(job.kind, result)
    Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts).update(
        status=status, result=stored, error=error, progress=100, finished_at=timezone.now()
    )


# --- the reaper ---------------------------------------------------------------------------------------------


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
        task = task_of(job.kind)
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


@app.task(name="rubrics_app.tasks.reap_lost_jobs", ignore_result=True)
def reap_lost_jobs() -> None:
    """What each worker's reaper thread does, as a task (``manage.py reap_jobs`` sends it)."""
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
