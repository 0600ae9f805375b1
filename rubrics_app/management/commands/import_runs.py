"""manage.py import_runs PATH --repository NAME

Every run directory under PATH (PATH itself when it holds a run.json) becomes an agent run of the
repository, with its grade and judge verdicts when metrics.json is there. All or nothing: any bad run is
listed with its file and field and nothing is imported (exit code 2). Importing the same runs again
changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubrics_app.access import Actor
from rubrics_app.management.options import repository_named
from rubrics_app.services.import_export import ImportFailed
from rubrics_app.services.runs import import_run_dirs


class Command(BaseCommand):
    help = "Import agent run directories (run.json, grade.json, workspace.diff, ...) into a repository."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="a run directory, or a folder holding run directories")
        parser.add_argument("--repository", required=True, help="the repository's name in the app")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["path"]
        if not root.is_dir():
            raise CommandError(f"{root}: not a directory", returncode=2)
        repository = repository_named(options["repository"])
        try:
            result = import_run_dirs(repository, root, str(root), Actor.command_line())
        except ImportFailed as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"nothing imported: {len(exc.problems)} problem(s)", returncode=2) from None
        for run in result.created:
            self.stdout.write(f"{run.source} -> {run}")
        self.stdout.write(self.style.SUCCESS(f"{repository.name}: {result.summary()}"))
