"""manage.py check_evidence --repository NAME

For every task's admitted revision, compares the lines each blocker's ``path:line`` evidence cites at the
task's base commit with the checkout's HEAD (real git), flags the revision "needs re-review" for each
change and prints the old and new text. Exit 0: no open change; 1: the cited code changed; 2: bad input.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubrics_app.models import Repository
from rubrics_app.services.rereview import EvidenceCheckError, check_evidence


class Command(BaseCommand):
    help = "Flag admitted revisions whose blockers cite code that changed between the base commit and HEAD."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, help="the repository's name in the app")

    def handle(self, *args: Any, **options: Any) -> None:
        repository = Repository.objects.filter(name=options["repository"]).first()
        if repository is None:
            raise CommandError(f"--repository: no repository named {options['repository']!r}", returncode=2)
        try:
            report = check_evidence(repository)
        except EvidenceCheckError as exc:
            raise CommandError(str(exc), returncode=2) from None
        for note in report.notes:
            self.stderr.write(f"not compared: {note}")
        for change in report.changes:
            revision = change.revision
            self.stdout.write(
                f"{revision.task.task_id} r{revision.number} {change.item.item_id}: "
                f"{change.path}:{change.line_start}-{change.line_end} changed "
                f"({change.base_commit[:12]} -> {change.head_commit[:12]})"
            )
            for line in change.old_text.splitlines():
                self.stdout.write(f"  - {line}")
            if change.new_missing:
                self.stdout.write("  (the file is gone at HEAD)")
            for line in change.new_text.splitlines():
                self.stdout.write(f"  + {line}")
        counts = f"{len(report.changes)} open evidence change(s), {report.new} new"
        summary = f"{repository.name} at {report.head[:12]}: {counts}"
        if report.changes:
            raise CommandError(summary, returncode=1)
        self.stdout.write(self.style.SUCCESS(summary))
