"""Every human label of a repository out, and labels made elsewhere in, as the labels file
(grading.LabelRow: CSV or JSONL). The import is all or nothing: every bad line is named and nothing is
written unless every line is good."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet

from grading import LabelRow, LabelRowsError, read_label_rows
from rubrics_app.access import Actor
from rubrics_app.models import AgentRun, HumanVerdict, Membership, Repository, Role

EXPORT_CHUNK = 2000


# The filters of a labels list (the API's): each an exact match on the label's run, item, reviewer or queue.
LABEL_FILTERS = ("task", "arm", "model", "item", "reviewer", "queue", "verdict")
_FILTER_FIELDS = {
    "task": "run__task__task_id",
    "arm": "run__arm",
    "model": "run__model",
    "item": "item_id",
    "reviewer": "by__username",
    "queue": "queue",
    "verdict": "verdict",
}


def labels_of(repository: Repository, filters: dict[str, str] | None = None) -> QuerySet[HumanVerdict]:
    """The repository's labels (each reviewer's and each adjudication, for every wording) under the filters
    (:data:`LABEL_FILTERS`; ``reviewer=""`` is not a filter), unordered, ready for :func:`label_row`."""
    labels = HumanVerdict.objects.filter(run__task__repository=repository)
    for name, value in (filters or {}).items():
        if value:
            labels = labels.filter(**{_FILTER_FIELDS[name]: value})
    return labels.select_related("run__task", "by").defer(
        "run__run_json", "run__grade_json", "run__files_sha256"
    )


def label_row(label: HumanVerdict) -> LabelRow:
    """One label as the labels file's row: the one definition of its columns' values."""
    run = label.run
    return LabelRow(
        run=run.source or f"{run.task.task_id}/{run.arm}/{run.model}/{run.repetition}",
        task=run.task.task_id,
        arm=run.arm,
        model=run.model,
        repetition=run.repetition,
        item=label.item_id,
        criterion_sha256=label.criterion_sha256,
        diff_sha256=label.diff_sha256,
        reviewer=label.by.get_username() if label.by is not None else "",
        verdict=label.verdict,
        note=label.note,
        time=label.at,
        inclusion_probability=label.inclusion_probability,
        adjudicated=label.adjudicated,
        queue=label.queue,
    )


def label_rows(repository: Repository, filters: dict[str, str] | None = None) -> Iterator[LabelRow]:
    """Every label of the repository (under ``filters``, as :func:`labels_of`), in the order of runs and
    items, read a chunk at a time."""
    labels = labels_of(repository, filters).order_by(
        "run__task__task_id", "run__arm", "run__model", "run__repetition", "item_id", "at", "pk"
    )
    for label in labels.iterator(chunk_size=EXPORT_CHUNK):
        yield label_row(label)


@dataclass(frozen=True)
class LabelImport:
    created: int
    replaced: int


class LabelImportFailed(Exception):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:5]))
        self.problems = problems


def import_labels(repository: Repository, data: bytes, name: str, by: Actor) -> LabelImport:
    """The labels file's rows as labels of the repository (a maintainer's act), all or nothing. Each row
    must name a run of the repository (task, arm, model, repetition) whose diff is the row's, and a
    reviewer who is a member of it (a maintainer for an adjudication; empty: the command line). A row for
    a pair, wording and reviewer that already has a label replaces it."""
    by.require(Role.MAINTAINER, repository)
    try:
        rows = read_label_rows(data, name)
    except LabelRowsError as error:
        raise LabelImportFailed(error.problems) from None
    keyed = _keyed_rows(rows, name, _runs_by_key(repository), _Reviewers.named_in(repository, rows))
    return _store_labels(keyed)


_LabelKey = tuple[int, str, str, int | None, bool]  # run pk, item, wording, reviewer pk, adjudicated


def _runs_by_key(repository: Repository) -> dict[tuple[str, str, str, int], tuple[int, str]]:
    """The repository's runs by (task, arm, model, repetition): their pk and diff sha."""
    return {
        (task, arm, model, repetition): (pk, diff)
        for pk, task, arm, model, repetition, diff in AgentRun.objects.filter(task__repository=repository)
        .values_list("pk", "task__task_id", "arm", "model", "repetition", "diff_sha256")
        .iterator(chunk_size=EXPORT_CHUNK)
    }


