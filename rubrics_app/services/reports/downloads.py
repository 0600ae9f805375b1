"""The report page's row downloads and what every download says about itself (§7): one row per run and one
per run × item × judge under the page's filters (``grading.RunRow`` and ``grading.ItemRow``, the columns
``rubric report --runs-out/--items-out`` writes), and the provenance of a download (``grading.Provenance``).

The runs are the report's: the current grades' report rows under the filters (``sums.current_rows``), each
read with its grade's metrics.json (the judges' verdicts, findings, reasons, cited lines and usage), its
run's repetition and its revision's number, in chunks; a run's prompt style and provisional flag are the
report's (its own style, else its task's; provisional unless its revision was approved or admitted since).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from grading import (
    GradedRun,
    ItemRow,
    Provenance,
    Report,
    RunDetails,
    RunRow,
    TaskRubric,
    item_rows,
    report_provenance,
    run_row,
)
from rubrics_app.models import Repository, RevisionStatus
from rubrics_app.services.reports.sums import Decoded, Tasks, current_rows, labels_by_grade, report_state

CHUNK = 500  # rows read from the database at a time


def human_labels(state: dict[str, Any]) -> dict[int, dict[str, str]]:
    """The human labels beside the items: per grade pk, item id -> label. The one read of the labels for the
    downloads (the label model's current form: one label per grade and item)."""
    return labels_by_grade(state)


def report_rubrics(repository: Repository, filters: dict[str, str]) -> list[TaskRubric]:
    """Each task's rubric revision (its number) and sha256 among the report's runs under the filters."""
    state = report_state(repository)
    rows = current_rows(repository, filters, Tasks.of(state))
    found = rows.values_list("task__task_id", "revision__number", "grade__rubric_sha256").distinct()
    return [TaskRubric(task=task, revision=number, rubric_sha256=sha or None) for task, number, sha in found]


def download_provenance(repository: Repository, filters: dict[str, str], report: Report) -> Provenance:
    """What a download of ``report`` (the repository's, under ``filters``) says about itself."""
    return report_provenance(
        report, repository=repository.name, filters=filters, rubrics=report_rubrics(repository, filters)
    )


def _details(metrics: Any) -> RunDetails | None:
    try:
        return RunDetails.model_validate(metrics.get("details")) if isinstance(metrics, dict) else None
    except ValidationError:
        return None


def report_rows(repository: Repository, filters: dict[str, str]) -> Iterator[tuple[RunRow, list[ItemRow]]]:
    """The rows of the report's runs under the filters, one run at a time (its row and its items' rows), by
    task, arm, model and repetition."""
    state = report_state(repository)
    tasks = Tasks.of(state)
    labels = human_labels(state)
    draft = {pk for pk, status in state["revisions"] if status == RevisionStatus.DRAFT}
    decoded = Decoded()
    query = (
        current_rows(repository, filters, tasks)
        .order_by("task__task_id", "arm", "model", "run__repetition", "name")
        .values_list(
            "grade_id", "task_id", "name", "arm", "model", "prompt_style", "status", "test_pass", "mergeable",
            "merge_score", "provisional", "revision_id", "revision__number", "grade__rubric_sha256",
            "run__repetition", "human_items", "human_checks", "grade__metrics",
        )
    )  # fmt: skip
    for (
        grade_pk, task_pk, name, arm, model, run_style, status, passed, mergeable, score, provisional,
        revision, number, sha, repetition, items, checks, metrics,
    ) in query.iterator(chunk_size=CHUNK):  # fmt: skip
        grade_labels = labels.get(grade_pk)
        graded = GradedRun(
            run=name,
            task=tasks.by_pk[task_pk][0],
            arm=arm,
            model=model,
            prompt_style=tasks.style(task_pk, run_style),
            status=status,
            test_pass=passed,
            mergeable=mergeable,
            merge_score=score,
            provisional=provisional and (revision is None or revision in draft),
            human_mergeable=decoded.human(items, checks, grade_labels),
        )
        details = _details(metrics)
        row = run_row(graded, details, repetition=repetition, rubric_revision=number, rubric_sha256=sha)
        yield row, item_rows(row, details, grade_labels)


def run_rows(repository: Repository, filters: dict[str, str]) -> Iterator[RunRow]:
    for row, _ in report_rows(repository, filters):
        yield row


def item_rows_of(repository: Repository, filters: dict[str, str]) -> Iterator[ItemRow]:
    for _, items in report_rows(repository, filters):
        yield from items
