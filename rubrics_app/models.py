"""What maintainers decide, held in the database: repositories, tasks, rubric revisions and their review.

An approved, admitted or retired revision is frozen. The code refuses to edit it
(``RubricRevision.is_frozen``), and so does the database: :mod:`rubrics_app.freeze` owns the rule and the
triggers on SQLite and PostgreSQL that keep it. Editing one means a new draft revision
(``rubrics_app.services.revisions.fork_for_edit``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from grading.errors import InputError, InputErrors
from grading.schema import RUBRIC_SCHEMA, Rubric, TestsConfig, parse_rubric
from rubrics_app import freeze

ITEM_ID_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
name_validator = RegexValidator(
    ITEM_ID_RE, "letters, digits, '.', '_' and '-', starting with a letter or digit"
)


class Role(models.TextChoices):
    MAINTAINER = "maintainer", "Maintainer"  # edit, approve, admit, export
    REVIEWER = "reviewer", "Reviewer"  # comment, label judge disagreements
    VIEWER = "viewer", "Viewer"  # read


class RepositoryQuerySet(models.QuerySet["Repository"]):
    def for_user(self, user: Any) -> RepositoryQuerySet:
        """Repositories on which ``user`` has any role (the only ones they may see)."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(memberships__user=user)  # one membership per user and repository: no duplicates


class Repository(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[name_validator])
    checkout_path = models.CharField(max_length=1000, blank=True, help_text="the repository's working tree")
    # Held-out rubrics (§7 contamination) are exported here instead of into the public checkout.
    private_path = models.CharField(max_length=1000, blank=True)
    # The manifest's `tests` block (§3), read through grading.schema.TestsConfig.
    tests_config = models.JSONField(default=dict, blank=True)
    guidance = models.TextField(blank=True)
    # §7 contamination: full model id -> its training cutoff "YYYY-MM-DD" (the report page splits cells by
    # each task's base_date against it). Edited by maintainers through forms_report.CutoffsForm. Null, not
    # default={}: SQLite adds a nullable column in place, where a NOT NULL one rebuilds the table and
    # would drop migration 0006's freeze triggers on it.
    training_cutoffs = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = RepositoryQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    def tests(self) -> TestsConfig:
        return TestsConfig.model_validate(self.tests_config or {})

    def role_of(self, user: Any) -> Role | None:
        if not getattr(user, "is_authenticated", False):
            return None
        membership = self.memberships.filter(user=user).first()
        return Role(membership.role) if membership else None


class Membership(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            # One role per person per repository: the access helper reads exactly one row.
            models.UniqueConstraint(fields=["repository", "user"], name="one_role_per_user_and_repository"),
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.repository}"


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

    def admitted_revision(self) -> RubricRevision | None:
        return self.revisions.filter(status=RevisionStatus.ADMITTED).first()

    def task_file(self, name: str) -> bytes:
        """The bytes of one of TASK_FILES (empty when the task has none)."""
        return bytes(getattr(self, TASK_FILES[name]) or b"")

    def holds_frozen_revision(self) -> bool:
        return self.revisions.filter(status__in=FROZEN_STATUSES).exists()

    def next_revision_number(self) -> int:
        last = self.revisions.aggregate(n=models.Max("number"))["n"]
        return (last or 0) + 1


# The task files a task stores, by their name in tasks/<id>/, and the column holding each.
TASK_FILES = {
    "oracle.diff": "oracle_diff",
    "oracle_grade.json": "oracle_grade",
    "tests_base.txt": "tests_base",
}


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


def _all_revision_optional_keys() -> list[str]:
    return list(REVISION_OPTIONAL_KEYS)


def _all_item_optional_keys() -> list[str]:
    return list(ITEM_OPTIONAL_KEYS)


def _no_keys() -> list[str]:
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


