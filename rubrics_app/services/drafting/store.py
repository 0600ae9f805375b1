"""Storing what the drafter wrote (§6) as a new draft revision: the model's rubric.json as written, checked
or not, with every problem listed on the drafting record. A value that cannot be stored as written (not a
string, not a whole number, an id missing, too long or used twice) is stored as near as it can be, and
becomes one more listed problem: a draft is never fixed silently. Called by the drafting job
(:mod:`rubrics_app.services.drafting.run`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from grading import ALT_DIFF_PATH, LAZY_DIFF_PATH, Draft
from rubrics_app.models import (
    AuditVerb,
    CalibrationDiff,
    DiffKind,
    DraftStep,
    ItemKind,
    Origin,
    RubricDraft,
    RubricItem,
    RubricRevision,
    Task,
)
from rubrics_app.services import audit
from rubrics_app.services.rubrics.revisions import omitted_revision_keys

MAX_ITEM_ID = 40  # RubricItem.item_id
MAX_COUNT = 2**31 - 1  # a PositiveIntegerField on every database


@dataclass
class _Stored:
    """What could not be stored as the model wrote it; each becomes a listed problem."""

    problems: list[str]

    def text(self, value: Any, where: str) -> str:
        if isinstance(value, str):
            return value
        if value is not None:
            self.problems.append(f"rubric.json: {where}: not a string; stored empty")
        return ""

    def count(self, value: Any, where: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_COUNT:
            self.problems.append(
                f"rubric.json: {where}: not a whole number of at least 1 ({value!r}); left out"
            )
            return None
        return value

    def strings(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list):
            if value is not None:
                self.problems.append(f"rubric.json: {where}: not a list; stored empty")
            return []
        out = []
        for i, entry in enumerate(value):
            if isinstance(entry, str):
                out.append(entry)
            else:
                self.problems.append(f"rubric.json: {where}[{i}]: not a string; left out")
        return out

    def item_id(self, value: Any, where: str, fallback: str, taken: set[str]) -> str:
        item_id = value if isinstance(value, str) and value else ""
        if not item_id:
            item_id = fallback
            self.problems.append(f"rubric.json: {where}: no id; stored as {fallback}")
        if len(item_id) > MAX_ITEM_ID:
            short = item_id[:MAX_ITEM_ID]
            self.problems.append(
                f"rubric.json: {where}: longer than {MAX_ITEM_ID} characters; cut to {short}"
            )
            item_id = short
        if item_id in taken:
            n = 2
            while f"{item_id[: MAX_ITEM_ID - 4]}-{n}" in taken:
                n += 1
            renamed = f"{item_id[: MAX_ITEM_ID - 4]}-{n}"
            self.problems.append(f"rubric.json: {where}: id {item_id} is used twice; stored as {renamed}")
            item_id = renamed
        taken.add(item_id)
        return item_id

    def weight(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.problems.append(f"rubric.json: {where}: not a number ({value!r}); stored as 1")
            return 1.0
        return float(value)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


@transaction.atomic
def store_draft(draft: RubricDraft, result: Draft, problems: list[str], *, seconds: float) -> RubricRevision:
    """A new draft revision holding ``result`` as the model wrote it, checked or not, with every problem the
    checks found (and anything that could not be stored as written) listed on the drafting record."""
    task = Task.objects.select_for_update().get(pk=draft.task_id)
    stored = _Stored(problems=list(problems))
    revision = _create_revision(task, draft, result, stored)
    RubricItem.objects.bulk_create(_items(revision, result.rubric, stored))
    CalibrationDiff.objects.bulk_create(_calibration_diffs(revision, result, stored))
    _finish_draft(draft, revision, result, stored, seconds=seconds)
    return revision


def _create_revision(task: Task, draft: RubricDraft, result: Draft, stored: _Stored) -> RubricRevision:
    """The revision row: intent, scope and hack report as near as they can be stored."""
    data = result.rubric
    scope: dict[str, Any] = data["scope"] if isinstance(data.get("scope"), dict) else {}
    hack: dict[str, Any] = data["hack_report"] if isinstance(data.get("hack_report"), dict) else {}
    return RubricRevision.objects.create(
        task=task,
        number=task.next_revision_number(),
        origin=Origin.MODEL,
        drafted_by=draft.created_by,
        drafted_by_model=result.model_id[:200],
        input_hash=result.input_sha256,
        intent=stored.text(data.get("intent"), "intent"),
        allowed_globs=stored.strings(scope.get("allowed_globs"), "scope.allowed_globs"),
        denied_globs=stored.strings(scope.get("denied_globs"), "scope.denied_globs"),
        max_changed_lines=stored.count(scope.get("max_changed_lines"), "scope.max_changed_lines"),
        max_files=stored.count(scope.get("max_files"), "scope.max_files"),
        lazy_solution=stored.text(hack.get("lazy_solution"), "hack_report.lazy_solution"),
        alt_valid_solution=stored.text(hack.get("alt_valid_solution"), "hack_report.alt_valid_solution"),
        omitted_keys=omitted_revision_keys(
            {"scope": scope, **({"calibration": data["calibration"]} if "calibration" in data else {})}
        ),
    )


def _items(revision: RubricRevision, data: dict[str, Any], stored: _Stored) -> list[RubricItem]:
    """The blockers then the non-blockers, unsaved, each id unique within the revision."""
    taken: set[str] = set()
    items: list[RubricItem] = []
    for position, raw in enumerate(_dicts(data.get("blockers"))):
        where = f"blockers[{position}]"
        needs_tree = raw.get("needs_tree", False)
        if not isinstance(needs_tree, bool):
            stored.problems.append(f"rubric.json: {where}.needs_tree: not true or false; stored as false")
            needs_tree = False
        items.append(
            RubricItem(
                revision=revision,
                kind=ItemKind.BLOCKER,
                item_id=stored.item_id(raw.get("id"), f"{where}.id", f"B{position + 1}", taken),
                criterion=stored.text(raw.get("criterion"), f"{where}.criterion"),
                rationale=stored.text(raw.get("rationale"), f"{where}.rationale"),
                evidence=stored.text(raw.get("evidence"), f"{where}.evidence"),
                needs_tree=needs_tree,
                position=position,
                omitted_keys=[k for k in ("rationale", "needs_tree") if k not in raw],
            )
        )
    for position, raw in enumerate(_dicts(data.get("non_blockers"))):
        where = f"non_blockers[{position}]"
        items.append(
            RubricItem(
                revision=revision,
                kind=ItemKind.NON_BLOCKER,
                item_id=stored.item_id(raw.get("id"), f"{where}.id", f"N{position + 1}", taken),
                criterion=stored.text(raw.get("criterion"), f"{where}.criterion"),
                rationale=stored.text(raw.get("rationale"), f"{where}.rationale"),
                weight=stored.weight(raw.get("weight", 1), f"{where}.weight"),
                position=position,
                omitted_keys=[k for k in ("rationale", "weight") if k not in raw],
            )
        )
    return items


def _calibration_diffs(revision: RubricRevision, result: Draft, stored: _Stored) -> list[CalibrationDiff]:
    """The lazy diff (with the blockers it should break) and the alternative diff when there is one."""
    lazy = (result.rubric.get("calibration") or {}).get("lazy") or []
    breaks = lazy[0].get("breaks", []) if lazy and isinstance(lazy[0], dict) else []
    diffs = [
        CalibrationDiff(
            revision=revision,
            kind=DiffKind.LAZY,
            path=LAZY_DIFF_PATH,
            breaks=stored.strings(breaks, "calibration.lazy[0].breaks"),
            content=result.lazy_diff.encode("utf-8", "surrogateescape"),
        )
    ]
    if result.alt_diff is not None:
        diffs.append(
            CalibrationDiff(
                revision=revision,
                kind=DiffKind.ALT,
                path=ALT_DIFF_PATH,
                content=result.alt_diff.encode("utf-8", "surrogateescape"),
            )
        )
    return diffs


def _finish_draft(
    draft: RubricDraft, revision: RubricRevision, result: Draft, stored: _Stored, *, seconds: float
) -> None:
    """The drafting record marked done with the model's usage and every problem, and the audit entry."""
    now = timezone.now()
    RubricDraft.objects.filter(pk=draft.pk).update(
        revision=revision,
        model_id=result.model_id[:200],
        input_sha256=result.input_sha256,
        alt_description=result.alt_description,
        problems=stored.problems,
        input_tokens=min(
            result.usage.input_tokens + result.usage.cache_write_tokens + result.usage.cache_read_tokens,
            MAX_COUNT,
        ),
        output_tokens=min(result.usage.output_tokens, MAX_COUNT),
        cost_usd=result.usage.cost_usd,
        cost_known=result.usage.cost_known,
        drafted_at=now,
        seconds=seconds,
        step=DraftStep.DONE,
    )
    draft.refresh_from_db()
    audit.record(
        AuditVerb.DRAFTED,
        actor=draft.created_by,
        actor_label=result.model_id[:200],
        revision=revision,
        detail={
            "origin": Origin.MODEL,
            "drafting": draft.pk,
            "source": draft.source_label,
            "problems": len(stored.problems),
            "cost_usd": result.usage.cost_usd,
        },
    )