@dataclass(frozen=True)
class _Reviewers:
    """The reviewers the rows name: members of the repository (user pk, role) and superusers (user pk)."""

    members: dict[str, tuple[int, str]]
    superusers: dict[str, int]

    @classmethod
    def named_in(cls, repository: Repository, rows: list[LabelRow]) -> _Reviewers:
        named = {row.reviewer for row in rows if row.reviewer}
        members = {
            username: (pk, role)
            for username, pk, role in Membership.objects.filter(
                repository=repository, user__username__in=named
            ).values_list("user__username", "user_id", "role")
        }
        superusers = dict(
            get_user_model()
            .objects.filter(username__in=named, is_superuser=True)
            .values_list("username", "pk")
        )
        return cls(members, superusers)

    def user_of(self, row: LabelRow) -> tuple[int | None, str | None]:
        """The pk of the row's reviewer (None: the command line), or the problem with them."""
        if not row.reviewer:
            return None, None
        if row.reviewer in self.superusers:
            return self.superusers[row.reviewer], None
        member = self.members.get(row.reviewer)
        if member is None or member[1] not in (Role.REVIEWER, Role.MAINTAINER):
            return None, f"reviewer: {row.reviewer!r} labels nothing in this repository"
        if row.adjudicated and member[1] != Role.MAINTAINER:
            return None, f"adjudicated: {row.reviewer!r} is not a maintainer"
        return member[0], None


def _keyed_rows(
    rows: list[LabelRow],
    name: str,
    runs: dict[tuple[str, str, str, int], tuple[int, str]],
    reviewers: _Reviewers,
) -> dict[_LabelKey, LabelRow]:
    """Each row under the label it writes; LabelImportFailed with every row's problem if any has one."""
    problems: list[str] = []
    keyed: dict[_LabelKey, LabelRow] = {}
    for number, row in enumerate(rows, start=1):
        where = f"{name}: row {number}"
        found = runs.get((row.task, row.arm, row.model, row.repetition))
        if found is None:
            run_name = f"{row.task} {row.arm or '-'} / {row.model or '-'} #{row.repetition}"
            problems.append(f"{where}: run: no run {run_name} here")
            continue
        run_id, diff = found
        if diff != row.diff_sha256:
            problems.append(
                f"{where}: diff_sha256: the run's diff is another ({diff[:12]}…): labelled elsewhere"
            )
            continue
        user_id, problem = reviewers.user_of(row)
        if problem is not None:
            problems.append(f"{where}: {problem}")
            continue
        key = (run_id, row.item, row.criterion_sha256, user_id, row.adjudicated)
        if key in keyed:
            problems.append(f"{where}: the same reviewer's label on the same pair and wording as another row")
            continue
        keyed[key] = row
    if problems:
        raise LabelImportFailed(problems)
    return keyed


def _store_labels(keyed: dict[_LabelKey, LabelRow]) -> LabelImport:
    """The labels written in one transaction, each replacing the one under its key."""
    created = replaced = 0
    with transaction.atomic():
        for (run_id, item, wording, user_id, adjudicated), row in keyed.items():
            _, made = HumanVerdict.objects.update_or_create(
                run_id=run_id,
                item_id=item,
                criterion_sha256=wording,
                by_id=user_id,
                adjudicated=adjudicated,
                defaults={
                    "diff_sha256": row.diff_sha256,
                    "verdict": row.verdict,
                    "note": row.note,
                    "queue": row.queue,
                    "at": row.time,
                    # A file that does not say how its labels were drawn: each as if drawn with certainty.
                    "inclusion_probability": 1.0
                    if row.inclusion_probability is None
                    else row.inclusion_probability,
                },
            )
            created += made
            replaced += not made
    return LabelImport(created, replaced)
