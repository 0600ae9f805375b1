"""The disagreement review queue (§4 "Two judges", §9 same-judge repeat agreement).

A queue entry is a (grade, item) pair: one run graded against one rubric content, and one of its items.
Only a run's current grade (``RunGrade.objects.current()``) has entries: an older grade is history.

- ``judges``: the primary and the second judge gave different verdicts;
- ``regrade``: a regrade (cache bypassed) gave a different verdict than the one the cache held;
- ``agreed``: both judges agreed, and the pair falls in the fixed random sample offered for labelling, so
  error rates are not measured only where the judges disagree.

Human verdicts are rows of their own (HumanVerdict) and never touch a grade or a judge's verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from rubrics_app.access import Actor
from rubrics_app.models import (
    HumanVerdict,
    ItemVerdict,
    JudgeRole,
    QueueKind,
    Repository,
    Role,
    RubricItem,
    RubricRevision,
    RunGrade,
)

FILTERS = ("task", "item", "arm", "model")


@dataclass(frozen=True)
class QueueEntry:
    grade_id: int
    item_id: str
    task_id: str
    arm: str
    model: str
    repetition: int
    reviewed: bool = False

    @property
    def key(self) -> tuple[int, str]:
        return (self.grade_id, self.item_id)


@dataclass(frozen=True)
class QueuePage:
    entries: list[QueueEntry]
    number: int  # from 1
    pages: int  # at least 1, even for an empty queue
    size: int

    @property
    def first_position(self) -> int:
        """The position in the whole queue (from 1) of the page's first entry."""
        return (self.number - 1) * self.size + 1

    @property
    def previous_number(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next_number(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


@dataclass(frozen=True)
class Location:
    """Where one pair stands in a queue: its position (from 1; None when the pair is not in this queue
    under these filters) and the pairs either side. A pair outside the queue leads to the queue's first."""

    position: int | None
    previous: QueueEntry | None
    following: QueueEntry | None


def _verdicts(repository: Repository, filters: dict[str, str]) -> QuerySet[ItemVerdict]:
    """The verdicts of the runs' current grades (``RunGrade.objects.current()``) under the filters: a run
    graded again after a new admission is one run here, never two rows for the same pair."""
    current = RunGrade.objects.filter(run__task__repository=repository).current()
    query = ItemVerdict.objects.filter(judge__grade__in=current)
    if filters.get("task"):
        query = query.filter(judge__grade__run__task__task_id=filters["task"])
    if filters.get("item"):
        query = query.filter(item_id=filters["item"])
    if filters.get("arm"):
        query = query.filter(judge__grade__run__arm=filters["arm"])
    if filters.get("model"):
        query = query.filter(judge__grade__run__model=filters["model"])
    return query


# The queue's order, and the key a page or a pair is found by: unique per (grade, item).
_ORDER = (
    "judge__grade__run__task__task_id",
    "judge__grade__run__arm",
    "judge__grade__run__model",
    "judge__grade__run__repetition",
    "judge__grade_id",
    "item_id",
)
_SortKey = tuple[str, str, str, int, int, str]


def _beyond(key: _SortKey, lookup: str) -> Q:
    """The pairs after (``gt``) or before (``lt``) ``key`` in the queue's order: a row comparison spelt
    out, for every database."""
    condition = Q()
    for depth, field in enumerate(_ORDER):
        condition |= Q(**dict(zip(_ORDER[:depth], key, strict=False)), **{f"{field}__{lookup}": key[depth]})
    return condition


class Queue:
    """The (grade, item) pairs of one kind under the filters, sorted by task, arm, model, repetition and
    item.

    Nothing here loads the whole queue: each question (how many, how many reviewed, one page, where a pair
    stands and its neighbours) is one or a few queries whose number does not grow with the queue.
    """

    def __init__(self, repository: Repository, kind: str, filters: dict[str, str]) -> None:
        self.repository = repository
        self.kind = kind
        self.filters = filters
        self._pairs = self._query()

    def _query(self) -> QuerySet[ItemVerdict]:
        query = _verdicts(self.repository, self.filters)
        if self.kind == QueueKind.REGRADE:
            # Either judge's regrade may disagree with its cache: the pair is one entry (distinct below).
            return query.exclude(previous_verdict="").exclude(previous_verdict=F("verdict"))
        second = ItemVerdict.objects.filter(
            judge__grade_id=OuterRef("judge__grade_id"),
            judge__role=JudgeRole.SECOND,
            item_id=OuterRef("item_id"),
        )
        query = query.filter(judge__role=JudgeRole.PRIMARY)
        if self.kind == QueueKind.AGREED:
            share = settings.RUNS_AGREED_SAMPLE_PERCENT / 100
            return query.filter(Exists(second.filter(verdict=OuterRef("verdict"))), sample_key__lt=share)
        return query.filter(Exists(second.exclude(verdict=OuterRef("verdict"))))

    def _rows(self, query: QuerySet[ItemVerdict], order: tuple[str, ...] = _ORDER) -> QuerySet[Any]:
        reviewed = HumanVerdict.objects.filter(
            grade_id=OuterRef("judge__grade_id"), item_id=OuterRef("item_id")
        )
        return (
            query.annotate(reviewed=Exists(reviewed))
            .order_by(*order)
            .values_list(*_ORDER, "reviewed")
            .distinct()
        )

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> QueueEntry:
        task_id, arm, model, repetition, grade_id, item_id, reviewed = row
        return QueueEntry(grade_id, item_id, task_id, arm, model, repetition, bool(reviewed))

    def _first(self, query: QuerySet[ItemVerdict], descending: bool = False) -> QueueEntry | None:
        order = tuple(f"-{field}" for field in _ORDER) if descending else _ORDER
        row = self._rows(query, order).first()
        return None if row is None else self._entry(row)

    def _count(self, query: QuerySet[ItemVerdict]) -> int:
        return query.order_by().values_list("judge__grade_id", "item_id").distinct().count()

    def count(self) -> int:
        return self._count(self._pairs)

    def reviewed_count(self) -> int:
        """Pairs of the whole queue (not one page) that carry a human verdict."""
        reviewed = HumanVerdict.objects.filter(
            grade_id=OuterRef("judge__grade_id"), item_id=OuterRef("item_id")
        )
        return self._count(self._pairs.filter(Exists(reviewed)))

    def page(self, number: int, size: int, total: int | None = None) -> QueuePage:
        """Page ``number`` (from 1; one past either end is the nearest page) of ``size`` entries."""
        total = self.count() if total is None else total
        pages = max(1, math.ceil(total / size))
        number = min(max(1, number), pages)
        start = (number - 1) * size
        rows = self._rows(self._pairs)[start : start + size]
        return QueuePage([self._entry(row) for row in rows], number, pages, size)

    def first_unreviewed(self) -> QueueEntry | None:
        reviewed = HumanVerdict.objects.filter(
            grade_id=OuterRef("judge__grade_id"), item_id=OuterRef("item_id")
        )
        return self._first(self._pairs.filter(~Exists(reviewed)))

    def locate(self, grade_id: int, item_id: str) -> Location:
        """The pair's position and neighbours, by its sort key: four queries at any queue size."""
        here = self._first(self._pairs.filter(judge__grade_id=grade_id, item_id=item_id))
        if here is None:
            return Location(None, None, self._first(self._pairs))
        key: _SortKey = (here.task_id, here.arm, here.model, here.repetition, here.grade_id, here.item_id)
        before = self._pairs.filter(_beyond(key, "lt"))
        return Location(
            position=self._count(before) + 1,
            previous=self._first(before, descending=True),
            following=self._first(self._pairs.filter(_beyond(key, "gt"))),
        )


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The values each filter can take: the tasks, items, arms and models that have verdicts. One pass over
    the verdicts for the four (each a pass of its own took seconds at 100,000 runs)."""
    fields = {
        "task": "judge__grade__run__task__task_id",
        "item": "item_id",
        "arm": "judge__grade__run__arm",
        "model": "judge__grade__run__model",
    }
    rows = _verdicts(repository, {}).order_by().values_list(*fields.values()).distinct()
    columns = list(zip(*rows, strict=True)) or [() for _ in fields]
    return {name: sorted(set(column)) for name, column in zip(fields, columns, strict=True)}


def rubric_revision_for(grade: RunGrade) -> tuple[RubricRevision | None, bool]:
    """The revision whose item text the screen shows, and whether it is exactly the content graded against
    (else it is the task's admitted revision, shown for reference)."""
    if grade.revision_id is not None:
        return grade.revision, True
    return grade.run.task.admitted_revision(), False


def rubric_item_for(grade: RunGrade, item_id: str) -> tuple[RubricItem | None, bool]:
    revision, exact = rubric_revision_for(grade)
    if revision is None:
        return None, False
    return revision.items.filter(item_id=item_id).first(), exact


def label(grade: RunGrade, item_id: str, verdict: str, note: str, queue: str, by: Actor) -> HumanVerdict:
    """Record (or replace) the human verdict on a pair (reviewers and maintainers). Only HumanVerdict is
    written."""
    by.require(Role.REVIEWER, grade.run.task.repository)
    human, _ = HumanVerdict.objects.update_or_create(
        grade=grade,
        item_id=item_id,
        defaults={"verdict": verdict, "note": note, "queue": queue, "by": by.user},
    )
    return human


def disagreement_counts(repository: Repository) -> dict[str, int]:
    return {kind: Queue(repository, kind, {}).count() for kind in QueueKind.values}


def human_mergeable(grade: RunGrade, labels: dict[str, str]) -> bool | None:
    """A human's verdict on whether the run is mergeable, from the pairs they labelled (``labels``: item id ->
    pass / fail / unsure), for the report's judge-error figures.

    Defined only where the primary judge decided the outcome (the test gate held and the judge ran) and a
    human gave pass or fail on every blocker the judge measured: then the run is mergeable to the human when
    the deterministic checks (scope, test integrity) passed and no blocker failed. Anything less (an unsure,
    an unlabelled blocker, a run settled before judging) is None: a judge-free or half-labelled run would
    say nothing about the judge's error.
    """
    basis = human_label_basis(grade.status, (grade.metrics or {}).get("details"))
    return None if basis is None else mergeable_from_labels(*basis, labels)


def human_label_basis(status: str, details_data: Any) -> tuple[list[str], bool] | None:
    """What a human verdict on mergeable rests on, from a grade's status and metrics.json details: the
    blockers the primary judge measured (each needs a human pass or fail) and whether scope and test
    integrity passed. None when no labels can give a verdict (see :func:`human_mergeable`)."""
    from grading import RunDetails

    if status not in ("mergeable", "not_mergeable") or not isinstance(details_data, dict):
        return None
    assessment = RunDetails.model_validate(details_data).assessment
    if assessment is None or assessment.judge_failure is not None:
        return None
    judged = assessment.blockers_passed + assessment.blockers_failed
    if not judged:
        return None
    return list(judged), bool(assessment.in_scope and assessment.integrity_ok)


def mergeable_from_labels(judged: list[str], checks_passed: bool, labels: dict[str, str]) -> bool | None:
    """The human verdict on mergeable given :func:`human_label_basis` and the labels: None unless every
    judged blocker has a pass or fail."""
    human = [labels.get(item_id) for item_id in judged]
    if any(verdict not in ("pass", "fail") for verdict in human):
        return None
    return checks_passed and all(v == "pass" for v in human)
