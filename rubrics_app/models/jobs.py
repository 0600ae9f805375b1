"""Jobs: the rows the pages poll while a Celery worker runs them (the protocol: services/jobs.py), and the
typed result each kind of job stores.

``Job.result`` is a JSON column; what goes in is one of the result models below, by the job's kind
(``RESULT_MODELS``), written by the worker with ``model_dump`` and read back with ``Job.result_as`` (or
``Job.typed_result``, the model of the job's own kind). The views hand the templates those models, never
the JSON dict.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pydantic import BaseModel, ConfigDict

from rubrics_app.models.repositories import Repository
from rubrics_app.models.rubrics import RubricRevision


class JobKind(models.TextChoices):
    # Retired: nothing starts it and it has no task (services/jobs.py). Kept so that the rows an older
    # version wrote keep their label and their ValidationResult reads; dropping the choice would need a
    # migration for nothing the database checks.
    VALIDATE_REVISION = "validate_revision", "Validate a revision"
    EXPORT_REVISION = "export_revision", "Export a revision to the checkout"
    CHECK_EVIDENCE = "check_evidence", "Check blockers' cited code against the checkout"
    CALIBRATE_REVISION = "calibrate_revision", "Calibrate a revision against its admission rows"
    SWEEP = "sweep", "Sweep: grade agent runs with the judges"
    DRAFT_RUBRIC = "draft_rubric", "Draft a rubric from the merged PR"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JobResult(BaseModel):
    """What a finished job stores in ``Job.result``; one subclass per kind of job."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FieldProblem(JobResult):
    """One validation problem (``FieldError``): a JSON path, and the row and field a form shows it beside."""

    path: str
    message: str
    field: str | None
    item_pk: int | None = None
    diff_pk: int | None = None


class ValidationResult(JobResult):
    valid: bool
    errors: list[FieldProblem] = []


class ExportResult(JobResult):
    root: str
    paths: list[str]
    branch: str | None
    commit: str | None
    # Sent as a pull request: the remote the branch was pushed to, the pull request opened (GitHub only),
    # and what the maintainer is told besides (a plain git remote gets no pull request).
    remote: str | None = None
    pull_request_number: int | None = None
    pull_request_url: str | None = None
    note: str = ""


class EvidenceChangeLine(JobResult):
    """A blocker whose cited lines changed between the base commit and HEAD; ``new`` is None when the file is
    gone at HEAD."""

    task: str
    revision: int
    item: str
    cite: str
    old: str
    new: str | None


class EvidenceCheckResult(JobResult):
    head: str
    open: int  # open evidence changes at this HEAD
    new: int  # of which first found by this check
    changes: list[EvidenceChangeLine]
    notes: list[str]  # cites that could not be compared, and why


class CalibrationResult(JobResult):
    calibration: int
    status: str
    admitted: bool
    calls: int
    cost_usd: float


class SweepResult(JobResult):
    sweep: int
    total: int
    graded: int
    already_graded: int
    judge_failures: int
    no_revision: int
    calls: int
    cost_usd: float
    provisional: bool
    problems: list[str]  # runs that could not be graded (bad input)


class DraftResult(JobResult):
    draft: int
    revision: int
    revision_number: int
    model_id: str
    problems: int
    cost_usd: float
    cost_known: bool


RESULT_MODELS: dict[str, type[JobResult]] = {
    JobKind.VALIDATE_REVISION: ValidationResult,
    JobKind.EXPORT_REVISION: ExportResult,
    JobKind.CHECK_EVIDENCE: EvidenceCheckResult,
    JobKind.CALIBRATE_REVISION: CalibrationResult,
    JobKind.SWEEP: SweepResult,
    JobKind.DRAFT_RUBRIC: DraftResult,
}

R = TypeVar("R", bound=JobResult)


def result_json(kind: str, result: JobResult) -> dict[str, Any]:
    """What ``Job.result`` stores for ``result``, which must be the model of ``kind``."""
    if RESULT_MODELS.get(kind) is not type(result):
        raise TypeError(f"a {kind} job's result is not a {type(result).__name__}")
    return result.model_dump(mode="json")


class Job(models.Model):
    """A Celery job the pages poll. The worker claims it with a conditional QUEUED -> RUNNING update."""

    kind = models.CharField(max_length=40, choices=JobKind.choices)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    revision = models.ForeignKey(
        RubricRevision, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    params = models.JSONField(default=dict, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The worker running the job touches this every JOB_HEARTBEAT_SECONDS; a running job whose heartbeat is
    # older than JOB_LOST_AFTER_SECONDS lost its worker, and the reaper (tasks.reap_lost_jobs) re-queues it
    # or, after JOB_MAX_ATTEMPTS claims, fails it with "worker lost".
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)  # claims by a worker
    # When its message was last handed to the broker (services.jobs.send); None until then. The reaper sends
    # again a queued job that no worker claimed within JOB_QUEUED_LOST_AFTER_SECONDS of this.
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The worker's claim and the pages' "jobs still running" both filter on status.
            models.Index(
                fields=["status"], name="job_status_idx", condition=Q(status__in=["queued", "running"])
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (JobStatus.DONE, JobStatus.FAILED)

    def result_as(self, model: type[R]) -> R | None:
        """The stored result read through its model (None while the job has none); ``model`` must be the one
        of this job's kind."""
        if RESULT_MODELS.get(self.kind) is not model:
            raise TypeError(f"a {self.kind} job's result is not a {model.__name__}")
        return None if self.result is None else model.model_validate(self.result)

    def typed_result(self) -> JobResult | None:
        """The stored result read through the model of this job's kind (None while the job has none): what
        the pages show, by field, so a renamed field fails where it is read, not as a blank."""
        return None if self.result is None else RESULT_MODELS[self.kind].model_validate(self.result)


class JobFile(models.Model):
    """A file a job made for download (a sweep's export of its runs): owned by the job and deleted with it,
    served by the job page to whoever may see the job. Kept in the database, so the worker that writes it
    and the server that serves it share no folder."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=200)  # the download's file name
    content_type = models.CharField(max_length=100)
    data = models.BinaryField()
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="job_file_name_unique")]

    def __str__(self) -> str:
        return f"{self.name} of job #{self.job_id}"
