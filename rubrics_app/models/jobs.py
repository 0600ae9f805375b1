"""Jobs: the rows the pages poll while a Celery worker runs them (the protocol: services/jobs.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from rubrics_app.models.repositories import Repository
from rubrics_app.models.rubrics import RubricRevision


class JobKind(models.TextChoices):
    VALIDATE_REVISION = "validate_revision", "Validate a revision"
    EXPORT_REVISION = "export_revision", "Export a revision to the checkout"
    CHECK_EVIDENCE = "check_evidence", "Check blockers' cited code against the checkout"
    CALIBRATE_REVISION = "calibrate_revision", "Calibrate a revision (§5 admission rows)"
    SWEEP = "sweep", "Sweep: grade agent runs with the judges"
    DRAFT_RUBRIC = "draft_rubric", "Draft a rubric from the merged PR (§6)"


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


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
