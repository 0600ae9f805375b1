"""Tasks, rubric revisions, their items and calibration diffs, and their review.

An approved, admitted or retired revision is frozen. The code refuses to edit it
(``RubricRevision.is_frozen``), and so does the database: :mod:`rubrics_app.freeze` owns the rule and the
triggers on SQLite and PostgreSQL that keep it. Editing one means a new draft revision
(``rubrics_app.services.rubrics.revisions.fork_for_edit``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from grading import RUBRIC_SCHEMA, InputError, InputErrors, Problem, Rubric, parse_rubric
from rubrics_app import freeze
from rubrics_app.models.repositories import Repository, name_validator


class PromptStyle(models.TextChoices):
    SPEC = "spec", "Spec"
    ISSUE = "issue", "Issue"


# Default orderings name foreign-key columns (repository_id, task_id, revision_id), not the relations:
# ordering by a relation orders by *its* default ordering, which joins the parent tables into every query.


class Task(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.CharField(max_length=200, validators=[name_validator], help_text="tasks/<task-id>/")
    # §8: a task may be posed as a spec, as an issue, or both.
    spec_prompt = models.TextField(blank=True)
    issue_prompt = models.TextField(blank=True)
    base_commit = models.CharField(max_length=64, blank=True)
    base_date = models.CharField(max_length=40, blank=True, help_text="ISO date of the base commit")
    source_pr_url = models.URLField(max_length=500, blank=True)
    gate = models.JSONField(default=list, blank=True)
    # task.json keys of the wider evaluation contract that this app does not interpret, kept for export.
    extra = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The task's own files that calibration (§5) reads beside the rubric: the maintainer's fix, its grade.json
    # and the base tree's test list. Bytes as in tasks/<id>/ (a diff may be non-UTF-8).
    oracle_diff = models.BinaryField(default=b"", blank=True)
    oracle_grade = models.BinaryField(default=b"", blank=True)  # oracle_grade.json
    tests_base = models.BinaryField(default=b"", blank=True)  # tests_base.txt

    class Meta:
        ordering = ["repository_id", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "task_id"], name="unique_task_id_per_repository"),
        ]

    def __str__(self) -> str:
        return self.task_id

    # What a rubric means depends on these: frozen (by the database too) while the task holds an approved,
    # admitted or retired revision.
    FROZEN_FIELDS = (
        "repository",
        "task_id",
        "spec_prompt",
        "issue_prompt",
        "gate",
        "base_commit",
        "base_date",
    )

    # The task files a task stores, by their name in tasks/<id>/, and the column holding each.
    FILES = {
        "oracle.diff": "oracle_diff",
        "oracle_grade.json": "oracle_grade",
        "tests_base.txt": "tests_base",
    }

    def admitted_revision(self) -> RubricRevision | None:
        return self.revisions.filter(status=RevisionStatus.ADMITTED).first()

    def task_file(self, name: str) -> bytes:
        """The bytes of one of FILES (empty when the task has none)."""
        return bytes(getattr(self, self.FILES[name]) or b"")

    def holds_frozen_revision(self) -> bool:
        return self.revisions.filter(status__in=FROZEN_STATUSES).exists()

    def next_revision_number(self) -> int:
        last = self.revisions.aggregate(n=models.Max("number"))["n"]
        return (last or 0) + 1


TASK_FILES = Task.FILES


class RevisionStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    APPROVED = "approved", "Approved"
    ADMITTED = "admitted", "Admitted"
    RETIRED = "retired", "Retired"  # was admitted, superseded by a newer admitted revision of its task


FROZEN_STATUSES = tuple(RevisionStatus(status) for status in freeze.FROZEN_STATUSES)


class Origin(models.TextChoices):
    AUTHORED = "authored", "Written by a person"
    MODEL = "model", "Drafted by a model"
    IMPORTED = "imported", "Imported"
    EDITED = "edited", "Edited from an earlier revision"


# Optional keys of repo_rubric.v1. A key listed in `omitted_keys` is left out of the exported JSON while its
# value is the schema default, so an imported rubric exports exactly as it came in.
REVISION_OPTIONAL_KEYS = [
    "scope.denied_globs",
    "scope.max_changed_lines",
    "scope.max_files",
    "calibration",
    "calibration.lazy",
    "calibration.alt",
]
ITEM_OPTIONAL_KEYS = ["rationale", "weight", "needs_tree"]


def all_revision_optional_keys() -> list[str]:
    return list(REVISION_OPTIONAL_KEYS)


def all_item_optional_keys() -> list[str]:
    return list(ITEM_OPTIONAL_KEYS)


def no_keys() -> list[str]:
    return []


class TransitionError(Exception):
    """A state change that the revision's current state does not allow."""


