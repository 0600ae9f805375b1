"""The review queue's pairs derived from the item verdicts on every read, as the queue read them before they
were stored (``QueuePair``): what the tests compare the stored pairs with."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, F, OuterRef

from rubrics_app.models import ItemVerdict, JudgeRole, QueuePair

# A pair's identity, its grade's current marker and its sort key, read through the verdict's judge.
_FIELDS = (
    "judge__grade_id",
    "item_id",
    "judge__grade__is_current",
    "judge__grade__run__task__task_id",
    "judge__grade__run__arm",
    "judge__grade__run__model",
    "judge__grade__run__repetition",
)

Pair = tuple[Any, ...]  # (kind, grade, item, current, task, arm, model, repetition, sample key or None)


def derived_pairs() -> set[Pair]:
    """Every grade's pairs by the rule: ``judges`` where the primary and the second judge differ, ``agreed``
    where they agree (with the primary verdict's sample key), ``regrade`` where either judge's regrade
    differs from what its cache held, ``""`` for a pair that has verdicts and is in neither of the first
    two."""
    second = ItemVerdict.objects.filter(
        judge__grade_id=OuterRef("judge__grade_id"), judge__role=JudgeRole.SECOND, item_id=OuterRef("item_id")
    )
    primary = ItemVerdict.objects.filter(judge__role=JudgeRole.PRIMARY)
    pairs: set[Pair] = set()
    for kind, query in (
        ("judges", primary.filter(Exists(second.exclude(verdict=OuterRef("verdict"))))),
        ("agreed", primary.filter(Exists(second.filter(verdict=OuterRef("verdict"))))),
    ):
        pairs |= {
            (kind, *row[:-1], row[-1] if kind == "agreed" else None)
            for row in query.values_list(*_FIELDS, "sample_key")
        }
    regrade = ItemVerdict.objects.exclude(previous_verdict="").exclude(previous_verdict=F("verdict"))
    pairs |= {("regrade", *row, None) for row in regrade.values_list(*_FIELDS).distinct()}
    judged = {pair[1:3] for pair in pairs if pair[0] in ("judges", "agreed")}
    pairs |= {
        ("", *row, None)
        for row in ItemVerdict.objects.values_list(*_FIELDS).distinct()
        if (row[0], row[1]) not in judged
    }
    return pairs


def stored_pairs() -> set[Pair]:
    """The stored pairs, in the same shape (the sample key only where the queue reads it: agreed)."""
    rows = QueuePair.objects.values_list(
        "kind", "grade_id", "item_id", "current", "task_id", "arm", "model", "repetition", "sample_key"
    )
    return {(*row[:8], row[8] if row[0] == "agreed" else None) for row in rows}
