"""manage.py check_evidence --repository NAME [--send [--wait]]

For every task's admitted revision, compares the lines each blocker's ``path:line`` evidence cites at the
task's base commit with the checkout's HEAD (real git), flags the revision "needs re-review" for each
change and prints the old and new text. Exit 0: no open change; 1: the cited code changed; 2: bad input.

``--send`` hands the same check to a Celery worker as a job (the one the periodic job sends); ``--wait``
blocks until the worker finishes it and prints its result. ``--send`` exits 1 at once when the job queue is
unreachable (the job is failed; nothing was started).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.management.wait import wait_for_job
from rubrics_app.models import EvidenceCheckResult, JobStatus, Repository
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.rubrics.rereview import (
    EvidenceCheckError,
    check_evidence,
    evidence_result,
    start_evidence_check,
)


class Command(BaseCommand):
    help = "Flag admitted revisions whose blockers cite code that changed between the base commit and HEAD."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--send", action="store_true", help="run it as a Celery job instead of here")
        parser.add_argument("--wait", action="store_true", help="with --send: wait for the job and print it")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (default 600)")

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        if options["wait"] and not options["send"]:
            raise CommandError("--wait: only with --send", returncode=2)
        if options["send"]:
            self._send(repository, options["wait"], options["timeout"])
            return
        try:
            report = check_evidence(repository)
        except EvidenceCheckError as exc:
            raise CommandError(str(exc), returncode=2) from None
        for note in report.notes:
            self.stderr.write(f"not compared: {note}")
        self._finish(repository, evidence_result(report))

    def _send(self, repository: Repository, wait: bool, timeout: float) -> None:
        try:
            job = start_evidence_check(repository, by=Actor.command_line())
        except QueueUnreachable as exc:
            raise CommandError(exc.detail, returncode=1) from None
        self.stdout.write(f"sent job {job.pk} (check_evidence {repository.name})")
        if not wait:
            return
        job = wait_for_job(job, timeout=timeout)
        result = job.result_as(EvidenceCheckResult) if job.status == JobStatus.DONE else None
        if result is None:
            raise CommandError(f"job {job.pk} failed: {job.error}", returncode=2)
        for note in result.notes:
            self.stderr.write(f"not compared: {note}")
        self._finish(repository, result)

    def _finish(self, repository: Repository, result: EvidenceCheckResult) -> None:
        for change in result.changes:
            self.stdout.write(f"{change.task} r{change.revision} {change.item}: {change.cite} changed")
            for line in change.old.splitlines():
                self.stdout.write(f"  - {line}")
            if change.new is None:
                self.stdout.write("  (the file is gone at HEAD)")
            for line in (change.new or "").splitlines():
                self.stdout.write(f"  + {line}")
        counts = f"{result.open} open evidence change{pluralize(result.open)}, {result.new} new"
        summary = f"{repository.name} at {result.head[:12]}: {counts}"
        if result.open:
            raise CommandError(summary, returncode=1)
        self.stdout.write(self.style.SUCCESS(summary))
