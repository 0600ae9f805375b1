"""Mutants of the oracle judged with a calibration, and the marks that call one harmless.

Mutants are an authoring aid (issue 14):
a calibration run may judge them beside its admission rows, and nothing here ever decides admission.

    CalibrationMutant  (run, position)                   one mutant, its diff, the primary judge's verdicts
    HarmlessMutant     (task, rubric_sha256, mutant_id)  a maintainer's "leaving this out is fine", and why
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from rubrics_app.models.calibration import CalibrationRun
from rubrics_app.models.rubrics import Task


class CalibrationMutant(models.Model):
    """A mutant of the oracle (grading.mutants) judged like an admission row by the primary judge."""

    run = models.ForeignKey(CalibrationRun, on_delete=models.CASCADE, related_name="mutants")
    position = models.PositiveIntegerField()
    mutant_id = models.CharField(
        max_length=40
    )  # grading.mutants.MUTANT_ID: kind and the diff's sha256 prefix
    kind = models.CharField(max_length=20)  # grading.mutants.kinds.MutantKind
    description = models.TextField()
    diff = models.BinaryField(default=b"")  # the mutant as judged, for the diff view
    mergeable = models.BooleanField(null=True)  # None on a judge failure
    caught = models.BooleanField()  # the rubric calls it not mergeable
    actual = models.TextField()
    blockers_failed = models.JSONField(default=list)
    judge_failure = models.TextField(blank=True)
    # The primary judge's verdicts: [{"item_id", "kind", "verdict", "finding", "reason", "locations"}].
    verdicts = models.JSONField(default=list)
    calls = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    cache_hit = models.BooleanField(default=False)

    class Meta:
        ordering = ["run_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="one_calibration_mutant_per_position"),
        ]

    def __str__(self) -> str:
        return f"{self.mutant_id} of calibration #{self.run_id}"

    def status(self, marked_harmless: bool) -> str:
        """``failure`` (the judge failed), ``caught`` (the rubric calls it not mergeable), ``harmless`` (still
        mergeable, and a maintainer marked it so) or ``mergeable`` (what the maintainer should look at)."""
        if self.judge_failure:
            return "failure"
        if self.caught:
            return "caught"
        return "harmless" if marked_harmless else "mergeable"


class HarmlessMutant(models.Model):
    """A maintainer's mark: the rubric may leave this mutant mergeable. Per revision content (the sha256 of
    its rubric.json) and mutant id, which names the mutant's exact diff, so a changed rubric or oracle
    starts unmarked."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="harmless_mutants")
    rubric_sha256 = models.CharField(max_length=64)
    mutant_id = models.CharField(max_length=40)
    reason = models.TextField()
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    marked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["task", "rubric_sha256", "mutant_id"], name="one_harmless_mark_per_content_and_mutant"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.mutant_id} harmless for {self.task} ({self.rubric_sha256[:12]})"
