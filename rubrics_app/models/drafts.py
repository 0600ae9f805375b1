"""Drafting a rubric from a merged PR: where each drafting job got to and what it made."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from rubrics_app.models.jobs import Job
from rubrics_app.models.rubrics import RubricRevision, Task


class DraftStep(models.TextChoices):
    """Where a drafting job is; a failure names the step it stopped at."""

    QUEUED = "queued", "queued"
    FETCHING = "fetching", "fetching the PR"
    READING = "reading", "reading the base commit"
    DRAFTING = "drafting", "drafting"
    CHECKING = "checking", "checking the draft"
    STORING = "storing", "storing the draft"
    DONE = "done", "done"


class RubricDraft(models.Model):
    """One drafting of a task's rubric from a merged PR: what it was asked, where it got to, what it cost,
    and the draft revision it made (kept with its problems, whatever the checks found). Written by the job
    only; once it has its revision it is provenance and is not changed again."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="rubric_drafts")
    job = models.OneToOneField(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="draft")
    revision = models.OneToOneField(
        RubricRevision, on_delete=models.SET_NULL, null=True, blank=True, related_name="draft_record"
    )
    # The source: a PR number read from github_repository, or an uploaded export (the JSON text as given).
    github_repository = models.CharField(max_length=200, blank=True)
    pr_number = models.PositiveIntegerField(null=True, blank=True)
    pr_export = models.TextField(blank=True)
    pr_export_name = models.CharField(max_length=300, blank=True)
    # sha256 of the export's bytes: a request with the same export joins this drafting while it runs.
    pr_export_sha256 = models.CharField(max_length=64, blank=True)
    use_token = models.BooleanField(default=False)
    token_env = models.CharField(max_length=100, blank=True)
    guidance_globs = models.JSONField(default=list, blank=True)
    drafter = models.CharField(max_length=500)  # the spec asked for
    step = models.CharField(max_length=20, choices=DraftStep.choices, default=DraftStep.QUEUED)
    error = models.TextField(blank=True)  # "<step>: why", when it failed
    # Provenance, once drafted.
    model_id = models.CharField(max_length=200, blank=True)  # as the API reported it
    input_sha256 = models.CharField(max_length=64, blank=True)
    request_body = models.TextField(blank=True)  # the exact Messages API request body (JSON)
    alt_description = models.TextField(blank=True)
    problems = models.JSONField(default=list, blank=True)  # what the checks found, never fixed silently
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    cost_known = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    drafted_at = models.DateTimeField(null=True, blank=True)  # when the model's reply came back
    seconds = models.FloatField(null=True, blank=True)  # the drafting call's duration

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"drafting #{self.pk} of {self.task}"

    @property
    def scripted(self) -> bool:
        """A scripted drafter (a stand-in for demos and tests), labelled so wherever the draft shows."""
        return self.drafter.startswith("scripted:")

    @property
    def source_name(self) -> str:
        """The source as a sentence names it: OWNER/NAME#N, or the uploaded export's file name."""
        if self.pr_number is not None:
            return self.source_label
        return self.pr_export_name or "an uploaded export"

    @property
    def source_label(self) -> str:
        if self.pr_number is not None:
            return f"{self.github_repository}#{self.pr_number}"
        return f"export {self.pr_export_name or '(upload)'}"
