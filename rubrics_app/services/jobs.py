"""The job protocol, and nothing else: claiming a Job, its heartbeat, finishing it, and reaping jobs whose
worker was lost. It imports no service; each service defines the Celery task of its own kind of job
(``@job_task(JobKind.X)``), with the body that does the work.

A job's task takes the Job id, claims the row with a conditional QUEUED -> RUNNING update (so a redelivered
message never runs a job twice), runs the body, and stores the body's typed result (``models.jobs``) or its
error on the row the pages poll. Services send a job with :func:`send`, once the Job row is committed; a job
whose message the broker did not take is failed there and then ("the job queue was unreachable"), and the
caller gets :class:`QueueUnreachable`, so no job waits for a message that was never sent.

While a job runs, a thread of the worker touches its heartbeat. Every worker runs the reaper in a thread of
its own (started when the worker is ready): it queues again a running job whose heartbeat stopped, or fails
it with "worker lost" after JOB_MAX_ATTEMPTS claims; and it sends again a queued job that no worker claimed
within JOB_QUEUED_LOST_AFTER_SECONDS of its sending. ``reap_lost_jobs`` is the same as a task anyone may send
(``manage.py reap_jobs``). The reaper finds the task of a job's kind in the Celery registry by its name
(``TASK_NAMES``), so it needs no import of the service that defines it.

Every change of a job's status is made here. A service whose job kind keeps rows of its own beside the Job
(a calibration run) names, in ``job_task(kind, on_failed=...)``, what becomes of them when the job fails; this
module calls it in the same transaction as the update that fails the job, wherever that happens (the body
raised, the message could not be sent, the reaper gave up on it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from celery.app.task import Task as CeleryTask
from celery.contrib.django.task import DjangoTask
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connections, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

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
# validate_revision has none: nothing sent it, so its task was removed; the reaper fails a job of it that an
# older version left queued or running ("no task for validate_revision jobs").
TASK_NAMES: dict[str, str] = {
    JobKind.EXPORT_REVISION: "rubrics_app.tasks.export_revision_to_checkout",
    JobKind.CHECK_EVIDENCE: "rubrics_app.tasks.check_repository_evidence",
    JobKind.CALIBRATE_REVISION: "rubrics_app.tasks.calibrate_revision",
    JobKind.SWEEP: "rubrics_app.tasks.sweep_runs",
    JobKind.DRAFT_RUBRIC: "rubrics_app.tasks.draft_rubric_job",
}


class JobFailed(Exception):
    """A failure a maintainer can act on: the job fails with this message, shown as is. Each service's own
    errors derive from it; anything else a job raises is a bug, logged as an internal error."""


class QueueUnreachable(JobFailed):
    """The broker did not take a job's message: the job is failed, nothing was started. Raised to whoever
    committed the transaction that sent it, once committed. ``reason``: the broker's error, for the command
    line (the pages do not show the broker's address)."""

    def __init__(self, job_id: int | None, reason: str) -> None:
        super().__init__("the job queue is unreachable; nothing was started")
        self.job_id = job_id
        self.reason = reason

    @property
    def detail(self) -> str:
        return f"the job queue is unreachable ({self.reason}); nothing was started"


# What a job that could not be sent ends with.
UNSENT_ERROR = "the job queue was unreachable: the job could not be sent; start it again"

# Failures from the models and Django that a maintainer can act on as well.
EXPECTED_FAILURES: tuple[type[Exception], ...] = (
    JobFailed,
    TransitionError,
    PermissionDenied,
    RubricRevision.DoesNotExist,
    CalibrationRun.DoesNotExist,
)

JobBody = Callable[[Job], JobResult]
# What a kind's own rows do when its job fails: called with the job's id and error, in the same transaction.
OnFailed = Callable[[int, str], None]

_ON_FAILED: dict[str, OnFailed] = {}


def job_task(
    kind: JobKind, *, on_failed: OnFailed | None = None
) -> Callable[[Callable[[int], None]], DjangoTask[[int], None]]:
    """The Celery task decorator for ``kind``'s task: its stable name, acknowledged late and rejected when
    its worker is lost (the reaper then queues the job again). ``on_failed``: what becomes of the kind's own
    rows when one of its jobs fails, in the same transaction."""
    if on_failed is not None:
        _ON_FAILED[kind] = on_failed
    return app.task(name=TASK_NAMES[kind], acks_late=True, reject_on_worker_lost=True, ignore_result=True)


def _fail(matching: QuerySet[Job], job_id: int, kind: str, error: str, now: datetime) -> bool:
    """Fail the job if ``matching`` (a conditional filter of it) still matches, and its kind's rows with it
    (the ``on_failed`` of its task, found as the reaper finds the task); whether it was failed."""
    task_of(kind)  # imports the task modules, and with them each kind's on_failed, if not imported yet
    with transaction.atomic():
        if not matching.update(status=JobStatus.FAILED, error=error, progress=100, finished_at=now):
            return False
        on_failed = _ON_FAILED.get(kind)
        if on_failed is not None:
            on_failed(job_id, error)
    return True


def task_of(kind: str) -> DjangoTask[[int], None] | None:
    """The registered task of ``kind``; importing the task modules (celery.TASK_MODULES) first if this
    process has not imported it yet."""
    name = TASK_NAMES.get(kind)
    if name is None:
        return None
    if name not in app.tasks:
        app.loader.import_default_modules()
    return cast("DjangoTask[[int], None] | None", app.tasks.get(name))


def publish(task: CeleryTask[Any, Any], *args: Any) -> None:
    """Hand ``task(*args)`` to the broker now, on a connection of its own to the broker configured now, with
    the bounded retries of CELERY_TASK_PUBLISH_RETRY_POLICY; QueueUnreachable (no job named) when it is
    not taken."""
    try:
        with app.connection_for_write() as connection:
            task.apply_async(args, connection=connection)  # type: ignore[call-arg]  # not in celery-types
    except BrokerUnreachable as exc:
        # Logged below warning: a command says it in its one line, and a page in its message.
        log.info("the broker did not take %s: %s", task.name, exc)
        raise QueueUnreachable(None, str(exc)) from exc


def send(task: CeleryTask[[int], None], job_id: int) -> None:
    """Send ``task(job_id)`` once the current transaction commits (at once outside one): the one way a job
    is sent. When the broker does not take the message, the job, still queued, is failed with
    UNSENT_ERROR, and QueueUnreachable is raised after the commit to the code that committed; what the
    transaction stored stays. Send last in a transaction: commit callbacks registered after this one do not
    run when it raises."""

    def publish_job() -> None:
        try:
            publish(task, job_id)
        except QueueUnreachable as exc:
            # A worker that got the message after all (a reply lost after the write) has claimed the job:
            # then it was sent.
            queued = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED)
            kind = queued.values_list("kind", flat=True).first()
            if kind is not None and _fail(queued, job_id, kind, UNSENT_ERROR, timezone.now()):
                raise QueueUnreachable(job_id, exc.reason) from None
        else:
            Job.objects.filter(pk=job_id).update(sent_at=timezone.now())

    transaction.on_commit(publish_job)


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
    this_claim = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts)
    if status == JobStatus.FAILED:
        _fail(this_claim, job.pk, job.kind, error, timezone.now())
        return
    stored = None if result is None else result_json(job.kind, result)
    this_claim.update(status=status, result=stored, error=error, progress=100, finished_at=timezone.now())


