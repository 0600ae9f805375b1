"""manage.py export_rubrics [--repository NAME] [--task ID ...] [--private] [--branch NAME] [--out DIR]
[--allow-disputed] [--pull-request [--wait [--timeout SECONDS]]]

Writes tasks/<task-id>/rubric.json and its calib diffs of every admitted revision into the repository's
checkout (or its private path, or DIR), each file atomically, touching no other file; with --branch, as one
commit on a new branch. A revision with an open dispute on a blocker (it needs re-review) is refused, and
nothing written, unless --allow-disputed is given (exit 2 naming the revision and the blockers).

With --pull-request, each revision is sent to its repository's remote by an export job (one per revision):
committed on a new branch (--branch, or rubrics/<task>-r<n>-job<id>) without touching the checkout, pushed,
and on GitHub opened as a pull request. --wait follows the jobs and prints each pull request's URL (or, for
a plain git remote, where the branch went); exit 2 when one fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP
from rubrics_app.management.wait import wait_for_job
from rubrics_app.models import (
    ExportResult,
    JobStatus,
    Repository,
    RevisionStatus,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.rubrics.exports import ExportError, start_export, write_many_to_checkout
from rubrics_app.services.rubrics.rereview import disputed_blockers


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
        parser.add_argument(
            "--allow-disputed",
            action="store_true",
            help="export revisions with an open dispute on a blocker too (refused otherwise)",
        )
        parser.add_argument(
            "--pull-request",
            action="store_true",
            help="push each revision on a new branch to its remote and open a pull request (a job)",
        )
        parser.add_argument("--wait", action="store_true", help="with --pull-request: wait for the jobs")
        parser.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="with --wait")

    def handle(self, *args: Any, **options: Any) -> None:
        repositories = Repository.objects.all()
        if options["repository"]:
            repositories = repositories.filter(name=options["repository"])
            if not repositories.exists():
                raise CommandError(f"no repository named {options['repository']!r}", returncode=2)
        elif options["out"]:
            raise CommandError("--out needs --repository", returncode=2)
        wanted: list[str] = options["task"]
        chosen = [(repository, self._revisions(repository, wanted, options)) for repository in repositories]
        if not options["allow_disputed"]:
            # Checked before anything is written: a refusal leaves every checkout as it was.
            refused = [revision for _, revisions in chosen for revision in revisions]
            disputed = disputed_blockers(r.pk for r in refused)
            if disputed:
                named = "; ".join(
                    f"{r.task.repository.name} {r.task.task_id} r{r.number}: "
                    f"{', '.join(disputed[r.pk])} disputed (needs re-review)"
                    for r in refused
                    if r.pk in disputed
                )
                raise CommandError(
                    f"{named}. Nothing was written; pass --allow-disputed to export anyway", returncode=2
                )
        if options["pull_request"]:
            self._pull_requests(chosen, options)
            return
        if options["wait"]:
            raise CommandError(
                "--wait is for --pull-request (the export writes in the foreground)", returncode=2
            )
        exported = 0
        for repository, revisions in chosen:
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
        self.stdout.write(self.style.SUCCESS(f"exported {exported} admitted revision{pluralize(exported)}"))

    def _pull_requests(
        self, chosen: list[tuple[Repository, list[RubricRevision]]], options: dict[str, Any]
    ) -> None:
        if options["out"] or options["private"]:
            raise CommandError(
                "--pull-request sends the public rubrics: not with --out or --private", returncode=2
            )
        revisions = [revision for _, revisions in chosen for revision in revisions]
        if not revisions:
            raise CommandError("no admitted revision to export")
        if options["branch"] and len(revisions) > 1:
            raise CommandError(
                f"--branch names one branch, and {len(revisions)} revisions would be sent: choose one with "
                "--task",
                returncode=2,
            )
        disputed = disputed_blockers(r.pk for r in revisions) if options["allow_disputed"] else {}
        jobs = []
        for revision in revisions:
            name = f"{revision.task.repository.name} {revision.task.task_id} r{revision.number}"
            try:
                job = start_export(
                    revision,
                    Actor.command_line(),
                    branch=options["branch"],
                    pull_request=True,
                    overriding=disputed.get(revision.pk, []),
                )
            except QueueUnreachable as exc:
                raise CommandError(
                    f"{name}: the job queue is unreachable: {exc.reason}", returncode=2
                ) from None
            except TransitionError as exc:
                raise CommandError(f"{name}: {exc}", returncode=2) from None
            self.stdout.write(f"sent job {job.pk} (pull request of {name})")
            jobs.append((name, job))
        if not options["wait"]:
            return
        failed = 0
        for name, job in jobs:
            job = wait_for_job(job, timeout=options["timeout"])
            result = job.result_as(ExportResult) if job.status == JobStatus.DONE else None
            if result is None:
                self.stderr.write(f"{name}: job {job.pk} failed: {job.error}")
                failed += 1
            elif result.pull_request_url:
                self.stdout.write(f"{name}: pull request {result.pull_request_url} (branch {result.branch})")
            else:
                self.stdout.write(f"{name}: {result.note}")
        if failed:
            raise CommandError(
                f"{failed} of {len(jobs)} pull request job{pluralize(len(jobs))} failed", returncode=2
            )
        self.stdout.write(self.style.SUCCESS(f"sent {len(jobs)} admitted revision{pluralize(len(jobs))}"))

    @staticmethod
    def _revisions(
        repository: Repository, wanted: list[str], options: dict[str, Any]
    ) -> list[RubricRevision]:
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
        return revisions
