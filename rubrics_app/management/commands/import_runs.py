"""manage.py import_runs PATH --repository NAME
manage.py import_runs --format swe-bench --predictions FILE --reports DIR --repository NAME --arm ARM
    [--repetition N]

Every run directory under PATH (PATH itself when it holds a run.json) becomes an agent run of the
repository, with its grade and judge verdicts when metrics.json is there. With ``--format swe-bench``, every
prediction of the SWE-bench harness's predictions file (JSON lines, or a .json list or SWE-agent's
preds.json) becomes a run, graded by the harness's report.json for its instance and model (found under
DIR). All or nothing: any bad run or line is listed with its file and field and nothing is imported (exit
code 2); only the predictions the harness did not evaluate are left out, each listed. Importing the same
runs again changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, import_refused, repository_named
from rubrics_app.services.rubrics.files import ImportFailed
from rubrics_app.services.runs.store import RunImport, import_run_dirs
from rubrics_app.services.runs.swe_bench import SweBenchImport, import_swe_bench


class Command(BaseCommand):
    help = "Import agent run directories (run.json, grade.json, workspace.diff, ...) into a repository."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path", type=Path, nargs="?", help="a run directory, or a folder holding run directories"
        )
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--format", choices=("runs", "swe-bench"), default="runs")
        parser.add_argument(
            "--predictions",
            type=Path,
            help="swe-bench: the harness's predictions (.jsonl, or .json: a list or SWE-agent's preds.json)",
        )
        parser.add_argument(
            "--reports",
            type=Path,
            help="swe-bench: the folder holding its report.json files (logs/run_evaluation/RUN_ID, or an "
            "experiments submission folder)",
        )
        parser.add_argument("--arm", help="swe-bench: the arm of every run")
        parser.add_argument("--repetition", type=int, default=0, help="swe-bench: the repetition (default 0)")

    def handle(self, *args: Any, **options: Any) -> None:
        repository_name: str = options["repository"]
        try:
            if options["format"] == "swe-bench":
                result = self._swe_bench(repository_name, options)
            else:
                root: Path | None = options["path"]
                if root is None:
                    raise CommandError("PATH is required (or --format swe-bench)", returncode=2)
                if not root.is_dir():
                    raise CommandError(f"{root}: not a directory", returncode=2)
                repository = repository_named(repository_name)
                result = import_run_dirs(repository, root, str(root), Actor.command_line())
        except ImportFailed as exc:
            raise import_refused(self.stderr, exc) from None
        for run in result.created:
            self.stdout.write(f"{run.source} -> {run}")
        for note in result.notes() if isinstance(result, SweBenchImport) else []:
            self.stdout.write(note)
        self.stdout.write(self.style.SUCCESS(f"{repository_name}: {result.summary()}"))

    def _swe_bench(self, repository_name: str, options: dict[str, Any]) -> RunImport:
        missing = [f"--{name}" for name in ("predictions", "reports", "arm") if options[name] is None]
        if missing or options["path"] is not None:
            raise CommandError(
                f"--format swe-bench takes --predictions, --reports and --arm (missing: {', '.join(missing)})"
                if missing
                else "--format swe-bench takes no PATH",
                returncode=2,
            )
        repository = repository_named(repository_name)
        return import_swe_bench(
            repository,
            options["predictions"],
            options["reports"],
            arm=options["arm"],
            repetition=options["repetition"],
            by=Actor.command_line(),
        )
