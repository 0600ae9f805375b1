"""manage.py export_rubrics [--repository NAME] [--task ID ...] [--private] [--branch NAME] [--out DIR]

Writes tasks/<task-id>/rubric.json and its calib diffs of every admitted revision into the repository's
checkout (or its private path, or DIR), each file atomically, touching no other file; with --branch, as one
commit on a new branch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP
from rubrics_app.models import Repository, RevisionStatus, RubricRevision, TransitionError
from rubrics_app.services.import_export import ExportError, write_many_to_checkout


class Command(BaseCommand):
    help = "Export admitted rubric revisions into repository checkouts."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--repository",
            metavar="NAME",
            help=f"only this repository (required with --out); {REPOSITORY_HELP}",
        )
        parser.add_argument(
            "--task",
            action="append",
            default=[],
            metavar="ID",
            help=f"only this task (repeatable); {TASK_HELP}",
        )
        parser.add_argument("--private", action="store_true", help="write to the private path (held-out set)")
        parser.add_argument("--branch", help="commit the files on this new branch of the checkout")
        parser.add_argument("--out", type=Path, help="write under this directory instead of the checkout")

    def handle(self, *args: Any, **options: Any) -> None:
        repositories = Repository.objects.all()
        if options["repository"]:
            repositories = repositories.filter(name=options["repository"])
            if not repositories.exists():
                raise CommandError(f"no repository named {options['repository']!r}", returncode=2)
        elif options["out"]:
            raise CommandError("--out needs --repository", returncode=2)
        wanted: list[str] = options["task"]
        exported = 0
        for repository in repositories:
            revisions = list(
                RubricRevision.objects.filter(task__repository=repository, status=RevisionStatus.ADMITTED)
                .select_related("task__repository")
                .prefetch_related("items", "calibration_diffs")
                .order_by("task__task_id")
            )
            if wanted:
                found = {r.task.task_id for r in revisions}
                missing = [t for t in wanted if t not in found]
                if missing and options["repository"]:
                    raise CommandError(f"no admitted revision for: {', '.join(missing)}", returncode=2)
                revisions = [r for r in revisions if r.task.task_id in wanted]
            if not revisions:
                continue
            try:
                result = write_many_to_checkout(
                    revisions,
                    private=options["private"],
                    branch=options["branch"],
                    root=options["out"],
                    by=Actor.command_line(),
                )
            except (ExportError, TransitionError) as exc:
                raise CommandError(f"{repository.name}: {exc}") from None
            if result.commit:
                for path in result.paths:
                    self.stdout.write(f"{repository.name}: {path} on branch {result.branch}")
                self.stdout.write(
                    f"{repository.name}: committed {result.commit[:12]} on branch {result.branch} in "
                    f"{result.root}; your checkout (HEAD, index, files) is unchanged"
                )
            else:
                for path in result.paths:
                    self.stdout.write(f"{repository.name}: {result.root / path}")
            exported += len(revisions)
        if not exported:
            raise CommandError("no admitted revision to export")
        self.stdout.write(self.style.SUCCESS(f"exported {exported} admitted revision(s)"))
