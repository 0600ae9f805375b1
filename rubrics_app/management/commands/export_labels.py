"""manage.py export_labels --repository NAME [--out FILE] [--format jsonl|csv|runs]

Every human label of the repository as the labels file (grading.LabelRow: one row per reviewer's label,
with its run, item, criterion and diff hashes, reviewer, verdict, note, time and inclusion probability),
as JSONL (the default) or CSV: what the queue page's download gives, and what ``import_labels`` and
``rubric report --labels`` read. ``--format runs`` (or an --out file ending .json) writes the older
summary instead, ``{"<run directory>": true|false}``: a human's verdict on whether each run is mergeable
(see services.runs.queue.human_mergeable for when a run gets one).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.template.defaultfilters import pluralize

from grading import label_format, write_label_rows
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import Repository, RunGrade
from rubrics_app.services.runs.labels_io import label_rows
from rubrics_app.services.runs.queue import human_mergeable, human_verdicts_by_grade


class Command(BaseCommand):
    help = "Write every human label of the repository (JSONL or CSV), or each run's human verdict (runs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--out", type=Path, help="the file to write (default: standard output)")
        parser.add_argument(
            "--format",
            choices=("jsonl", "csv", "runs"),
            help="jsonl (default), csv, or runs: {run: true|false}; default from --out's ending",
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


def _run_verdicts(repository: Repository, warn: Any) -> dict[str, bool]:
    by_grade: dict[int, dict[str, str]] = defaultdict(dict)
    for grade_id, item_id, verdict in human_verdicts_by_grade(repository):
        by_grade[grade_id][item_id] = verdict
    per_run: dict[str, set[bool]] = defaultdict(set)
    for grade in RunGrade.objects.filter(pk__in=list(by_grade)).select_related("run").order_by("pk"):
        label = human_mergeable(grade, by_grade[grade.pk])
        if label is not None:
            per_run[grade.run.source or str(grade.run)].add(label)
    labels: dict[str, bool] = {}
    for run, values in sorted(per_run.items()):
        if len(values) > 1:
            warn(f"{run}: its grades against different rubrics get different labels; left out")
            continue
        labels[run] = values.pop()
    return labels
