"""Rubric revisions: creating them from a rubric, reviewing them item by item, and editing them safely.

Two rules hold everywhere here. An approved or admitted revision is never edited: editing starts a new draft
(:func:`fork_for_edit`). And two maintainers editing the same row never overwrite each other silently: an
edit names the version it was made against, and a stale one raises :class:`Conflict` with the other's text.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F

from grading import LazyCalibration, Rubric
from rubrics_app.access import Actor
from rubrics_app.models import (
    REVISION_OPTIONAL_KEYS,
    AuditVerb,
    CalibrationDiff,
    DiffKind,
    FieldError,
    ItemComment,
    ItemKind,
    Origin,
    ReviewState,
    RevisionFrozen,
    RevisionStatus,
    Role,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services import audit

ITEM_EDITABLE_FIELDS = frozenset(RubricItem.EDITABLE_FIELDS)
REVISION_EDITABLE_FIELDS = frozenset(RubricRevision.EDITABLE_FIELDS)


class Conflict(Exception):
    """Someone saved this row since the editor loaded it: ``current`` is their text, at ``version``."""

    def __init__(self, current: dict[str, Any], version: int, who: str = "") -> None:
        self.current = current
        self.version = version
        self.who = who
        super().__init__(
            f"{who or 'someone'} saved this since you opened it (now version {version}); "
            "your text was not saved: compare it with theirs and save again"
        )


# --- creating revisions ------------------------------------------------------------------------------------


def omitted_revision_keys(data: dict[str, Any]) -> list[str]:
    """Optional keys absent from ``data`` (dotted, as in REVISION_OPTIONAL_KEYS)."""
    present = {f"scope.{k}" for k in data.get("scope", {})}
    if "calibration" in data:
        present |= {"calibration"} | {f"calibration.{k}" for k in data["calibration"]}
    return [key for key in REVISION_OPTIONAL_KEYS if key not in present]


@transaction.atomic
def create_revision(
    task: Task,
    rubric: Rubric,
    calibration_files: dict[str, bytes],
    *,
    by: Actor,
    origin: Origin = Origin.AUTHORED,
    model: str = "",
    input_hash: str = "",
    parent: RubricRevision | None = None,
) -> RubricRevision:
    """A new draft revision of ``task`` holding ``rubric``; ``calibration_files`` maps calib paths to bytes.

    Optional keys absent from the rubric (as loaded) stay absent when it is exported.
    """
    by.require(Role.MAINTAINER, task.repository)
    data = rubric.to_json_dict()
    missing = [p for _, p in rubric.calibration.paths() if p not in calibration_files]
    if missing:
        raise ValueError(f"calibration diffs not given: {', '.join(missing)}")
    # Locking the task serialises revision numbers: two imports at once get n and n+1, not a duplicate.
    task = Task.objects.select_for_update().get(pk=task.pk)
    revision = RubricRevision.objects.create(
        task=task,
        number=task.next_revision_number(),
        parent=parent,
        origin=origin,
        drafted_by=by.user if getattr(by.user, "is_authenticated", False) else None,
        drafted_by_model=model,
        input_hash=input_hash,
        intent=rubric.intent,
        allowed_globs=list(rubric.scope.allowed_globs),
        denied_globs=list(rubric.scope.denied_globs),
        max_changed_lines=rubric.scope.max_changed_lines,
        max_files=rubric.scope.max_files,
        lazy_solution=rubric.hack_report.lazy_solution,
        alt_valid_solution=rubric.hack_report.alt_valid_solution,
        omitted_keys=omitted_revision_keys(data),
    )
    RubricItem.objects.bulk_create(_items(revision, rubric, data))
    CalibrationDiff.objects.bulk_create(_calibration_diffs(revision, rubric, calibration_files))
    verb = AuditVerb.IMPORTED if origin == Origin.IMPORTED else AuditVerb.DRAFTED
    audit.record(verb, actor=by.user, actor_label=model, revision=revision, detail={"origin": origin})
    return revision


def _items(revision: RubricRevision, rubric: Rubric, data: dict[str, Any]) -> list[RubricItem]:
    """The rubric's blockers then non-blockers as unsaved items, with the optional keys ``data`` (the
    rubric as loaded) leaves out."""
    items: list[RubricItem] = []
    for position, (blocker, raw) in enumerate(zip(rubric.blockers, data["blockers"], strict=True)):
        items.append(
            RubricItem(
                revision=revision,
                kind=ItemKind.BLOCKER,
                item_id=blocker.id,
                criterion=blocker.criterion,
                rationale=blocker.rationale,
                evidence=blocker.evidence,
                needs_tree=blocker.needs_tree,
                position=position,
                omitted_keys=[k for k in ("rationale", "needs_tree") if k not in raw],
            )
        )
    for position, (non_blocker, raw) in enumerate(
        zip(rubric.non_blockers, data["non_blockers"], strict=True)
    ):
        items.append(
            RubricItem(
                revision=revision,
                kind=ItemKind.NON_BLOCKER,
                item_id=non_blocker.id,
                criterion=non_blocker.criterion,
                rationale=non_blocker.rationale,
                weight=float(non_blocker.weight),
                position=position,
                omitted_keys=[k for k in ("rationale", "weight") if k not in raw],
            )
        )
    return items


def _calibration_diffs(
    revision: RubricRevision, rubric: Rubric, calibration_files: dict[str, bytes]
) -> list[CalibrationDiff]:
    """The lazy then the alternative calibration diffs as unsaved rows, their bytes from
    ``calibration_files``."""
    diffs: list[CalibrationDiff] = []
    for position, entry in enumerate(rubric.calibration.lazy):
        lazy = entry if isinstance(entry, LazyCalibration) else LazyCalibration(path=entry)
        diffs.append(
            CalibrationDiff(
                revision=revision,
                kind=DiffKind.LAZY,
                path=lazy.path,
                breaks=list(lazy.breaks),
                content=calibration_files[lazy.path],
                position=position,
                bare_path=isinstance(entry, str),
                omitted_keys=[]
                if isinstance(entry, str) or "breaks" in lazy.model_fields_set
                else ["breaks"],
            )
        )
    for position, path in enumerate(rubric.calibration.alt):
        diffs.append(
            CalibrationDiff(
                revision=revision,
                kind=DiffKind.ALT,
                path=path,
                content=calibration_files[path],
                position=position,
            )
        )
    return diffs


@transaction.atomic
def new_draft_from(revision: RubricRevision, by: Actor, *, changing: Collection[str] = ()) -> RubricRevision:
    """A new draft (number + 1, parent ``revision``) with every item's text and calib diff.

    An item keeps its approval: the draft starts as a copy, so its text is the text that was approved (an
    edit later puts it back to pending, as any edit does). Each carried approval is recorded in the audit
    trail as carried over from ``revision``. Items named in ``changing`` (ids of ``revision`` the caller is
    about to edit or remove) start pending and carry nothing.
    """
    task = Task.objects.select_for_update().select_related("repository").get(pk=revision.task_id)
    by.require(Role.MAINTAINER, task.repository)
    draft = RubricRevision.objects.create(
        task=task,
        number=task.next_revision_number(),
        parent=revision,
        origin=Origin.EDITED,
        drafted_by=by.user if getattr(by.user, "is_authenticated", False) else None,
        intent=revision.intent,
        allowed_globs=list(revision.allowed_globs),
        denied_globs=list(revision.denied_globs),
        max_changed_lines=revision.max_changed_lines,
        max_files=revision.max_files,
        lazy_solution=revision.lazy_solution,
        alt_valid_solution=revision.alt_valid_solution,
        omitted_keys=list(revision.omitted_keys),
    )
    carried: list[tuple[RubricItem, RubricItem]] = []  # (the approved item, its copy)
    copies: list[RubricItem] = []
    for item in revision.ordered_items():
        copy = RubricItem(
            revision=draft,
            kind=item.kind,
            item_id=item.item_id,
            criterion=item.criterion,
            rationale=item.rationale,
            evidence=item.evidence,
            needs_tree=item.needs_tree,
            weight=item.weight,
            position=item.position,
            omitted_keys=list(item.omitted_keys),
        )
        if item.review_state == ReviewState.APPROVED and item.item_id not in changing:
            copy.review_state = ReviewState.APPROVED
            copy.reviewed_by_id = item.reviewed_by_id
            copy.reviewed_at = item.reviewed_at
            carried.append((item, copy))
        copies.append(copy)
    RubricItem.objects.bulk_create(copies)
    CalibrationDiff.objects.bulk_create(
        CalibrationDiff(
            revision=draft,
            kind=diff.kind,
            path=diff.path,
            breaks=list(diff.breaks),
            content=bytes(diff.content),
            position=diff.position,
            bare_path=diff.bare_path,
            omitted_keys=list(diff.omitted_keys),
        )
        for diff in revision.ordered_diffs()
    )
    audit.record(AuditVerb.DRAFTED, actor=by.user, revision=draft, detail={"from_revision": revision.number})
    approvers = {
        u.pk: str(u) for u in get_user_model().objects.filter(pk__in={i.reviewed_by_id for i, _ in carried})
    }
    for item, copy in carried:
        audit.record(
            AuditVerb.ITEM_APPROVED,
            actor=by.user,
            revision=draft,
            item=copy,
            detail={
                "carried_over_from": revision.number,
                "approved_by": approvers.get(item.reviewed_by_id or 0, ""),
            },
        )
    return draft


def fork_for_edit[T](
    revision: RubricRevision,
    by: Actor,
    edit: Callable[[RubricRevision], T],
    *,
    changing: Collection[str] = (),
) -> tuple[RubricRevision, T]:
    """A frozen revision is never edited: the edit lands in a new draft made from it. One transaction makes
    the draft (:func:`new_draft_from`) and applies ``edit`` to it, so a failed edit leaves no empty draft.
    Returns the draft and what ``edit`` returned. Every view that edits a frozen revision comes here."""
    with transaction.atomic():
        draft = new_draft_from(revision, by, changing=changing)
        return draft, edit(draft)


# --- editing ------------------------------------------------------------------------------------------------


def _require_draft(revision: RubricRevision) -> None:
    if revision.is_frozen:
        raise RevisionFrozen(revision)


def _locked(revision_pk: int) -> RubricRevision:
    """The revision as stored, locked (on PostgreSQL) until the caller's transaction ends: an approval
    waits for the write to a draft's rows rather than racing it."""
    return (
        RubricRevision.objects.select_for_update(of=("self",))
        .select_related("task__repository")
        .get(pk=revision_pk)
    )