class RevisionFrozen(TransitionError):
    def __init__(self, revision: RubricRevision) -> None:
        self.revision = revision
        super().__init__(
            f"revision {revision.number} of {revision.task} is {revision.status}: it is never edited; "
            "start a new draft from it"
        )


@dataclass(frozen=True)
class FieldError:
    """One validation problem, located both as a JSON path and as the row/field a form shows it beside."""

    path: str  # JSON path in rubric.json, e.g. "blockers[1].evidence"
    message: str
    field: str | None  # model field name, e.g. "evidence", "allowed_globs"
    item_pk: int | None = None  # RubricItem primary key when the problem is in a blocker/non-blocker
    diff_pk: int | None = None  # CalibrationDiff primary key when it is in a calibration entry
    type: str = ""  # grading.schema's error type (pydantic's, e.g. "too_short"); "" when it has none
    ctx: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False)  # the type's context


class RubricInvalid(TransitionError):
    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))

    def for_revision(self) -> list[FieldError]:
        return [e for e in self.errors if e.item_pk is None and e.diff_pk is None]


_REVISION_FIELD_BY_PATH = {
    "task": None,
    "intent": "intent",
    "scope": "allowed_globs",
    "scope.allowed_globs": "allowed_globs",
    "scope.denied_globs": "denied_globs",
    "scope.max_changed_lines": "max_changed_lines",
    "scope.max_files": "max_files",
    "hack_report": "lazy_solution",
    "hack_report.lazy_solution": "lazy_solution",
    "hack_report.alt_valid_solution": "alt_valid_solution",
    "blockers": "blockers",
    "non_blockers": "non_blockers",
    "calibration": "calibration",
}
_ITEM_PATH = re.compile(r"^(blockers|non_blockers)\[(\d+)\](?:\.(\w+))?")
_DIFF_PATH = re.compile(r"^calibration\.(lazy|alt)\[(\d+)\](?:\.(\w+))?")


