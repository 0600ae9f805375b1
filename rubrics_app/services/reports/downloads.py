"""The report page's row downloads and what every download says about itself (§7): one row per run and one
per run × item × judge under the page's filters (``grading.RunRow`` and ``grading.ItemRow``, the columns
``rubric report --runs-out/--items-out`` writes), and the provenance of a download (``grading.Provenance``).

The runs are the report's: the current grades' report rows under the filters (``sums.current_rows``), each
read with its grade's metrics.json (the judges' verdicts, findings, reasons, cited lines and usage), its
run's repetition and its revision's number, in chunks; a run's prompt style and provisional flag are the
report's (its own style, else its task's; provisional unless its revision was approved or admitted since).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
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
from rubrics_app.models import Repository, RevisionStatus, Task
from rubrics_app.services.reports.report import cutoff_dates
from rubrics_app.services.reports.sums import (
    Decoded,
    Tasks,
    current_rows,
    draws_by_grade,
    labels_by_grade,
    report_state,
)

CHUNK = 500  # rows read from the database at a time


def human_labels(state: dict[str, Any]) -> dict[int, dict[str, str]]:
    """The human labels beside the items: per grade pk, item id -> label. The one read of the labels for the
    downloads: each pair's settled verdict (services.runs.queue.human_verdicts_by_grade), as the report's."""
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
    for row, items, *_ in _report_runs(repository, filters):
        yield row, items


def _report_runs(
    repository: Repository, filters: dict[str, str]
) -> Iterator[tuple[RunRow, list[ItemRow], dict[str, Any], float | None]]:
    """:func:`report_rows`, each with the metrics.json its grade holds and the chance its run had of being
    labelled (None: no human verdict)."""
    state = report_state(repository)
    tasks = Tasks.of(state)
    labels = human_labels(state)
    draws = draws_by_grade(state)
    draft = {pk for pk, status in state["revisions"] if status == RevisionStatus.DRAFT}
    decoded = Decoded()
    query = (
        current_rows(repository, filters, tasks)
        .order_by("task__task_id", "arm", "model", "run__repetition", "name")
        .values_list(
            "grade_id", "task_id", "name", "arm", "model", "prompt_style", "status", "test_pass", "mergeable",
            "merge_score", "provisional", "revision_id", "revision__number", "grade__rubric_sha256",
            "run__repetition", "human_items", "human_checks", "grade__metrics", "run__run_json",
        )
    )  # fmt: skip
    for (
        grade_pk, task_pk, name, arm, model, run_style, status, passed, mergeable, score, provisional,
        revision, number, sha, repetition, items, checks, metrics, run_json,
    ) in query.iterator(chunk_size=CHUNK):  # fmt: skip
        grade_labels = labels.get(grade_pk)
        human = decoded.human(items, checks, grade_labels)
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
            human_mergeable=human,
        )
        details = _details(metrics)
        row = run_row(graded, details, repetition=repetition, rubric_revision=number, rubric_sha256=sha)
        files = {"run.json": run_json, "metrics.json": metrics}
        probability = decoded.label_probability(items, human, draws.get(grade_pk, {}))
        yield row, item_rows(row, details, grade_labels), files, probability


def run_rows(repository: Repository, filters: dict[str, str]) -> Iterator[RunRow]:
    for row, _ in report_rows(repository, filters):
        yield row


def item_rows_of(repository: Repository, filters: dict[str, str]) -> Iterator[ItemRow]:
    for _, items in report_rows(repository, filters):
        yield from items


# --- the runs as files ----------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _task_json(task: Task) -> dict[str, Any]:
    """task.json as ``rubric report --tasks`` reads it: id, prompt style(s), gate and base date."""
    data: dict[str, Any] = {"id": task.task_id, "gate": list(task.gate or [])}
    if task.spec_prompt:
        data.update(prompt=task.spec_prompt, prompt_style="spec")
    elif task.issue_prompt:
        data.update(prompt=task.issue_prompt, prompt_style="issue")
    if task.spec_prompt and task.issue_prompt:
        data["prompts"] = {"spec": task.spec_prompt, "issue": task.issue_prompt}
    if task.base_date:
        data["base_date"] = task.base_date
    return data


def runs_export(repository: Repository, filters: dict[str, str], provenance: Provenance) -> bytes:
    """The report's runs under the filters as files, in a zip: ``runs/<n>-<task>-<arm>-<model>-<rep>/``
    holding each run's run.json and its current grade's metrics.json, ``tasks/<task>/task.json``, the
    human verdicts on mergeable as ``labels.json`` and the training cutoffs as ``cutoffs.json`` (when set),
    and ``provenance.json``. ``rubric report --tasks tasks --labels labels.json [--cutoffs cutoffs.json]
    runs/*`` in the unpacked folder reproduces the page's report, but for the runs' names."""

    def dump(data: Any) -> str:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    buffer = io.BytesIO()
    labels: dict[str, Any] = {}
    tasks: set[str] = set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for n, (row, _, files, probability) in enumerate(_report_runs(repository, filters)):
            parts = [f"{n:05d}", row.task, row.arm or "-", row.model or "-", str(row.repetition)]
            folder = "runs/" + "-".join(_UNSAFE.sub("_", p) for p in parts)[:200]
            for name, data in files.items():
                archive.writestr(f"{folder}/{name}", dump(data))
            if row.human_mergeable is not None:
                # With the chance the run had of being labelled: the report weighs the labels by it.
                labels[folder] = (
                    row.human_mergeable
                    if probability is None
                    else {"mergeable": row.human_mergeable, "inclusion_probability": probability}
                )
            tasks.add(row.task)
        for task in Task.objects.filter(repository=repository, task_id__in=sorted(tasks)).order_by("task_id"):
            archive.writestr(f"tasks/{task.task_id}/task.json", dump(_task_json(task)))
        archive.writestr("labels.json", dump(labels))
        cutoffs = cutoff_dates(repository, [])
        if cutoffs is not None:
            archive.writestr("cutoffs.json", dump({m: d.isoformat() for m, d in cutoffs.items()}))
        archive.writestr("provenance.json", dump(provenance.model_dump(mode="json")))
    return buffer.getvalue()
