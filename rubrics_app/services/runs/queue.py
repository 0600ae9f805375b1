"""The disagreement review queue (§4 "Two judges", §9 same-judge repeat agreement).

A queue entry is a (grade, item) pair: one run graded against one rubric content, and one of its items.
Only a run's current grade (``RunGrade.objects.current()``) has entries: an older grade is history.

- ``judges``: the primary and the second judge gave different verdicts;
- ``regrade``: a regrade (cache bypassed) gave a different verdict than the one the cache held;
- ``agreed``: both judges agreed, and the pair falls in the fixed random sample offered for labelling, so
  error rates are not measured only where the judges disagree.

Human verdicts are rows of their own (HumanVerdict) and never touch a grade or a judge's verdict. A label
belongs to (run, item, criterion wording, reviewer), not to a grade: it stands for every grade of the run
whose item has the same criterion text, so a re-grade or a re-admission that leaves the wording alone keeps
the pair reviewed. Each reviewer labels a pair once; a pair leaves a reviewer's list once they labelled it,
and the whole queue once the repository's ``labels_per_pair`` reviewers did (or a maintainer adjudicated it).
Reviewers who disagree send the pair to the adjudication list (:func:`adjudication_list`). A labeller may
undo their own most recent label (:func:`undo_label`): what it replaced is put back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from grading import ReviewerAgreement, reviewer_agreement, settled_verdict
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditDraw,
    HumanVerdict,
    ItemVerdict,
    JudgeRole,
    QueueKind,
    QueuePair,
    Repository,
    Role,
    RubricItem,
    RubricRevision,
    RunGrade,
    criterion_sha256,
)
from rubrics_app.services.paging import Page, page_of

FILTERS = ("task", "item", "arm", "model", "pattern", "human")
# The judges' verdict patterns (primary / second) and the human labels the list filters by.
PATTERNS = ("pass/fail", "fail/pass", "pass/pass", "fail/fail")
HUMAN_FILTERS = ("none", "pass", "fail", "unsure")


@dataclass(frozen=True)
class QueueEntry:
    grade_id: int
    item_id: str
    task_id: str
    arm: str
    model: str
    repetition: int
    verdict: str = ""  # the human verdict (pass / fail / unsure), "" while unlabelled
    primary: str = ""  # the primary judge's verdict on the pair ("" without one)
    second: str = ""  # the second judge's

    @property
    def key(self) -> tuple[int, str]:
        return (self.grade_id, self.item_id)

    @property
    def reviewed(self) -> bool:
        return bool(self.verdict)


QueuePage = Page[QueueEntry]  # the paging is services.paging's, shared with the task page's runs


# A pair's place in the queue's order (task, arm, model, repetition, grade, item): see _ORDER.
_SortKey = tuple[str, str, str, int, int, str]


@dataclass(frozen=True)
class Location:
    """Where one pair stands in a queue: its position (from 1; None when the pair is not in this queue
    under these filters) and the pairs either side. A pair outside the queue leads to the queue's first."""

    position: int | None
    previous: QueueEntry | None
    following: QueueEntry | None
    key: _SortKey | None = None  # the pair's place in the order (None: no such pair)