@contextmanager
def _unless_frozen_meanwhile(revision_pk: int) -> Iterator[None]:
    """Write to a draft's rows; if the revision was approved between the check and the write, the
    frozen-revision trigger refuses it (IntegrityError): raise :class:`RevisionFrozen` then, not a 500.
    Any other IntegrityError (a duplicate item id) is raised as it is."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError:
        current = RubricRevision.objects.select_related("task").get(pk=revision_pk)
        if current.is_frozen:
            raise RevisionFrozen(current) from None
        raise


def _clean_changes(changes: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
    return dict(changes)


@transaction.atomic
def edit_item(item: RubricItem, expected_version: int, changes: dict[str, Any], by: Actor) -> RubricItem:
    """Save ``changes`` made against ``expected_version``; the item's review goes back to pending.

    Raises :class:`Conflict` (with the current text) when someone saved the item since, and
    :class:`RevisionFrozen` when the revision is approved or admitted.
    """
    revision = _locked(item.revision_id)
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    changes = _clean_changes(changes, ITEM_EDITABLE_FIELDS)
    before = item.text()
    with _unless_frozen_meanwhile(revision.pk):
        updated = RubricItem.objects.filter(pk=item.pk, version=expected_version).update(
            **changes,
            version=F("version") + 1,
            review_state=ReviewState.PENDING,
            reviewed_by=None,
            reviewed_at=None,
            review_note="",
        )
    if updated == 0:
        current = RubricItem.objects.get(pk=item.pk)
        last = (
            current.revision.audit_events.filter(item=current, verb=AuditVerb.EDITED)
            .select_related("actor")
            .first()
        )
        who = str(last.actor) if last is not None and last.actor is not None else ""
        raise Conflict(current.text(), current.version, who)
    item.refresh_from_db()
    after = item.text()
    audit.record(
        AuditVerb.EDITED,
        actor=by.user,
        revision=revision,
        item=item,
        detail={
            "before": {k: v for k, v in before.items() if after[k] != v},
            "after": {k: v for k, v in after.items() if before[k] != v},
        },
    )
    return item


@transaction.atomic
def edit_revision(
    revision: RubricRevision, expected_version: int, changes: dict[str, Any], by: Actor
) -> RubricRevision:
    """Save revision-level fields (intent, scope, hack report) with the same optimistic locking as items."""
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    changes = _clean_changes(changes, REVISION_EDITABLE_FIELDS)
    # "before" is what is stored, not the caller's instance: a bound ModelForm writes the submitted values
    # onto its instance while validating, which made the audit trail record the new text as the old.
    stored = RubricRevision.objects.only(*REVISION_EDITABLE_FIELDS).get(pk=revision.pk)
    before = {k: getattr(stored, k) for k in changes}
    updated = RubricRevision.objects.filter(
        pk=revision.pk, version=expected_version, status=RevisionStatus.DRAFT
    ).update(**changes, version=F("version") + 1)
    if updated == 0:
        current = RubricRevision.objects.get(pk=revision.pk)
        if current.is_frozen:
            raise RevisionFrozen(current)
        raise Conflict({k: getattr(current, k) for k in sorted(REVISION_EDITABLE_FIELDS)}, current.version)
    revision.refresh_from_db()
    audit.record(
        AuditVerb.EDITED,
        actor=by.user,
        revision=revision,
        detail={"before": before, "after": {k: getattr(revision, k) for k in changes}},
    )
    return revision


@transaction.atomic
def add_item(revision: RubricRevision, kind: ItemKind, fields: dict[str, Any], by: Actor) -> RubricItem:
    """A new blocker or non-blocker at the end of its list in a draft; its review starts pending.

    The 2-5 blockers / 3-6 non-blockers rule is grading.schema's: a draft may break it for a while (the
    revision then shows the error and cannot be approved). A duplicate id raises IntegrityError.
    """
    revision = _locked(revision.pk)
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    fields = _clean_changes(fields, ITEM_EDITABLE_FIELDS)
    with _unless_frozen_meanwhile(revision.pk):
        position = max((i.position for i in revision.items.filter(kind=kind)), default=-1) + 1
        item = RubricItem.objects.create(revision=revision, kind=kind, position=position, **fields)
    audit.record(AuditVerb.EDITED, actor=by.user, revision=revision, item=item, detail={"added": item.text()})
    return item


@transaction.atomic
def remove_item(item: RubricItem, by: Actor) -> None:
    """Drop a blocker or non-blocker (with its comments) from a draft, e.g. a questionable blocker (§6)."""
    revision = _locked(item.revision_id)
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    text = item.text()
    with _unless_frozen_meanwhile(revision.pk):
        item.delete()
    audit.record(
        AuditVerb.EDITED, actor=by.user, revision=revision, detail={"removed": text, "kind": str(item.kind)}
    )


# --- review -------------------------------------------------------------------------------------------------


@dataclass
class ReviewOutcome:
    item: RubricItem
    revision_approved: bool = False
    # Why the revision did not turn approved although every item is: grading.schema's errors.
    errors: list[FieldError] = field(default_factory=list)


@transaction.atomic
def approve_item(item: RubricItem, by: Actor, expected_version: int | None = None) -> ReviewOutcome:
    """A maintainer approves one item; when it was the last one pending and the rubric validates, the
    revision turns approved."""
    revision = (
        RubricRevision.objects.select_for_update().select_related("task__repository").get(pk=item.revision_id)
    )
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    item.revision = revision
    with _unless_frozen_meanwhile(revision.pk):
        approved = item.approve(by.user, expected_version=expected_version)
    if not approved:
        current = RubricItem.objects.get(pk=item.pk)
        raise Conflict(current.text(), current.version)
    item.refresh_from_db()
    audit.record(AuditVerb.ITEM_APPROVED, actor=by.user, revision=revision, item=item)
    outcome = ReviewOutcome(item=item)
    if revision.all_items_approved():
        try:
            revision.approve(by=by.user)
        except RubricInvalid as exc:
            outcome.errors = exc.errors
        else:
            outcome.revision_approved = True
            audit.record(AuditVerb.APPROVED, actor=by.user, revision=revision)
    return outcome


@transaction.atomic
def approve_revision(revision: RubricRevision, by: Actor) -> None:
    """draft -> approved once every item is (after a fix to intent, scope or hack report). Raises
    RubricInvalid when the rubric does not validate, TransitionError when an item is not approved."""
    # Checked on the stored items, under the revision's lock (which item edits, requests for changes,
    # additions and removals take too), not on the ones the page was loaded with.
    locked = _locked(revision.pk)
    by.require(Role.MAINTAINER, locked.task.repository)
    locked.approve(by=by.user)
    audit.record(AuditVerb.APPROVED, actor=by.user, revision=locked)


@transaction.atomic
def request_changes(item: RubricItem, by: Actor, note: str = "") -> RubricItem:
    """Raises :class:`RevisionFrozen` when the revision is (or was meanwhile) approved."""
    revision = _locked(item.revision_id)
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_draft(revision)
    item.revision = revision
    with _unless_frozen_meanwhile(revision.pk):
        item.request_changes(by.user, note)
    item.refresh_from_db()
    audit.record(
        AuditVerb.CHANGES_REQUESTED, actor=by.user, revision=revision, item=item, detail={"note": note}
    )
    return item


@transaction.atomic
def comment(item: RubricItem, by: Actor, text: str) -> ItemComment:
    """A reviewer's or maintainer's comment on an item, frozen or not (comments are rows of their own)."""
    by.require(Role.REVIEWER, item.revision.task.repository)
    created = ItemComment.objects.create(item=item, author=by.user, text=text)
    audit.record(AuditVerb.COMMENTED, actor=by.user, revision=item.revision, item=item, detail={"note": text})
    return created


class NotCalibrated(TransitionError):
    """Admitting needs a passing calibration of the revision's exact content with the primary judge."""


