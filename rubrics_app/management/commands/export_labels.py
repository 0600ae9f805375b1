"""manage.py export_labels --repository NAME [--out FILE] [--format jsonl|csv|runs]

Every human label of the repository as the labels file (grading.LabelRow: one row per reviewer's label,
with its run, item, criterion and diff hashes, reviewer, verdict, note, time and inclusion probability),
as JSONL (the default) or CSV: what the queue page's download gives, and what ``import_labels`` and
``rubric report --labels`` read. ``--format runs`` (or an --out file ending .json) writes the older
summary instead, ``{"<run directory>": {"mergeable": true|false, "inclusion_probability": p}}``: a human's
verdict on whether each run is mergeable (see services.runs.queue.human_mergeable for when a run gets one)
and the chance the run had of being labelled (grading.run_inclusion_probability), which the report weighs
by.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.template.defaultfilters import pluralize

from grading import label_format, run_inclusion_probability, write_label_rows
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import Repository, RunGrade
from rubrics_app.services.runs.labels_io import label_rows
from rubrics_app.services.runs.queue import human_label_basis, human_mergeable, settled_labels


class Command(BaseCommand):
    help = "Write every human label of the repository (JSONL or CSV), or each run's human verdict (runs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--out", type=Path, help="the file to write (default: standard output)")
        parser.add_argument(
            "--format",
            choices=("jsonl", "csv", "runs"),
            help="jsonl (default), csv, or runs: {run: {mergeable, inclusion_probability}}; "
            "default from --out's ending",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        out: Path | None = options["out"]
        fmt = options["format"]
        if fmt is None and out is not None:
            fmt = label_format(out.name) or ("runs" if out.name.lower().endswith(".json") else None)
        fmt = fmt or "jsonl"
        if fmt == "runs":
            labels = _run_verdicts(repository, self.stderr.write)
            text = json.dumps(labels, indent=2, sort_keys=True) + "\n"
            count = len(labels)
        else:
            rows = list(label_rows(repository))
            text = "".join(write_label_rows(rows, "csv" if fmt == "csv" else "jsonl"))
            count = len(rows)
        if out is None:
            self.stdout.write(text, ending="")
        else:
            out.write_text(text, encoding="utf-8")
            self.stdout.write(
                f"{count} {'labelled run' if fmt == 'runs' else 'label'}{pluralize(count)} -> {out}"
            )


def _run_verdicts(repository: Repository, warn: Any) -> dict[str, Any]:
    """Per run, the human verdict on mergeable with the chance the run had of being labelled
    (grading.run_inclusion_probability), as ``rubric report --labels`` reads it."""
    verdicts, drawn = settled_labels(repository)
    by_grade: dict[int, dict[str, str]] = defaultdict(dict)
    for grade_id, item_id, verdict in verdicts:
        by_grade[grade_id][item_id] = verdict
    draws: dict[int, dict[str, list[tuple[str, float]]]] = defaultdict(dict)
    for grade_id, item_id, queue, drawn_with in drawn:
        draws[grade_id].setdefault(item_id, []).append((queue, drawn_with))
    per_run: dict[str, set[tuple[bool, float | None]]] = defaultdict(set)
    for grade in RunGrade.objects.filter(pk__in=list(by_grade)).select_related("run").order_by("pk"):
        label = human_mergeable(grade, by_grade[grade.pk])
        if label is not None:
            basis = human_label_basis(grade.status, (grade.metrics or {}).get("details"))
            probability = run_inclusion_probability(basis[0], draws[grade.pk]) if basis else None
            per_run[grade.run.source or str(grade.run)].add((label, probability))
    labels: dict[str, Any] = {}
    for run, values in sorted(per_run.items()):
        if len({label for label, _ in values}) > 1:
            warn(f"{run}: its grades against different rubrics get different labels; left out")
            continue
        label, chance = min(values, key=lambda v: v[1] or 0.0)
        given = {"mergeable": label, "inclusion_probability": chance}
        labels[run] = label if chance is None else given
    return labels