def _pairs(repository: Repository, kind: str, filters: dict[str, str]) -> QuerySet[QueuePair]:
    """The queue's pairs of the runs' current grades (``RunGrade.objects.current()``, carried on each pair as
    ``current``) under the filters: the stored rows (``QueuePair``), one per pair and kind, so a run graded
    again after a new admission is one run here, never two rows for the same pair."""
    if kind == QueueKind.AUDIT:
        # Every blocker the primary judge decided on the drawn runs, whatever the judges' agreement: each
        # pair once (its judges / agreed / one-judge row, not its regrade one).
        query = QueuePair.objects.filter(
            repository=repository, current=True, kind__in=(QueueKind.JUDGES, QueueKind.AGREED, "")
        ).filter(
            Exists(AuditDraw.objects.filter(run_id=OuterRef("grade__run_id"))),
            Exists(
                ItemVerdict.objects.filter(
                    judge__grade_id=OuterRef("grade_id"),
                    judge__role=JudgeRole.PRIMARY,
                    item_id=OuterRef("item_id"),
                    kind="blocker",
                )
            ),
        )
    else:
        query = QueuePair.objects.filter(repository=repository, kind=kind, current=True)
    if kind == QueueKind.AGREED:
        query = query.filter(sample_key__lt=settings.RUNS_AGREED_SAMPLE_PERCENT / 100)
    if filters.get("task"):
        query = query.filter(task_id=filters["task"])
    if filters.get("item"):
        query = query.filter(item_id=filters["item"])
    if filters.get("arm"):
        query = query.filter(arm=filters["arm"])
    if filters.get("model"):
        query = query.filter(model=filters["model"])
    if filters.get("pattern") in PATTERNS:
        primary, second = filters["pattern"].split("/")
        query = query.filter(
            Exists(_judge_verdict(JudgeRole.PRIMARY).filter(verdict=primary)),
            Exists(_judge_verdict(JudgeRole.SECOND).filter(verdict=second)),
        )
    if filters.get("human") == "none":
        query = query.exclude(Exists(_standing()))
    elif filters.get("human") in HUMAN_FILTERS:
        query = query.filter(Exists(_standing().filter(verdict=filters["human"])))
    return query


def _judge_verdict(role: str) -> QuerySet[ItemVerdict]:
    """The verdict of the judge in ``role`` on the outer QueuePair row's pair."""
    return ItemVerdict.objects.filter(
        judge__grade_id=OuterRef("grade_id"), judge__role=role, item_id=OuterRef("item_id")
    )


# The queue's order, and the key a page or a pair is found by: unique per (grade, item) within a kind; the
# order of the index the pairs are read by (QueuePair's queue_pair_order).
_ORDER = ("task_id", "arm", "model", "repetition", "grade_id", "item_id")


def _standing() -> QuerySet[HumanVerdict]:
    """The labels that stand for the outer QueuePair row: its run's, on its item, for its criterion's
    wording (a label for an earlier wording does not)."""
    return HumanVerdict.objects.filter(
        run_id=OuterRef("grade__run_id"),
        item_id=OuterRef("item_id"),
        criterion_sha256=OuterRef("criterion_sha256"),
    )


def _human(user_id: int | None = None) -> QuerySet[Any]:
    """The verdict shown for the outer pair: a maintainer's adjudication, else the user's own label, else
    the earliest label (one at most)."""
    own = Case(When(by_id=user_id, then=Value(0)), default=Value(1), output_field=IntegerField())
    labels: QuerySet[Any] = _standing().order_by("-adjudicated", own, "at", "pk")
    return labels.values("verdict")