# --- the reaper ---------------------------------------------------------------------------------------------


@dataclass
class Reaped:
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    resent: list[int] = field(default_factory=list)


def lost_jobs(now: datetime | None = None) -> list[Job]:
    """Running jobs whose worker stopped beating: none for JOB_LOST_AFTER_SECONDS."""
    before = (now or timezone.now()) - timedelta(seconds=settings.JOB_LOST_AFTER_SECONDS)
    stale = Q(heartbeat_at__lt=before) | Q(heartbeat_at__isnull=True, started_at__lt=before)
    return list(Job.objects.filter(stale, status=JobStatus.RUNNING).order_by("pk"))


def unclaimed_jobs(now: datetime | None = None) -> list[Job]:
    """Queued jobs no worker claimed within JOB_QUEUED_LOST_AFTER_SECONDS of their sending (of their
    creation, for one never sent: its process died between the commit and the send)."""
    before = (now or timezone.now()) - timedelta(seconds=settings.JOB_QUEUED_LOST_AFTER_SECONDS)
    waiting = Q(sent_at__lt=before) | Q(sent_at__isnull=True, created_at__lt=before)
    return list(Job.objects.filter(waiting, status=JobStatus.QUEUED).order_by("pk"))


def reap(now: datetime | None = None) -> Reaped:
    """Re-queue each lost job, or fail it with "worker lost" once it has had JOB_MAX_ATTEMPTS claims; send
    each unclaimed queued job again. A job the broker does not take is failed (:func:`send`)."""
    now = now or timezone.now()
    reaped = Reaped()
    for job in lost_jobs(now):
        task = task_of(job.kind)
        # Conditional on the heartbeat read: a worker that beats meanwhile is alive and keeps its job.
        still_lost = Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, heartbeat_at=job.heartbeat_at)
        if task is not None and job.attempts < settings.JOB_MAX_ATTEMPTS:
            try:
                with transaction.atomic():
                    if still_lost.update(
                        status=JobStatus.QUEUED, started_at=None, heartbeat_at=None, progress=0, sent_at=now
                    ):
                        send(task, job.pk)
                        reaped.requeued.append(job.pk)
                        log.warning(
                            "job %s: worker lost; queued again (attempt %s)", job.pk, job.attempts + 1
                        )
            except QueueUnreachable:
                reaped.requeued.remove(job.pk)
                reaped.failed.append(job.pk)
            continue
        error = (
            f"worker lost: no heartbeat for {settings.JOB_LOST_AFTER_SECONDS} s "
            f"(claimed {job.attempts} time{'s' if job.attempts != 1 else ''})"
        )
        if _fail(still_lost, job.pk, job.kind, error, now):
            reaped.failed.append(job.pk)
            log.warning("job %s: %s", job.pk, error)
    for job in unclaimed_jobs(now):
        task = task_of(job.kind)
        # Conditional on the sending read: of several reapers, one sends it.
        still_unclaimed = Job.objects.filter(pk=job.pk, status=JobStatus.QUEUED, sent_at=job.sent_at)
        if task is None:
            if _fail(still_unclaimed, job.pk, job.kind, f"no task for {job.kind} jobs", now):
                reaped.failed.append(job.pk)
            continue
        try:
            with transaction.atomic():
                if still_unclaimed.update(sent_at=now):
                    send(task, job.pk)
                    reaped.resent.append(job.pk)
                    log.warning(
                        "job %s: queued and not claimed for %s s; sent again",
                        job.pk,
                        settings.JOB_QUEUED_LOST_AFTER_SECONDS,
                    )
        except QueueUnreachable:
            reaped.resent.remove(job.pk)
            reaped.failed.append(job.pk)
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