@transaction.atomic
def admit(revision: RubricRevision, by: Actor, *, with_suite: bool = False) -> RubricRevision | None:
    """approved -> admitted through its passing calibration run; the task's previously admitted revision is
    retired. Raises NotCalibrated when no passing run of this exact content with the repository's primary
    judge exists (``with_suite``: none that ran the injection suite; start one with
    ``calibration.start(revision, by, admit=True, injection_suite=with_suite)``), and TransitionError when a
    run of this content and judge found an attack success in the injection suite."""
    from rubrics_app.services.calibration import run as calibration
    from rubrics_app.services.calibration.inputs import injection_refusal, passing_run, refusal_text

    revision = RubricRevision.objects.select_related("task__repository").get(pk=revision.pk)
    by.require(Role.MAINTAINER, revision.task.repository)
    if revision.status != RevisionStatus.APPROVED:
        raise TransitionError(f"only an approved revision can be admitted (this one is {revision.status})")
    refused = injection_refusal(revision)
    if refused is not None:
        raise TransitionError(refusal_text(refused))
    run = passing_run(revision, with_suite=with_suite)
    if run is None:
        suite = " with the injection suite" if with_suite else ""
        raise NotCalibrated(
            f"revision {revision.number} has no passing calibration{suite} of its exact content with the "
            "repository's primary judge: run calibration first"
        )
    return calibration.admit_with(revision, run, by)
