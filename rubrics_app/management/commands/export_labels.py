"""manage.py export_labels --repository NAME [--out FILE]

The review queue's human verdicts as the labels file of ``rubric report --labels``: ``{"<run directory>":
true|false}``, a human's verdict on whether each run is mergeable (see services.runs.queue.human_mergeable for
when a run gets one). Run directories are named as they were imported (``AgentRun.source``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import RunGrade
from rubrics_app.services.runs.queue import human_mergeable, human_verdicts_by_grade


class Command(BaseCommand):
    help = "Write the review queue's human verdicts as a labels file for `rubric report --labels`."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--out", type=Path, help="the labels file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
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
                self.stderr.write(
                    f"{run}: its grades against different rubrics get different labels; left out"
                )
                continue
            labels[run] = values.pop()
        text = json.dumps(labels, indent=2, sort_keys=True) + "\n"
        if options["out"] is None:
            self.stdout.write(text, ending="")
        else:
            options["out"].write_text(text, encoding="utf-8")
            self.stdout.write(f"{len(labels)} labelled run(s) -> {options['out']}")
