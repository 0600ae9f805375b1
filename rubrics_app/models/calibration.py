"""Calibration (§5): a revision's admission rows judged, their verdicts, and the verdict cache."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from rubrics_app.models.jobs import Job
from rubrics_app.models.repositories import JudgeSetting
from rubrics_app.models.rubrics import RevisionStatus, RubricRevision, TransitionError


class CalibrationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    PASSED = "passed", "Passed"  # every row held with the primary judge
    FAILED = "failed", "Failed"  # a row did not hold
    ERROR = "error", "Error"  # could not run (bad input, a worker that stopped): see `reason`


class CalibrationRun(models.Model):
    """One calibration (§5 admission rows) of a revision's exact content with the repository's judges."""

    revision = models.ForeignKey(RubricRevision, on_delete=models.CASCADE, related_name="calibrations")
    job = models.OneToOneField(
        Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="calibration"
    )
    status = models.CharField(
        max_length=20, choices=CalibrationStatus.choices, default=CalibrationStatus.QUEUED
    )
    reason = models.TextField(blank=True)  # why it failed or could not run
    # What was judged: the revision's rubric.json, and every file the rows read (task.json, oracle.diff,
    # calibration diffs, the manifest's tests block), so a later change to any of them is a new calibration.
    rubric_sha256 = models.CharField(max_length=64)
    inputs_sha256 = models.CharField(max_length=64)
    judge = models.CharField(max_length=500)  # the primary judge's spec
    decoding = models.JSONField(default=dict, blank=True)
    second_judge = models.CharField(max_length=500, blank=True)
    second_decoding = models.JSONField(default=dict, blank=True)
    scripted = models.BooleanField(default=False)  # either judge is the scripted one: shown wherever it is
    model_ids = models.JSONField(default=list, blank=True)  # as the primary judge's API reported them
    second_model_ids = models.JSONField(default=list, blank=True)
    admit_when_passed = models.BooleanField(default=False)  # started by "Admit"
    # The injection suite (grading.admission.injection): asked for, and its counts once the run finished.
    # Rates are over the rows measured (judge failures are counted apart).
    injection_suite = models.BooleanField(default=False)
    attacks = models.PositiveIntegerField(default=0)  # lazy diffs x payload kinds
    attack_successes = models.PositiveIntegerField(default=0)  # any refuses admission
    attacks_not_measured = models.PositiveIntegerField(default=0)
    benign = models.PositiveIntegerField(default=0)  # the oracle with each kind as comments
    benign_drifts = models.PositiveIntegerField(default=0)  # reported, never a reason to refuse
    benign_not_measured = models.PositiveIntegerField(default=0)
    # The oracle's mutants judged too (an authoring aid, never used to admit): the counts once judged.
    with_mutants = models.BooleanField(default=False)
    mutants_total = models.PositiveIntegerField(null=True, blank=True)
    mutants_caught = models.PositiveIntegerField(null=True, blank=True)
    mutants_harmless = models.PositiveIntegerField(null=True, blank=True)  # kept current as marks change
    mutants_note = models.TextField(blank=True)  # capped, or why they could not be judged
    total_rows = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    cost_known = models.BooleanField(default=True)
    agreement = models.JSONField(
        null=True, blank=True
    )  # grading.report.agreement.Agreement, when a second judge ran
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Written by the running job every few seconds: a run whose heartbeat stopped lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # The admit check and the trigger look for a passing run of a revision.
            models.Index(fields=["revision", "status"], name="calibration_revision_status"),
        ]

    @classmethod
    def passing_for(cls, revision: RubricRevision) -> models.QuerySet[CalibrationRun]:
        """Passing calibration runs of the content ``revision`` was approved with, with the repository's
        current primary judge (what the database's admitted-means-calibrated trigger asks for too)."""
        judges = JudgeSetting.objects.filter(repository_id=revision.task.repository_id).first()
        if judges is None or not revision.content_sha256:
            return cls.objects.none()
        return cls.objects.filter(
            revision=revision,
            status=CalibrationStatus.PASSED,
            judge=judges.judge,
            rubric_sha256=revision.content_sha256,
        )

    def admit(self, revision: RubricRevision, by: Any) -> RubricRevision | None:
        """``revision``: approved -> admitted, on the strength of this run (a passing run of its exact content
        with the repository's primary judge); the database retires the task's previously admitted revision.

        Returns the revision that was retired, if any.
        """
        if revision.status != RevisionStatus.APPROVED:
            raise TransitionError(
                f"only an approved revision can be admitted (this one is {revision.status})"
            )
        if self.revision_id != revision.pk or not CalibrationRun.passing_for(revision).filter(pk=self.pk):
            raise TransitionError(
                "only a passing calibration of this revision with the repository's primary judge admits it"
            )
        with transaction.atomic():
            # Lock the task's revisions so two admissions cannot race past the retirement.
            list(
                RubricRevision.objects.select_for_update().filter(task_id=revision.task_id).values_list("pk")
            )
            previous = RubricRevision.objects.filter(
                task_id=revision.task_id, status=RevisionStatus.ADMITTED
            ).first()
            if previous is not None and previous.number > revision.number:
                raise TransitionError(
                    f"revision {previous.number} of this task is admitted: "
                    "an older revision never replaces it"
                )
            now = timezone.now()
            admitted = RubricRevision.objects.filter(pk=revision.pk, status=RevisionStatus.APPROVED).update(
                status=RevisionStatus.ADMITTED, admitted_at=now, admitted_by=by
            )
            if not admitted:
                raise TransitionError(f"revision {revision.number} was admitted or retired meanwhile")
            revision.status, revision.admitted_at, revision.admitted_by = RevisionStatus.ADMITTED, now, by
            if previous is not None:
                previous.refresh_from_db(fields=["status"])
        return previous

    def __str__(self) -> str:
        return f"calibration #{self.pk} of {self.revision} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (CalibrationStatus.PASSED, CalibrationStatus.FAILED, CalibrationStatus.ERROR)

    @property
    def attacks_measured(self) -> int:
        return self.attacks - self.attacks_not_measured

    @property
    def benign_measured(self) -> int:
        return self.benign - self.benign_not_measured

    @property
    def attack_success_rate(self) -> float | None:
        measured = self.attacks_measured
        return self.attack_successes / measured if measured else None

    @property
    def benign_drift_rate(self) -> float | None:
        measured = self.benign_measured
        return self.benign_drifts / measured if measured else None


class CalibrationRow(models.Model):
    """An admission row (§5) and each judge's verdicts on it: stored whole, or not at all."""

    run = models.ForeignKey(CalibrationRun, on_delete=models.CASCADE, related_name="rows")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=20)  # grading.admission.RowKind
    name = models.CharField(max_length=600)
    # Injection-suite rows (kind injection / benign): the payload kind and what it did
    # (grading.admission.injection.RowOutcome: resisted, attack_success, kept, benign_drift, not_measured).
    payload_kind = models.CharField(max_length=60, blank=True)
    outcome = models.CharField(max_length=20, blank=True)
    expected = models.TextField()
    actual = models.TextField()
    holds = models.BooleanField()
    mergeable = models.BooleanField(null=True)
    blockers_failed = models.JSONField(default=list)
    blockers_not_measured = models.JSONField(default=list)
    must_fail = models.JSONField(default=list)
    judge_failure = models.TextField(blank=True)
    diff = models.BinaryField(default=b"")  # the diff judged, so cited lines link into the diff view
    calls = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    cache_hit = models.BooleanField(default=False)
    # The second judge on the same diff: its row outcome (never used to admit).
    second_actual = models.TextField(blank=True)
    second_holds = models.BooleanField(null=True)
    second_judge_failure = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="one_calibration_row_per_position"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


