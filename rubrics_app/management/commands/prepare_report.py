"""manage.py prepare_report [--repository NAME]

Computes each repository's report (or NAME's) for its current runs, as the report page shows it with no
filters, and stores it where every process finds it, so the page's first view reads it instead of
computing it. A worker does the same after each import and sweep; run this after a deploy (a new version
of the code that computes the report makes a new key) or a migration. A report stored already is kept.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import Repository
from rubrics_app.services.reports.report import prepare_report


class Command(BaseCommand):
    help = "Compute and store each repository's report, so the report page's first view reads it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", metavar="NAME", help=f"only this one: {REPOSITORY_HELP}")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["repository"]:
            repositories = [repository_named(options["repository"])]
        else:
            repositories = list(Repository.objects.order_by("name"))
        for repository in repositories:
            started = time.monotonic()
            outcome = prepare_report(repository)
            seconds = time.monotonic() - started
            what = {
                "stored": f"computed and stored in {seconds:.1f} s",
                "stored already": "already stored",
                "changed meanwhile": f"computed in {seconds:.1f} s, not stored: its runs changed meanwhile",
            }[outcome]
            self.stdout.write(f"{repository.name}: report {what}")
