"""The Django admin: read-mostly. Revisions, items and calibration diffs are changed through the app's pages
(which go through the services); here they are shown read-only so the admin cannot bypass their rules. So are
the rows the jobs and pages write (runs and grades, calibrations, drafts, sweeps, settings, disputes): they
carry provenance and frozen rules that only the services keep.

Lists never load the big columns (diffs, PR exports, request bodies, metrics, the report's JSON texts): each
read-only admin names them in ``list_defer`` (not read for a list) or ``never_load`` (not read at all, nor
shown: binary diffs, which the app's diff views render)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from rubrics_app.models import (
    AgentRun,
    AuditEvent,
    CalibrationDiff,
    CalibrationMutant,
    CalibrationRun,
    Dispute,
    DraftSetting,
    EvidenceChange,
    HarmlessMutant,
    HumanVerdict,
    ItemComment,
    Job,
    JudgeSetting,
    Membership,
    RemoteSetting,
    ReportRow,
    Repository,
    RubricDraft,
    RubricItem,
    RubricRevision,
    RunGrade,
    Sweep,
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
    """Shown, never added, changed or deleted here: the app's pages and services are the only writers."""

    # Columns not read for the list (related ones as "relation__field"); read on the change page.
    list_defer: tuple[str, ...] = ()
    # Columns never read nor shown (binary diffs): excluded from the change page too.
    never_load: tuple[str, ...] = ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        deferred = self.never_load
        match = request.resolver_match
        if match is not None and (match.url_name or "").endswith("_changelist"):
            deferred += self.list_defer
        return queryset.defer(*deferred) if deferred else queryset

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        return [*(super().get_exclude(request, obj) or ()), *self.never_load]

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
    list_select_related = ["revision__task"]
    never_load = ("content",)


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


# --- settings -----------------------------------------------------------------------------------------------


@admin.register(JudgeSetting)
class JudgeSettingAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["repository", "judge", "second_judge", "monthly_cap_usd", "updated_by", "updated_at"]
    list_select_related = ["repository", "updated_by"]


@admin.register(RemoteSetting)
class RemoteSettingAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["repository", "remote", "token_env", "base_branch", "updated_by", "updated_at"]
    list_select_related = ["repository", "updated_by"]


@admin.register(DraftSetting)
class DraftSettingAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "repository",
        "drafter",
        "github_repository",
        "use_token",
        "token_env",
        "updated_by",
        "updated_at",
    ]
    list_select_related = ["repository", "updated_by"]


# --- drafting and calibration -------------------------------------------------------------------------------


@admin.register(RubricDraft)
class RubricDraftAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "pk",
        "task",
        "source_label",
        "drafter",
        "step",
        "revision",
        "cost_usd",
        "created_by",
        "created_at",
    ]
    list_filter = ["step", "task__repository"]
    search_fields = ["task__task_id", "model_id"]
    list_select_related = ["task", "revision__task", "created_by"]
    # The PR thread and the drafter's whole request: the app's drafting-input page shows them to maintainers.
    list_defer = ("guidance_globs", "alt_description", "problems")
    never_load = ("pr_export", "request_body")


@admin.register(CalibrationRun)
class CalibrationRunAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "pk",
        "revision",
        "status",
        "judge",
        "second_judge",
        "scripted",
        "injection_suite",
        "with_mutants",
        "total_rows",
        "calls",
        "cost_usd",
        "created_at",
    ]
    list_filter = ["status", "scripted", "injection_suite", "revision__task__repository"]
    list_select_related = ["revision__task"]
    list_defer = ("reason", "agreement", "mutants_note", "model_ids", "second_model_ids")


@admin.register(CalibrationMutant)
class CalibrationMutantAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["mutant_id", "run", "kind", "mergeable", "caught", "calls", "cost_usd"]
    list_filter = ["kind", "caught"]
    list_select_related = ["run__revision__task"]
    list_defer = ("description", "verdicts", "actual", "run__reason", "run__agreement")
    never_load = ("diff",)


@admin.register(HarmlessMutant)
class HarmlessMutantAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["mutant_id", "task", "rubric_sha256", "marked_by", "marked_at"]
    list_filter = ["task__repository"]
    list_select_related = ["task", "marked_by"]


# --- agent runs, grades and the report ----------------------------------------------------------------------

# AgentRun's columns a list of anything that shows a run does not read. Its workspace.diff is AgentRunDiff,
# another table, which none of these admins joins.
RUN_BLOBS = ("run_json", "grade_json", "ignored_created", "tests_list", "tests_list_error", "files_sha256")
GRADE_BLOBS = ("metrics", "reasons")


def _under(relation: str, fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{relation}__{field}" for field in fields)


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["pk", "task", "arm", "model", "repetition", "passed", "diff_bytes", "imported_at"]
    list_filter = ["task__repository", "passed", "arm", "model"]
    search_fields = ["task__task_id", "arm", "model"]
    list_select_related = ["task"]
    list_defer = RUN_BLOBS


@admin.register(RunGrade)
class RunGradeAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "pk",
        "run",
        "source",
        "status",
        "mergeable",
        "merge_score",
        "primary_judge",
        "revision",
        "provisional",
        "created_at",
    ]
    list_filter = ["source", "status", "provisional", "run__task__repository"]
    list_select_related = ["run__task", "revision__task"]
    list_defer = GRADE_BLOBS + _under("run", RUN_BLOBS)


@admin.register(HumanVerdict)
class HumanVerdictAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["run", "item_id", "verdict", "adjudicated", "queue", "by", "at"]
    list_filter = ["verdict", "queue", "adjudicated"]
    list_select_related = ["run__task", "by"]
    list_defer = _under("run", RUN_BLOBS)


@admin.register(ReportRow)
class ReportRowAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "name",
        "task",
        "arm",
        "model",
        "status",
        "mergeable",
        "merge_score",
        "latest",
        "provisional",
    ]
    list_filter = ["repository", "latest", "status"]
    search_fields = ["name"]
    list_select_related = ["task"]
    list_defer = ("metrics", "human_items")


@admin.register(Sweep)
class SweepAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "pk",
        "repository",
        "scope_label",
        "job",
        "judge",
        "provisional",
        "done_runs",
        "total_runs",
        "graded_runs",
        "judge_failures",
        "cost_usd",
        "created_at",
    ]
    list_filter = ["repository", "provisional"]
    list_select_related = ["repository", "task", "job"]
    list_defer = ("job__params", "job__result", "job__error")


# --- re-review flags ----------------------------------------------------------------------------------------


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = ["pk", "item", "revision", "source", "opened_by", "opened_at", "dismissed_at"]
    list_filter = ["source", "revision__task__repository"]
    list_select_related = ["item", "revision__task", "opened_by"]
    list_defer = ("reason", "dismissal_reason", "item__criterion", "item__rationale", "item__evidence")


@admin.register(EvidenceChange)
class EvidenceChangeAdmin(ReadOnlyAdmin):  # type: ignore[type-arg]
    list_display = [
        "item",
        "revision",
        "path",
        "line_start",
        "line_end",
        "head_commit",
        "new_missing",
        "detected_at",
        "dismissed_at",
    ]
    list_filter = ["new_missing", "revision__task__repository"]
    list_select_related = ["item", "revision__task"]
    list_defer = ("old_text", "new_text", "dismissal_reason", "item__criterion", "item__rationale")