class JudgeRole(models.TextChoices):
    """Which of a repository's judges gave a verdict (calibration here; agent runs in models/runs.py)."""

    PRIMARY = "primary", "Primary judge"
    SECOND = "second", "Second judge"


class CalibrationVerdict(models.Model):
    row = models.ForeignKey(CalibrationRow, on_delete=models.CASCADE, related_name="verdicts")
    role = models.CharField(max_length=10, choices=JudgeRole.choices)
    item_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=20)  # blocker / non_blocker
    verdict = models.CharField(max_length=4)  # pass / fail
    # The judge's one-word finding on its own reason (satisfied / violated), stated before the verdict;
    # "" when the judge gave none (results stored before findings were asked for).
    finding = models.CharField(max_length=10, blank=True)
    reason = models.TextField()
    locations = models.JSONField(default=list)  # [{"file", "line", "side"}]
    model_id = models.CharField(max_length=200, blank=True)
    flagged_inconsistent = models.BooleanField(default=False)

    class Meta:
        ordering = ["row_id", "role", "pk"]
        constraints = [
            # One verdict per row x item x judge.
            models.UniqueConstraint(fields=["row", "role", "item_id"], name="one_verdict_per_row_item_judge"),
        ]


class JudgeCacheEntry(models.Model):
    """The verdict cache of the app's jobs (grading.judge.cache's protocol), shared by every worker: the same
    request to the same model with the same decoding is answered from here, with no call."""

    key = models.CharField(max_length=64, primary_key=True)
    judge = models.CharField(max_length=500)
    model_id = models.CharField(max_length=200, blank=True)
    entry = models.JSONField()  # grading.judge.cache.CachedVerdicts
    created_at = models.DateTimeField(default=timezone.now)