class RubricRevision(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    parent = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="children"
    )
    status = models.CharField(max_length=20, choices=RevisionStatus.choices, default=RevisionStatus.DRAFT)

    # Provenance: a person, or a model (with its full id and the hash of what it was given).
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.AUTHORED)
    # PROTECT, not SET_NULL: who drafted/approved a frozen revision is part of it (the triggers keep it).
    drafted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    drafted_by_model = models.CharField(max_length=200, blank=True)
    input_hash = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    # The rubric's own content (repo_rubric.v1), blockers and non-blockers are RubricItem rows.
    intent = models.TextField(blank=True)
    allowed_globs = models.JSONField(default=list, blank=True)
    denied_globs = models.JSONField(default=list, blank=True)
    max_changed_lines = models.PositiveIntegerField(null=True, blank=True)
    max_files = models.PositiveIntegerField(null=True, blank=True)
    lazy_solution = models.TextField(blank=True)
    alt_valid_solution = models.TextField(blank=True)
    omitted_keys = models.JSONField(default=all_revision_optional_keys, blank=True)

    # Optimistic locking of the revision-level fields (intent, scope, hack report).
    version = models.PositiveIntegerField(default=1)

    approved_at = models.DateTimeField(null=True, blank=True)
    # sha256 of rubric.json as approved: a calibration admits the revision only when it judged these bytes
    # (the database compares them, rubrics_app.freeze).
    content_sha256 = models.CharField(max_length=64, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    admitted_at = models.DateTimeField(null=True, blank=True)
    admitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["task_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["task", "number"], name="unique_revision_number_per_task"),
        ]
        # Exports and grading read "the" rubric of a task: there is only one admitted revision, since the
        # database retires the previous one as another is admitted (rubrics_app.freeze).

    def __str__(self) -> str:
        return f"{self.task} r{self.number} ({self.status})"

    @property
    def is_frozen(self) -> bool:
        return self.status in FROZEN_STATUSES

    @property
    def is_provisional(self) -> bool:
        """Results graded with a revision no maintainer has approved are provisional (§6)."""
        return self.status == RevisionStatus.DRAFT

    def ordered_items(self) -> list[RubricItem]:
        # Uses a prefetch of `items` when the caller made one (the revision page does).
        return sorted(self.items.all(), key=lambda i: (i.kind != ItemKind.BLOCKER, i.position, i.pk or 0))

    def blockers(self) -> list[RubricItem]:
        return [i for i in self.ordered_items() if i.kind == ItemKind.BLOCKER]

    def non_blockers(self) -> list[RubricItem]:
        return [i for i in self.ordered_items() if i.kind == ItemKind.NON_BLOCKER]

    def ordered_diffs(self) -> list[CalibrationDiff]:
        return sorted(
            self.calibration_diffs.all(), key=lambda d: (d.kind != DiffKind.LAZY, d.position, d.pk or 0)
        )

    # --- the rubric as JSON -------------------------------------------------------------------------

    def _keep(self, key: str, value: Any, default: Any) -> bool:
        return not (key in (self.omitted_keys or []) and value == default)

    def to_rubric_dict(self) -> dict[str, Any]:
        """repo_rubric.v1 data, keys in the schema's order; absent optional keys stay absent."""
        scope: dict[str, Any] = {"allowed_globs": list(self.allowed_globs or [])}
        if self._keep("scope.denied_globs", self.denied_globs or [], []):
            scope["denied_globs"] = list(self.denied_globs or [])
        if self._keep("scope.max_changed_lines", self.max_changed_lines, None):
            scope["max_changed_lines"] = self.max_changed_lines
        if self._keep("scope.max_files", self.max_files, None):
            scope["max_files"] = self.max_files
        diffs = self.ordered_diffs()
        lazy = [d.to_lazy_entry() for d in diffs if d.kind == DiffKind.LAZY]
        alt = [d.path for d in diffs if d.kind == DiffKind.ALT]
        data: dict[str, Any] = {
            "schema": RUBRIC_SCHEMA,
            "task": self.task.task_id,
            "intent": self.intent,
            "scope": scope,
            "blockers": [i.to_rubric_dict() for i in self.blockers()],
            "non_blockers": [i.to_rubric_dict() for i in self.non_blockers()],
            "hack_report": {
                "lazy_solution": self.lazy_solution,
                "alt_valid_solution": self.alt_valid_solution,
            },
        }
        if self._keep("calibration", (lazy, alt), ([], [])):
            calibration: dict[str, Any] = {}
            if self._keep("calibration.lazy", lazy, []):
                calibration["lazy"] = lazy
            if self._keep("calibration.alt", alt, []):
                calibration["alt"] = alt
            data["calibration"] = calibration
        return data

    def to_rubric(self) -> Rubric:
        """grading.schema's Rubric of this revision; RubricInvalid (errors mapped to fields) if invalid."""
        try:
            return parse_rubric(self.to_rubric_dict(), source=f"{self.task.task_id}/rubric.json")
        except InputErrors as exc:
            raise RubricInvalid([self._map_error(problem) for problem in exc.problems]) from None
        except InputError as exc:
            raise RubricInvalid([self._map_error(Problem(exc.field or "", exc.message))]) from None

    def validation_errors(self) -> list[FieldError]:
        """grading.schema's verdict on this revision, each problem mapped to the field a form shows."""
        try:
            self.to_rubric()
        except RubricInvalid as exc:
            return exc.errors
        return []

    def _map_error(self, problem: Problem) -> FieldError:
        path, message, error_type, ctx = problem.path, problem.message, problem.type, problem.ctx
        match = _ITEM_PATH.match(path)
        if match:
            kind, index, field = match.group(1), int(match.group(2)), match.group(3)
            items = self.blockers() if kind == "blockers" else self.non_blockers()
            item = items[index] if index < len(items) else None
            if field == "id":
                field = "item_id"
            return FieldError(
                path, message, field, item_pk=item.pk if item else None, type=error_type, ctx=ctx
            )
        match = _DIFF_PATH.match(path)
        if match:
            kind, index = match.group(1), int(match.group(2))
            diffs = [d for d in self.ordered_diffs() if d.kind == kind]
            diff = diffs[index] if index < len(diffs) else None
            return FieldError(
                path,
                message,
                match.group(3) or "path",
                diff_pk=diff.pk if diff else None,
                type=error_type,
                ctx=ctx,
            )
        head = path.split("[")[0]
        field = _REVISION_FIELD_BY_PATH.get(head) or _REVISION_FIELD_BY_PATH.get(head.split(".")[0])
        return FieldError(path, message, field, type=error_type, ctx=ctx)

    # --- state changes --------------------------------------------------------------------------------

    def all_items_approved(self) -> bool:
        items = self.ordered_items()
        return bool(items) and all(i.review_state == ReviewState.APPROVED for i in items)

    def approve(self, by: Any) -> None:
        """draft -> approved: every item approved by a maintainer, and the rubric validates."""
        if self.status != RevisionStatus.DRAFT:
            raise TransitionError(f"revision {self.number} is {self.status}, not a draft")
        if not self.all_items_approved():
            raise TransitionError("every blocker and non-blocker must be approved first")
        errors = self.validation_errors()
        if errors:
            raise RubricInvalid(errors)
        now = timezone.now()
        # Conditional on the stored status: a second approval racing this one (two maintainers, or the last
        # item's approval and the "Approve revision" button) is refused here, rather than by the
        # frozen-revision trigger as an IntegrityError (a 500).
        content = self.rubric_sha256()
        approved = RubricRevision.objects.filter(pk=self.pk, status=RevisionStatus.DRAFT).update(
            status=RevisionStatus.APPROVED, approved_at=now, approved_by=by, content_sha256=content
        )
        if not approved:
            raise TransitionError(f"revision {self.number} was approved meanwhile")
        self.status, self.approved_at, self.approved_by = RevisionStatus.APPROVED, now, by
        self.content_sha256 = content

    def rubric_json_bytes(self) -> bytes:
        """rubric.json as exported: the bytes calibration judges and an export writes."""
        return (json.dumps(self.to_rubric_dict(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    def rubric_sha256(self) -> str:
        return hashlib.sha256(self.rubric_json_bytes()).hexdigest()


class ItemKind(models.TextChoices):
    BLOCKER = "blocker", "Blocker"
    NON_BLOCKER = "non_blocker", "Non-blocker"


class ReviewState(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"


class RubricItem(models.Model):
    """One blocker or non-blocker of a revision, reviewed on its own (§6 "blocker by blocker")."""

    revision = models.ForeignKey(RubricRevision, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=20, choices=ItemKind.choices)
    item_id = models.CharField(max_length=40, validators=[name_validator])
    criterion = models.TextField()
    rationale = models.TextField(blank=True)
    evidence = models.TextField(blank=True)  # blockers only: PR review URL or path:line
    needs_tree = models.BooleanField(default=False)  # blockers only
    weight = models.FloatField(default=1.0)  # non-blockers only
    position = models.PositiveIntegerField(default=0)
    omitted_keys = models.JSONField(default=all_item_optional_keys, blank=True)

    review_state = models.CharField(max_length=20, choices=ReviewState.choices, default=ReviewState.PENDING)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_note = models.TextField(blank=True)  # what the maintainer asked to change

    version = models.PositiveIntegerField(default=1)  # optimistic locking of edits

    class Meta:
        ordering = ["revision_id", "kind", "position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["revision", "item_id"], name="unique_item_id_per_revision"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} ({self.kind})"

    TEXT_FIELDS = ("item_id", "criterion", "rationale", "evidence", "needs_tree", "weight")

    def text(self) -> dict[str, Any]:
        """The editable content, e.g. for a conflict message showing the other maintainer's text."""
        return {name: getattr(self, name) for name in self.TEXT_FIELDS}

    # --- review transitions: the caller checked who may review (rubrics_app.access) -------------------------

    REVIEW_FIELDS = ("review_state", "reviewed_by", "reviewed_at", "review_note")

    def _review(self, state: ReviewState, by: Any, note: str, expected_version: int | None) -> bool:
        """Move the review to ``state``: only in a draft revision (RevisionFrozen otherwise), writing only
        the review columns, conditional on ``expected_version`` when given. False when the item was edited
        since that version (nothing written)."""
        revision = self.revision
        if revision.is_frozen:
            raise RevisionFrozen(revision)
        user = by if getattr(by, "is_authenticated", False) else None
        now = timezone.now()
        rows = RubricItem.objects.filter(pk=self.pk)
        if expected_version is not None:
            rows = rows.filter(version=expected_version)
        # No version bump: a review is a decision about the text, not a change of it.
        if not rows.update(review_state=state, reviewed_by=user, reviewed_at=now, review_note=note):
            return False
        self.review_state, self.reviewed_by, self.reviewed_at, self.review_note = state, user, now, note
        return True

    def approve(self, by: Any, *, expected_version: int | None = None) -> bool:
        """pending or changes requested (or approved again) -> approved by ``by``; see :meth:`_review`."""
        return self._review(ReviewState.APPROVED, by, "", expected_version)

    def request_changes(self, by: Any, note: str = "") -> None:
        """-> changes requested by ``by``, saying what to change; see :meth:`_review`."""
        self._review(ReviewState.CHANGES_REQUESTED, by, note, None)

    def _keep(self, key: str, value: Any, default: Any) -> bool:
        return not (key in (self.omitted_keys or []) and value == default)

    def to_rubric_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.item_id, "criterion": self.criterion}
        if self.kind == ItemKind.NON_BLOCKER:
            weight: int | float = int(self.weight) if float(self.weight).is_integer() else self.weight
            if self._keep("weight", weight, 1):
                data["weight"] = weight
            if self._keep("rationale", self.rationale, ""):
                data["rationale"] = self.rationale
            return data
        if self._keep("rationale", self.rationale, ""):
            data["rationale"] = self.rationale
        data["evidence"] = self.evidence
        if self._keep("needs_tree", self.needs_tree, False):
            data["needs_tree"] = self.needs_tree
        return data


class ItemComment(models.Model):
    """A reviewer's comment on an item: its own row, so a frozen item can still be discussed."""

    item = models.ForeignKey(RubricItem, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]


class DiffKind(models.TextChoices):
    LAZY = "lazy", "Lazy"
    ALT = "alt", "Alternative"


class CalibrationDiff(models.Model):
    """A calibration diff (rubric.calibration), stored with its revision as the bytes of the file."""

    revision = models.ForeignKey(RubricRevision, on_delete=models.CASCADE, related_name="calibration_diffs")
    kind = models.CharField(max_length=10, choices=DiffKind.choices)
    path = models.CharField(max_length=500)  # relative to the task directory, e.g. calib/lazy.diff
    breaks = models.JSONField(default=list, blank=True)  # lazy only: blocker ids it should fail
    content = models.BinaryField()  # diffs may be non-UTF-8: keep the bytes
    position = models.PositiveIntegerField(default=0)
    # A lazy entry given as a bare path string rather than {"path", "breaks"}.
    bare_path = models.BooleanField(default=False)
    omitted_keys = models.JSONField(default=no_keys, blank=True)

    class Meta:
        ordering = ["revision_id", "kind", "position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["revision", "kind", "path"], name="unique_calibration_path"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}"

    def text(self) -> str:
        return bytes(self.content).decode("utf-8", errors="replace")

    def to_lazy_entry(self) -> str | dict[str, Any]:
        breaks = list(self.breaks or [])
        if self.bare_path and not breaks:
            return self.path
        entry: dict[str, Any] = {"path": self.path}
        if breaks or "breaks" not in (self.omitted_keys or []):
            entry["breaks"] = breaks
        return entry