def _label_count() -> Coalesce:
    """How many reviewers' labels (adjudications aside) stand for the outer pair."""
    counted = (
        _standing()
        .filter(adjudicated=False)
        .order_by()
        .values("item_id")
        .annotate(n=Count("pk"))
        .values("n")[:1]
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _settled(needed: int) -> Q:
    """The pairs out of the whole queue: adjudicated, or labelled by ``needed`` reviewers (on a query
    annotated with ``labels`` = :func:`_label_count`)."""
    return Q(Exists(_standing().filter(adjudicated=True))) | Q(labels__gte=needed)


def _beyond(key: _SortKey, lookup: str) -> Q:
    """The pairs after (``gt``) or before (``lt``) ``key`` in the queue's order: a row comparison spelt
    out, for every database."""
    condition = Q()
    for depth, field in enumerate(_ORDER):
        condition |= Q(**dict(zip(_ORDER[:depth], key, strict=False)), **{f"{field}__{lookup}": key[depth]})
    return condition


class Queue:
    """The (grade, item) pairs of one kind under the filters, sorted by task, arm, model, repetition and
    item; with ``unlabelled_only``, the list (its pages, positions and neighbours) leaves out the pairs a
    human has labelled, while the progress (``total``, ``reviewed_count``) still counts the whole queue.

    Nothing here loads the whole queue: each question (how many, how many reviewed, one page, where a pair
    stands and its neighbours) is one or a few queries on the stored pairs (``QueuePair``), each a range of
    one index, whose number does not grow with the queue.
    """

    def __init__(
        self,
        repository: Repository,
        kind: str,
        filters: dict[str, str],
        unlabelled_only: bool = False,
        user_id: int | None = None,
    ) -> None:
        self.repository = repository
        self.kind = kind
        self.filters = filters
        self.unlabelled_only = unlabelled_only
        self.user_id = user_id
        self._whole = _pairs(repository, kind, filters).annotate(labels=_label_count())
        settled = _settled(repository.labels_per_pair)
        self._settled = self._whole.filter(settled)
        # Still to label for this user: not settled, and not labelled by them already.
        mine = Exists(_standing().filter(adjudicated=False, by_id=user_id))
        self._unlabelled = self._whole.exclude(settled).exclude(mine)
        self._pairs = self._unlabelled if unlabelled_only else self._whole

    def _rows(self, query: QuerySet[QueuePair], order: tuple[str, ...] = _ORDER) -> QuerySet[Any]:
        return (
            query.annotate(
                human=Subquery(_human(self.user_id)[:1]),
                primary=Subquery(_judge_verdict(JudgeRole.PRIMARY).values("verdict")[:1]),
                second=Subquery(_judge_verdict(JudgeRole.SECOND).values("verdict")[:1]),
            )
            .order_by(*order)
            .values_list(*_ORDER, "human", "primary", "second")
        )

    @staticmethod
    def _entry(row: tuple[Any, ...]) -> QueueEntry:
        task_id, arm, model, repetition, grade_id, item_id, human, primary, second = row
        return QueueEntry(
            grade_id, item_id, task_id, arm, model, repetition, human or "", primary or "", second or ""
        )

    def _first(self, query: QuerySet[QueuePair], descending: bool = False) -> QueueEntry | None:
        order = tuple(f"-{field}" for field in _ORDER) if descending else _ORDER
        row = self._rows(query, order).first()
        return None if row is None else self._entry(row)

    def _key(self, grade_id: int, item_id: str) -> _SortKey | None:
        """The pair's place in the sort order, whether or not it is in this queue (None: no such pair).
        Every (grade, item) pair with a verdict has a stored row of some kind."""
        row = (
            QueuePair.objects.filter(grade_id=grade_id, item_id=item_id)
            .values_list(*_ORDER)
            .order_by("kind")
            .first()
        )
        return None if row is None else (row[0], row[1], row[2], row[3], row[4], row[5])

    def count(self) -> int:
        """Pairs in the list: the whole queue, or its unlabelled pairs with ``unlabelled_only``."""
        return self._pairs.count()

    def total(self) -> int:
        """Pairs of the whole queue, labelled or not."""
        return self.count() if not self.unlabelled_only else self._whole.count()

    def reviewed_count(self) -> int:
        """Pairs of the whole queue (not one page, not only the listed ones) that are settled: labelled by as
        many reviewers as the repository asks for, or adjudicated."""
        return self._settled.count()

    def page(self, number: int, size: int, total: int | None = None) -> QueuePage:
        """Page ``number`` (from 1; one past either end is the nearest page) of ``size`` entries."""
        total = self.count() if total is None else total
        return page_of(self._rows(self._pairs), number, size, total).map(self._entry)

    def first_unreviewed(self, after: Location | None = None) -> QueueEntry | None:
        """The first unlabelled pair of the whole queue; after a located pair, the first after it in the
        queue's order, else the first before it: the pair itself never (the "next unlabelled" key)."""
        key = None if after is None else after.key
        if key is None:
            return self._first(self._unlabelled)
        return self._first(self._unlabelled.filter(_beyond(key, "gt"))) or self._first(
            self._unlabelled.filter(_beyond(key, "lt"))
        )

    def locate(self, grade_id: int, item_id: str) -> Location:
        """The pair's position and neighbours, by its sort key: four queries at any queue size. A pair not
        in this list (filtered out, or labelled in the unlabelled-only list) has no position; its
        neighbours are the listed pairs either side of its place in the order."""
        here = self._first(self._pairs.filter(grade_id=grade_id, item_id=item_id))
        if here is not None:
            key: _SortKey | None = (
                here.task_id,
                here.arm,
                here.model,
                here.repetition,
                here.grade_id,
                here.item_id,
            )
        else:
            key = self._key(grade_id, item_id)
            if key is None:
                return Location(None, None, self._first(self._pairs))
        assert key is not None
        before = self._pairs.filter(_beyond(key, "lt"))
        return Location(
            position=None if here is None else before.count() + 1,
            previous=self._first(before, descending=True),
            following=self._first(self._pairs.filter(_beyond(key, "gt"))),
            key=key,
        )


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The values each filter can take: the tasks, items, arms and models that have verdicts in the runs'
    current grades (every pair with a verdict has a stored row, ``QueuePair``). One query: for each column,
    its distinct values walked one index probe each (a loose index scan, on the column's partial index),
    instead of a pass over every pair (hundreds of thousands at 100,000 runs)."""
    fields = {"task": "task_id", "item": "item_id", "arm": "arm", "model": "model"}
    quote = connection.ops.quote_name
    table, current, repository_id = quote(QueuePair._meta.db_table), quote("current"), quote("repository_id")
    where = f"{repository_id} = %s AND {current}"
    walks = []
    selects = []
    for name, field in fields.items():
        column = quote(field)
        walks.append(
            f"{name}(x) AS (SELECT MIN({column}) FROM {table} WHERE {where} UNION ALL "
            f"SELECT (SELECT MIN({column}) FROM {table} WHERE {where} AND {column} > {name}.x) "
            f"FROM {name} WHERE {name}.x IS NOT NULL)"
        )
        selects.append(f"SELECT '{name}', x FROM {name} WHERE x IS NOT NULL")
    sql = f"WITH RECURSIVE {', '.join(walks)} {' UNION ALL '.join(selects)}"
    choices: dict[str, list[str]] = {name: [] for name in fields}
    with connection.cursor() as cursor:
        cursor.execute(sql, [repository.pk] * (2 * len(fields)))
        for name, value in cursor.fetchall():
            choices[name].append(value)
    return {name: sorted(values) for name, values in choices.items()}


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


@dataclass(frozen=True)
class PriorLabel:
    """The label a new one replaced on the same pair: what undoing the new one puts back."""

    verdict: str
    note: str
    queue: str
    by_id: int | None
    at: datetime


@dataclass(frozen=True)
class LabelUndo:
    """What undoing one label needs: the pair, when the label was given (so a label given again since, by
    anyone, is never undone in its place) and what it replaced. The view keeps it in the labeller's
    session, which only the server reads and writes."""

    grade_id: int
    item_id: str
    at: datetime
    prior: PriorLabel | None

    def to_session(self) -> dict[str, Any]:
        prior = self.prior
        return {
            "grade_id": self.grade_id,
            "item_id": self.item_id,
            "at": self.at.isoformat(),
            "prior": None
            if prior is None
            else {
                "verdict": prior.verdict,
                "note": prior.note,
                "queue": prior.queue,
                "by_id": prior.by_id,
                "at": prior.at.isoformat(),
            },
        }

    @classmethod
    def from_session(cls, data: Any) -> LabelUndo | None:
        """The undo kept by :meth:`to_session`; None for anything else (an old or foreign session value)."""
        try:
            prior_data = data["prior"]
            prior = (
                None
                if prior_data is None
                else PriorLabel(
                    verdict=str(prior_data["verdict"]),
                    note=str(prior_data["note"]),
                    queue=str(prior_data["queue"]),
                    by_id=None if prior_data["by_id"] is None else int(prior_data["by_id"]),
                    at=datetime.fromisoformat(prior_data["at"]),
                )
            )
            return cls(int(data["grade_id"]), str(data["item_id"]), datetime.fromisoformat(data["at"]), prior)
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Labelled:
    human: HumanVerdict
    undo: LabelUndo


class NothingToUndo(Exception):
    """The label cannot be undone: it was given again since, or is not the labeller's most recent one."""


def pair_wording(grade: RunGrade, item_id: str) -> str:
    """The criterion hash the pair's labels are for: the one stored on its queue pair, else the item's text
    in the revision graded against ("" when the app does not hold it)."""
    stored = (
        QueuePair.objects.filter(grade=grade, item_id=item_id)
        .values_list("criterion_sha256", flat=True)
        .first()
    )
    if stored is not None:
        return stored
    item, exact = rubric_item_for(grade, item_id)
    return criterion_sha256(item.criterion) if item is not None and exact else ""


def inclusion_probability(queue: str, run_id: int) -> float:
    """The chance a pair had to be offered in ``queue``: every disagreement is, an agreed pair only within
    the sample share, an audited run's blockers with its draw's (models.AuditDraw)."""
    if queue == QueueKind.AUDIT:
        drawn = AuditDraw.objects.filter(run_id=run_id).values_list("inclusion_probability", flat=True)
        return drawn.first() or 1.0
    if queue == QueueKind.AGREED:
        return settings.RUNS_AGREED_SAMPLE_PERCENT / 100
    return 1.0


def standing_labels(grade: RunGrade, item_id: str) -> QuerySet[HumanVerdict]:
    """Every label that stands for the pair (each reviewer's, and an adjudication), oldest first."""
    return HumanVerdict.objects.filter(
        run_id=grade.run_id, item_id=item_id, criterion_sha256=pair_wording(grade, item_id)
    ).select_related("by")


def earlier_labels(grade: RunGrade, item_id: str) -> QuerySet[HumanVerdict]:
    """Labels on the pair given for an earlier wording of its criterion: kept and shown, never counted."""
    return (
        HumanVerdict.objects.filter(run_id=grade.run_id, item_id=item_id)
        .exclude(criterion_sha256=pair_wording(grade, item_id))
        .select_related("by")
    )


def label(
    grade: RunGrade,
    item_id: str,
    verdict: str,
    note: str,
    queue: str,
    by: Actor,
    *,
    adjudicate: bool = False,
    probability: float | None = None,
) -> Labelled:
    """Record (or replace) this reviewer's own label on a pair (reviewers and maintainers), for the
    criterion's wording the grade was graded against; with ``adjudicate``, a maintainer's ruling on a pair
    whose reviewers disagree. Only HumanVerdict is written; what it replaced comes back with it, for
    :func:`undo_label`."""
    repository = grade.run.task.repository
    by.require(Role.MAINTAINER if adjudicate else Role.REVIEWER, repository)
    wording = pair_wording(grade, item_id)
    user = by.recorded_user
    mine: dict[str, Any] = {
        "run_id": grade.run_id,
        "item_id": item_id,
        "criterion_sha256": wording,
        "adjudicated": adjudicate,
    }
    with transaction.atomic():
        previous = HumanVerdict.objects.select_for_update().filter(**mine, by=user).first()
        prior = (
            None
            if previous is None
            else PriorLabel(previous.verdict, previous.note, previous.queue, previous.by_id, previous.at)
        )
        human, _ = HumanVerdict.objects.update_or_create(
            **mine,
            by=user,
            defaults={
                "verdict": verdict,
                "note": note,
                "queue": queue,
                "at": timezone.now(),
                "diff_sha256": grade.run.diff_sha256,
                "inclusion_probability": inclusion_probability(queue, grade.run_id)
                if probability is None
                else probability,
            },
        )
    return Labelled(human, LabelUndo(grade.pk, item_id, human.at, prior))


def latest_label_of(repository: Repository, user_id: int | None) -> HumanVerdict | None:
    """The most recent label the user gave in the repository (None: the bare command line's)."""
    labels = HumanVerdict.objects.filter(run__task__repository=repository)
    labels = labels.filter(by__isnull=True) if user_id is None else labels.filter(by_id=user_id)
    return labels.order_by("-at", "-pk").first()


def undo_label(grade: RunGrade, undo: LabelUndo, by: Actor) -> HumanVerdict | None:
    """Take back the label ``undo`` names: only the labeller's own most recent label in the repository, and
    only as it was given (not once they labelled the pair again). Their label it replaced comes back (and is
    returned); a label that replaced none is removed (None). Other reviewers' labels are never touched."""
    repository = grade.run.task.repository
    by.require(Role.REVIEWER, repository)
    if undo.grade_id != grade.pk:
        raise NothingToUndo("that label is of another run")
    user_id = getattr(by.recorded_user, "pk", None)
    with transaction.atomic():
        human = (
            HumanVerdict.objects.select_for_update()
            .filter(run_id=grade.run_id, item_id=undo.item_id, by_id=user_id, at=undo.at)
            .first()
        )
        if human is None:
            raise NothingToUndo(
                f"{undo.item_id} on this run was labelled again since, or its label was already undone"
            )
        latest = latest_label_of(repository, user_id)
        if latest is None or latest.pk != human.pk:
            raise NothingToUndo("only your most recent label can be undone, and you have labelled since")
        if undo.prior is None:
            human.delete()
            return None
        prior = undo.prior
        human.verdict, human.note, human.queue = prior.verdict, prior.note, prior.queue
        human.at = prior.at
        human.save(update_fields=["verdict", "note", "queue", "at"])
        return human


@dataclass(frozen=True)
class Contested:
    """A pair whose reviewers disagree, on the adjudication list: each label as (reviewer, verdict, note)."""

    grade_id: int
    item_id: str
    task_id: str
    arm: str
    model: str
    repetition: int
    labels: list[tuple[str, str, str]]


ADJUDICATION_LIMIT = 200  # pairs the adjudication list shows at once


def adjudication_list(repository: Repository, limit: int = ADJUDICATION_LIMIT) -> list[Contested]:
    """The pairs of the runs' current grades whose reviewers gave different verdicts and that no maintainer
    has adjudicated yet, in the queue's order (at most ``limit``)."""
    contested = (
        HumanVerdict.objects.filter(run__task__repository=repository, adjudicated=False)
        .values("run_id", "item_id", "criterion_sha256")
        .annotate(n=Count("verdict", distinct=True))
        .filter(n__gt=1)
        .values_list("run_id", "item_id", "criterion_sha256")
    )
    keys = set(contested)
    if not keys:
        return []
    ruled = set(
        HumanVerdict.objects.filter(
            run__task__repository=repository, adjudicated=True, run_id__in={k[0] for k in keys}
        ).values_list("run_id", "item_id", "criterion_sha256")
    )
    keys -= ruled
    pairs = (
        QueuePair.objects.filter(repository=repository, current=True, grade__run_id__in={k[0] for k in keys})
        .values_list(*_ORDER, "grade__run_id", "criterion_sha256")
        .order_by(*_ORDER)
        .distinct()
    )
    found: list[Contested] = []
    seen: set[tuple[int, str]] = set()
    for task_id, arm, model, repetition, grade_id, item_id, run_id, wording in pairs:
        if (run_id, item_id, wording) not in keys or (grade_id, item_id) in seen:
            continue
        seen.add((grade_id, item_id))
        labels = [
            (getattr(h.by, "username", "") or "command line", h.verdict, h.note)
            for h in HumanVerdict.objects.filter(
                run_id=run_id, item_id=item_id, criterion_sha256=wording, adjudicated=False
            ).select_related("by")
        ]
        found.append(Contested(grade_id, item_id, task_id, arm, model, repetition, labels))
        if len(found) >= limit:
            break
    return found


def human_verdicts_by_grade(repository: Repository) -> list[tuple[int, str, str]]:
    """The settled human verdict (:func:`settled_verdict`) of every pair of the runs' current grades that
    has one, as (grade, item, verdict): what the report's judge-error figures take."""
    return settled_labels(repository)[0]


def settled_labels(
    repository: Repository,
) -> tuple[list[tuple[int, str, str]], list[tuple[int, str, str, float]]]:
    """:func:`human_verdicts_by_grade`, and how those pairs were drawn: (grade, item, queue, inclusion
    probability) of each label standing for a settled pair, for the report's weighting
    (grading.run_inclusion_probability). An audit label takes its run's draw as it stands now (a later
    draw in the stratum raises every drawn run's probability), the others the probability they recorded."""
    by_pair: dict[tuple[int, str, str], list[tuple[str, bool]]] = {}
    draws: dict[tuple[int, str, str], set[tuple[str, float]]] = {}
    columns = ["run_id", "item_id", "criterion_sha256", "verdict", "adjudicated"]
    columns += ["queue", "inclusion_probability"]
    for run_id, item_id, wording, verdict, adjudicated, queue, probability in (
        HumanVerdict.objects.filter(run__task__repository=repository)
        .order_by("run_id", "item_id", "at", "pk")
        .values_list(*columns)
    ):
        by_pair.setdefault((run_id, item_id, wording), []).append((verdict, adjudicated))
        draws.setdefault((run_id, item_id, wording), set()).add((queue, probability))
    if not by_pair:
        return [], []
    audited = dict(
        AuditDraw.objects.filter(repository=repository).values_list("run_id", "inclusion_probability")
    )
    found: set[tuple[int, str, str]] = set()
    drawn: set[tuple[int, str, str, float]] = set()
    for grade_id, run_id, item_id, wording in (
        QueuePair.objects.filter(repository=repository, current=True)
        # Only the labelled runs' pairs can be settled: said as a subquery, so SQLite starts from the few
        # labels instead of every current pair (1.3 s at 100,000 runs; PostgreSQL plans it either way).
        .filter(
            grade__run_id__in=HumanVerdict.objects.filter(run__task__repository=repository).values("run_id")
        )
        .filter(Exists(_standing()))
        .values_list("grade_id", "grade__run_id", "item_id", "criterion_sha256")
    ):
        settled = settled_verdict(by_pair.get((run_id, item_id, wording), []))
        if settled is not None:
            found.add((grade_id, item_id, settled))
            for queue, probability in draws[(run_id, item_id, wording)]:
                if queue == QueueKind.AUDIT:
                    probability = audited.get(run_id) or probability
                drawn.add((grade_id, item_id, queue, probability))
    return sorted(found), sorted(drawn)


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


def human_agreement(repository: Repository) -> ReviewerAgreement:
    """Agreement between reviewers (Krippendorff's α with its interval) over the pairs two or more of them
    labelled pass or fail, each pair for one wording of its criterion (adjudications and unsure left out)."""
    units: dict[tuple[int, str, str], list[str]] = {}
    for run_id, item_id, wording, verdict in (
        HumanVerdict.objects.filter(
            run__task__repository=repository, adjudicated=False, verdict__in=("pass", "fail")
        )
        .order_by("run_id", "item_id", "criterion_sha256", "pk")
        .values_list("run_id", "item_id", "criterion_sha256", "verdict")
    ):
        units.setdefault((run_id, item_id, wording), []).append(verdict)
    return reviewer_agreement(list(units.values()))
