"""The audit trail: who did what to which revision or item, appended and never changed."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from rubrics_app.models.repositories import Repository
from rubrics_app.models.rubrics import RubricItem, RubricRevision


class AuditVerb(models.TextChoices):
    DRAFTED = "drafted", "drafted"
    EDITED = "edited", "edited"
    ITEM_APPROVED = "item_approved", "approved an item of"
    CHANGES_REQUESTED = "changes_requested", "requested changes on"
    COMMENTED = "commented", "commented on"
    APPROVED = "approved", "approved"
    ADMITTED = "admitted", "admitted"
    EXPORTED = "exported", "exported"
    IMPORTED = "imported", "imported"
    # Reviewed in the repository itself (merged through its own PR review) and imported as approved.
    IMPORTED_APPROVED = "imported_approved", "imported as approved"
    CALIBRATED = "calibrated", "calibrated"
    RETIRED = "retired", "retired"
    JUDGES_SET = "judges_set", "set the judges of"
    TASK_FILES_EDITED = "task_files_edited", "edited the task files of"
    DRAFT_SETTINGS_SET = "draft_settings_set", "set how rubrics are drafted in"
    REMOTE_SET = "remote_set", "set the remote of"
    MUTANT_HARMLESS = "mutant_harmless", "marked a mutant harmless for"
    MUTANT_UNMARKED = "mutant_unmarked", "took back a harmless mark for"


class AuditEvent(models.Model):
    """Who drafted, edited, commented on, approved, admitted, exported or imported what, and when.
    Append-only."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Kept when the drafting model, not a person, acted (actor is then null).
    actor_label = models.CharField(max_length=200, blank=True)
    verb = models.CharField(max_length=30, choices=AuditVerb.choices)
    repository = models.ForeignKey(
        Repository, on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_events"
    )
    revision = models.ForeignKey(
        RubricRevision, on_delete=models.SET_NULL, null=True, blank=True, related_name="audit_events"
    )
    item = models.ForeignKey(RubricItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    object_repr = models.CharField(max_length=300)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self) -> str:
        who = self.actor or self.actor_label or "system"
        return f"{who} {self.get_verb_display()} {self.object_repr}"

    @property
    def item_label(self) -> str:
        """The id of the item acted on ("" for a revision-level event), also once it left its draft."""
        if self.item is not None:
            return self.item.item_id
        return str((self.detail or {}).get("item_id") or "")
