"""The Django admin: read-mostly. Revisions, items and calibration diffs are changed through the app's pages
(which go through the services); here they are shown read-only so the admin cannot bypass their rules."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from rubrics_app.models import (
    AuditEvent,
    CalibrationDiff,
    ItemComment,
    Job,
    Membership,
    Repository,
    RubricItem,
    RubricRevision,
    Task,
)

# Admin classes are generic only to the type checker (django-stubs); at runtime they take no parameters.


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = Membership
    extra = 1


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["name", "checkout_path", "private_path"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["task_id", "repository", "base_commit", "base_date"]
    list_filter = ["repository"]
    search_fields = ["task_id"]

    # The database refuses these changes (migration 0006): show them read-only rather than fail on save.
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is not None and obj.holds_frozen_revision():
            return Task.FROZEN_FIELDS
        return ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.holds_frozen_revision():
            return False
        return super().has_delete_permission(request, obj)


class ReadOnlyAdmin[M: Any](admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RubricItemInline(admin.TabularInline):  # type: ignore[type-arg]
    model = RubricItem
    fields = readonly_fields = (
        "kind",
        "item_id",
        "criterion",
        "review_state",
        "reviewed_by",
        "reviewed_at",
        "version",
    )
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RubricRevision)
class RubricRevisionAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["task", "number", "status", "origin", "drafted_by", "drafted_by_model", "created_at"]
    list_filter = ["status", "origin", "task__repository"]
    search_fields = ["task__task_id"]
    inlines = [RubricItemInline]


@admin.register(CalibrationDiff)
class CalibrationDiffAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["revision", "kind", "path"]
    exclude = ["content"]


@admin.register(ItemComment)
class ItemCommentAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ["item", "author", "created_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["at", "actor", "actor_label", "verb", "object_repr"]
    list_filter = ["verb", "repository"]


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["pk", "kind", "status", "revision", "created_by", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
