"""manage.py import_labels FILE --repository NAME

Labels made elsewhere (the labels file export_labels writes: .csv or .jsonl), all or nothing: every bad
line is named on standard error and nothing is written (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from grading import MAX_LABEL_FILE_BYTES
from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.services.runs.labels_io import LabelImportFailed, import_labels


class Command(BaseCommand):
    help = "Import a labels file (CSV or JSONL, as export_labels writes it), all or nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="the labels file: .csv or .jsonl")
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: file not found", returncode=2)
        if path.stat().st_size > MAX_LABEL_FILE_BYTES:
            raise CommandError(f"{path}: larger than {MAX_LABEL_FILE_BYTES} bytes", returncode=2)
        try:
            done = import_labels(repository, path.read_bytes(), str(path), Actor.command_line())
        except LabelImportFailed as error:
            for problem in error.problems:
                self.stderr.write(problem)
            raise CommandError(
                f"{len(error.problems)} problem{pluralize(len(error.problems))} in {path}: nothing imported",
                returncode=2,
            ) from None
        self.stdout.write(
            f"{done.created} label{pluralize(done.created)} added, {done.replaced} replaced from {path}"
        )