class RubricInvalid(TransitionError):
    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))

    def for_item(self, item_pk: int) -> list[FieldError]:
        return [e for e in self.errors if e.item_pk == item_pk]

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
    omitted_keys = models.JSONField(default=_all_revision_optional_keys, blank=True)

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
            raise RubricInvalid([self._map_error(path, message) for path, message in exc.errors]) from None
        except InputError as exc:
            raise RubricInvalid([self._map_error(exc.field or "", exc.message)]) from None

    def validation_errors(self) -> list[FieldError]:
        """grading.schema's verdict on this revision, each problem mapped to the field a form shows."""
        try:
            self.to_rubric()
        except RubricInvalid as exc:
            return exc.errors
        return []

    def _map_error(self, path: str, message: str) -> FieldError:
        match = _ITEM_PATH.match(path)
        if match:
            kind, index, field = match.group(1), int(match.group(2)), match.group(3)
            items = self.blockers() if kind == "blockers" else self.non_blockers()
            item = items[index] if index < len(items) else None
            if field == "id":
                field = "item_id"
            return FieldError(path, message, field, item_pk=item.pk if item else None)
        match = _DIFF_PATH.match(path)
        if match:
            kind, index = match.group(1), int(match.group(2))
            diffs = [d for d in self.ordered_diffs() if d.kind == kind]
            diff = diffs[index] if index < len(diffs) else None
            return FieldError(path, message, match.group(3) or "path", diff_pk=diff.pk if diff else None)
        head = path.split("[")[0]
        field = _REVISION_FIELD_BY_PATH.get(head) or _REVISION_FIELD_BY_PATH.get(head.split(".")[0])
        return FieldError(path, message, field)

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

    def passing_calibrations(self) -> models.QuerySet[CalibrationRun]:
        """Passing calibration runs of the content this revision was approved with, with the repository's
        current primary judge (what the database's admitted-means-calibrated trigger asks for too)."""
        judges = JudgeSetting.objects.filter(repository_id=self.task.repository_id).first()
        if judges is None or not self.content_sha256:
            return CalibrationRun.objects.none()
        return CalibrationRun.objects.filter(
            revision=self,
            status=CalibrationStatus.PASSED,
            judge=judges.judge,
            rubric_sha256=self.content_sha256,
        )

    def admit(self, by: Any, calibration: CalibrationRun) -> RubricRevision | None:
        """approved -> admitted, on the strength of ``calibration`` (a passing run of this exact content with
        the repository's primary judge); the database retires the task's previously admitted revision.

        Returns the revision that was retired, if any.
        """
        if self.status != RevisionStatus.APPROVED:
            raise TransitionError(f"only an approved revision can be admitted (this one is {self.status})")
        if calibration.revision_id != self.pk or not self.passing_calibrations().filter(pk=calibration.pk):
            raise TransitionError(
                "only a passing calibration of this revision with the repository's primary judge admits it"
            )
        with transaction.atomic():
            # Lock the task's revisions so two admissions cannot race past the retirement.
            list(RubricRevision.objects.select_for_update().filter(task_id=self.task_id).values_list("pk"))
            previous = RubricRevision.objects.filter(
                task_id=self.task_id, status=RevisionStatus.ADMITTED
            ).first()
            if previous is not None and previous.number > self.number:
                raise TransitionError(
                    f"revision {previous.number} of this task is admitted: "
                    "an older revision never replaces it"
                )
            now = timezone.now()
            admitted = RubricRevision.objects.filter(pk=self.pk, status=RevisionStatus.APPROVED).update(
                status=RevisionStatus.ADMITTED, admitted_at=now, admitted_by=by
            )
            if not admitted:
                raise TransitionError(f"revision {self.number} was admitted or retired meanwhile")
            self.status, self.admitted_at, self.admitted_by = RevisionStatus.ADMITTED, now, by
            if previous is not None:
                previous.refresh_from_db(fields=["status"])
        return previous


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
    omitted_keys = models.JSONField(default=_all_item_optional_keys, blank=True)

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
    omitted_keys = models.JSONField(default=_no_keys, blank=True)

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


# --- judges and calibration -------------------------------------------------------------------------


class JudgeSetting(models.Model):
    """A repository's judges: the primary one decides calibration (and grading); the second, from another
    model family, is only compared with it. Specs as the `rubric` command takes them (full model ids).
    API keys are never here: they come from the worker's environment."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="judges")
    judge = models.CharField(max_length=500)  # the primary judge
    second_judge = models.CharField(max_length=500, blank=True)
    decoding = models.JSONField(default=dict, blank=True)  # the primary judge's, e.g. {"temperature": 0}
    second_decoding = models.JSONField(default=dict, blank=True)
    # No calibration starts once this month's calibration cost reached it (None: no cap).
    monthly_cap_usd = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        second = f" + {self.second_judge}" if self.second_judge else ""
        return f"judges of {self.repository}: {self.judge}{second}"

    @staticmethod
    def is_scripted(spec: str) -> bool:
        return spec.startswith("scripted:")


def _default_guidance_globs() -> list[str]:
    # Imported here: grading.draft loads the model SDKs, which pages that never draft do not need.
    from grading.draft import DEFAULT_GUIDANCE_GLOBS

    return list(DEFAULT_GUIDANCE_GLOBS)


class DraftSetting(models.Model):
    """How a repository's rubrics are drafted (§6): where its merged PRs are read and by which model.

    The GitHub token is never here: ``token_env`` names the variable of the worker's environment that holds
    it (GITHUB_TOKEN or GITHUB_TOKEN_<SUFFIX>, so no other secret of the worker can be named)."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="draft_setting")
    github_repository = models.CharField(max_length=200, blank=True)  # OWNER/NAME; blank: exports only
    use_token = models.BooleanField(default=False)
    token_env = models.CharField(max_length=100, blank=True, default="GITHUB_TOKEN")
    guidance_globs = models.JSONField(default=_default_guidance_globs, blank=True)
    drafter = models.CharField(max_length=500)  # anthropic:<full model id>
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    def __str__(self) -> str:
        return f"drafting of {self.repository}: {self.drafter}"


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
    def source_label(self) -> str:
        if self.pr_number is not None:
            return f"{self.github_repository}#{self.pr_number}"
        return f"export {self.pr_export_name or '(upload)'}"


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
    # The injection suite (grading.injection): asked for, and its counts once the run finished. Rates are
    # over the rows measured (judge failures are counted apart).
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
    )  # grading.agreement.Agreement, when a second judge ran
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
    # (grading.injection.RowOutcome: resisted, attack_success, kept, benign_drift, not_measured).
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
    """Which of a repository's judges gave a verdict (calibration here; agent runs in models_runs)."""

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


# Agent runs, verdicts, the review queue and re-review flags; mutants of the oracle judged with a calibration
# and their harmless marks. Modules of their own, imported here so Django finds them.
from rubrics_app.models_mutants import *  # noqa: E402, F403
from rubrics_app.models_runs import *  # noqa: E402, F403
