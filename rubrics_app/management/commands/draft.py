"""manage.py draft --repository NAME --task ID (--pr NUMBER | --pr-export FILE) [--wait] [--timeout SECONDS]

Sends the drafting job (§6): a model drafts the task's rubric from the merged PR (read from the repository's
GitHub repository, or from an export file of the same shape), the draft is checked and stored as a new draft
revision with its problems listed. With --wait, prints each step as the worker reaches it, then the revision,
its cost and its problems: exit 0 for a draft with no problem, 1 for a draft with problems or a drafting
that failed (at which step, and why), 2 on bad input. A drafting of the same task from the same source (PR
number, or export with the same sha256) still queued or running is joined, and followed with --wait, rather
than sent twice; a finished one is drafted again. Exit 1 at once when the job queue is unreachable (the job
is failed; nothing was started).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from grading import InputError, printable, read_input_bytes
from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP, repository_named, task_of
from rubrics_app.management.wait import wait_for_job
from rubrics_app.models import Job, JobStatus, RubricDraft
from rubrics_app.services.drafting.run import DraftRequestError, request_draft
from rubrics_app.services.jobs import QueueUnreachable


class Command(BaseCommand):
    help = "Draft a task's rubric from its merged PR with the repository's drafter (a Celery job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--task", required=True, metavar="ID", help=TASK_HELP)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--pr", type=int, metavar="NUMBER", help="the PR of the repository's GitHub repo")
        source.add_argument("--pr-export", type=Path, metavar="FILE", help="the PR as an export JSON file")
        parser.add_argument("--wait", action="store_true", help="wait for the job; print the draft")
        parser.add_argument("--timeout", type=float, default=1800.0, metavar="SECONDS", help="with --wait")

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        task = task_of(repository, options["task"])
        export: bytes | None = None
        path: Path | None = options["pr_export"]
        if path is not None:
            try:
                export = read_input_bytes(path)
            except InputError as exc:
                raise CommandError(str(exc), returncode=2) from None
        try:
            draft, created = request_draft(
                task,
                Actor.command_line(),
                pr_number=options["pr"],
                pr_export=export,
                pr_export_name=str(path) if path is not None else "pr.json",
            )
        except DraftRequestError as exc:
            flag = {"pr_number": "--pr: ", "pr_export": "--pr-export: "}.get(exc.field or "", "")
            raise CommandError(f"{flag}{exc.message}", returncode=2) from None
        except QueueUnreachable as exc:
            raise CommandError(exc.detail, returncode=1) from None
        assert draft.job is not None
        if created:
            self.stdout.write(
                f"drafting #{draft.pk} of {task.task_id} from {draft.source_label} with {draft.drafter} "
                f"(job {draft.job.pk})"
            )
        else:
            self.stdout.write(
                f"joined drafting #{draft.pk} of {task.task_id} from {draft.source_label}, already "
                f"{draft.job.status} (job {draft.job.pk}): no second draft"
            )
        if not options["wait"]:
            self.stdout.write("queued; run with --wait to follow it")
            return
        self._follow(draft, options["timeout"])

    def _follow(self, draft: RubricDraft, timeout: float) -> None:
        assert draft.job is not None
        shown = ""

        def show_step(job: Job) -> None:
            nonlocal shown
            draft.refresh_from_db()
            if draft.step != shown:
                shown = draft.step
                self.stdout.write(f"  {draft.get_step_display()}")

        job = wait_for_job(draft.job, timeout=timeout, on_poll=show_step)
        if job.status == JobStatus.FAILED or draft.revision is None:
            # The PR thread and the model's reply are untrusted: no terminal control characters.
            raise CommandError(printable(f"drafting failed: {job.error}"), returncode=1)
        revision = draft.revision
        cost = f"${draft.cost_usd:.4f}" if draft.cost_known else "cost unknown (no price for the model)"
        label = " (scripted drafter: a stand-in, not a model)" if draft.scripted else ""
        self.stdout.write(
            f"drafted by {draft.model_id}{label} (input sha256 {draft.input_sha256[:12]}, {cost}): "
            f"{draft.task.task_id} revision {revision.number} (draft)"
        )
        for problem in draft.problems:
            self.stdout.write(printable(f"  problem: {problem}"))
        if draft.problems:
            count = len(draft.problems)
            raise CommandError(
                f"{count} problem{pluralize(count)} in the draft: edit it in the app", returncode=1
            )
        self.stdout.write(
            self.style.SUCCESS("no problems found: review it blocker by blocker before approving")
        )
