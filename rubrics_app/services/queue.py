"""The disagreement review queue (§4 "Two judges", §9 same-judge repeat agreement).

A queue entry is a (grade, item) pair: one run graded against one rubric content, and one of its items.

- ``judges``: the primary and the second judge gave different verdicts;
- ``regrade``: a regrade (cache bypassed) gave a different verdict than the one the cache held;
- ``agreed``: both judges agreed, and the pair falls in the fixed random sample offered for labelling, so
  error rates are not measured only where the judges disagree.

Human verdicts are rows of their own (HumanVerdict) and never touch a grade or a judge's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import F, OuterRef, QuerySet, Subquery

from rubrics_app.models import Repository, RubricItem, RubricRevision
from rubrics_app.models_runs import HumanVerdict, ItemVerdict, JudgeRole, QueueKind, RunGrade

FILTERS = ("task", "item", "arm", "model")


@dataclass(frozen=True)
class QueueEntry:
    grade_id: int
    item_id: str
    task_id: str
    arm: str
    model: str
    repetition: int

    @property
    def key(self) -> tuple[int, str]:
        return (self.grade_id, self.item_id)


@dataclass
class Queue:
    kind: str
    entries: list[QueueEntry]
    reviewed: set[tuple[int, str]]

    @property
    def reviewed_count(self) -> int:
        return sum(1 for e in self.entries if e.key in self.reviewed)

    def position(self, grade_id: int, item_id: str) -> int | None:
        return next((i for i, e in enumerate(self.entries) if e.key == (grade_id, item_id)), None)

    def neighbours(self, grade_id: int, item_id: str) -> tuple[QueueEntry | None, QueueEntry | None]:
        index = self.position(grade_id, item_id)
        if index is None:
            return None, self.entries[0] if self.entries else None
        previous = self.entries[index - 1] if index > 0 else None
        following = self.entries[index + 1] if index + 1 < len(self.entries) else None
        return previous, following

    def next_unreviewed(self, after: tuple[int, str] | None = None) -> QueueEntry | None:
        start = 0
        if after is not None:
            index = self.position(*after)
            start = index + 1 if index is not None else 0
        ordered = self.entries[start:] + self.entries[:start]
        return next((e for e in ordered if e.key not in self.reviewed and e.key != after), None)


def _verdicts(repository: Repository, filters: dict[str, str]) -> QuerySet[ItemVerdict]:
    query = ItemVerdict.objects.filter(judge__grade__run__task__repository=repository)
    if filters.get("task"):
        query = query.filter(judge__grade__run__task__task_id=filters["task"])
    if filters.get("item"):
        query = query.filter(item_id=filters["item"])
    if filters.get("arm"):
        query = query.filter(judge__grade__run__arm=filters["arm"])
    if filters.get("model"):
        query = query.filter(judge__grade__run__model=filters["model"])
    return query


_ORDER = (
    "judge__grade__run__task__task_id",
    "judge__grade__run__arm",
    "judge__grade__run__model",
    "judge__grade__run__repetition",
    "judge__grade_id",
    "item_id",
)


def build_queue(repository: Repository, kind: str, filters: dict[str, str]) -> Queue:
    """Entries of one kind under the filters, sorted by task, arm, model, repetition and item."""
    query = _verdicts(repository, filters)
    if kind == QueueKind.REGRADE:
        query = query.exclude(previous_verdict="").exclude(previous_verdict=F("verdict"))
    else:
        second = ItemVerdict.objects.filter(
            judge__grade_id=OuterRef("judge__grade_id"),
            judge__role=JudgeRole.SECOND,
            item_id=OuterRef("item_id"),
        ).values("verdict")[:1]
        query = query.filter(judge__role=JudgeRole.PRIMARY).annotate(second=Subquery(second))
        query = query.exclude(second=None)
        if kind == QueueKind.AGREED:
            share = settings.RUNS_AGREED_SAMPLE_PERCENT / 100
            query = query.filter(second=F("verdict"), sample_key__lt=share)
        else:
            query = query.exclude(second=F("verdict"))
    rows = query.order_by(*_ORDER).values_list(*_ORDER[:4], "judge__grade_id", "item_id")
    entries: list[QueueEntry] = []
    seen: set[tuple[int, str]] = set()
    for task_id, arm, model, repetition, grade_id, item_id in rows:
        if (grade_id, item_id) in seen:  # a regrade of both judges disagreeing: one entry
            continue
        seen.add((grade_id, item_id))
        entries.append(QueueEntry(grade_id, item_id, task_id, arm, model, repetition))
    reviewed = set(
        HumanVerdict.objects.filter(grade__run__task__repository=repository).values_list(
            "grade_id", "item_id"
        )
    )
    return Queue(kind, entries, reviewed)


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The values each filter can take: the tasks, items, arms and models that have verdicts."""
    verdicts = _verdicts(repository, {})
    return {
        "task": sorted(set(verdicts.values_list("judge__grade__run__task__task_id", flat=True))),
        "item": sorted(set(verdicts.values_list("item_id", flat=True))),
        "arm": sorted(set(verdicts.values_list("judge__grade__run__arm", flat=True))),
        "model": sorted(set(verdicts.values_list("judge__grade__run__model", flat=True))),
    }


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


def label(grade: RunGrade, item_id: str, verdict: str, note: str, queue: str, by: Any) -> HumanVerdict:
    """Record (or replace) the human verdict on a pair. Only HumanVerdict is written."""
    human, _ = HumanVerdict.objects.update_or_create(
        grade=grade, item_id=item_id, defaults={"verdict": verdict, "note": note, "queue": queue, "by": by}
    )
    return human


def disagreement_counts(repository: Repository) -> dict[str, int]:
    return {kind: len(build_queue(repository, kind, {}).entries) for kind in QueueKind.values}


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
    from grading.outcome import RunDetails

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
