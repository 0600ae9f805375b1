"""manage.py reap_jobs [--wait] [--timeout SECONDS]

Sends the reaper job (what every worker runs every JOB_REAP_EVERY_SECONDS): every running job whose worker
stopped beating is queued again, or failed with "worker lost" after JOB_MAX_ATTEMPTS claims; every queued job
that no worker claimed within JOB_QUEUED_LOST_AFTER_SECONDS of its sending is sent again. With --wait, blocks
until a worker has reaped the jobs that were lost when it was sent, and prints what became of each. Exit 1
when the job queue is unreachable (nothing was sent).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from rubrics_app.management.wait import JobGone, wait_for_job
from rubrics_app.models import Job, JobStatus
from rubrics_app.services.jobs import QueueUnreachable, lost_jobs, publish, reap_lost_jobs, unclaimed_jobs


class Command(BaseCommand):
    help = "Queue again (or fail) running jobs whose worker was lost; send again queued jobs never claimed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", action="store_true", help="block until a worker has reaped them")
        parser.add_argument(
            "--timeout",
            type=float,
            default=120.0,
            metavar="SECONDS",
            help="with --wait: give up after this many seconds",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Each job with what it looked like: a reaped one is no longer running (queued) or was sent since.
        lost = [(job, JobStatus.RUNNING, "heartbeat_at", job.heartbeat_at) for job in lost_jobs()]
        unclaimed = [(job, JobStatus.QUEUED, "sent_at", job.sent_at) for job in unclaimed_jobs()]
        try:
            publish(reap_lost_jobs)
        except QueueUnreachable as exc:
            raise CommandError(exc.detail, returncode=1) from None
        if not options["wait"]:
            self.stdout.write(
                f"reaper sent; {len(lost)} job{pluralize(len(lost))} "
                f"look{pluralize(len(lost), 's,')} lost now, "
                f"{len(unclaimed)} queued job{pluralize(len(unclaimed))} unclaimed"
            )
            return
        deadline = time.monotonic() + options["timeout"]
        for job, status, field, seen in lost + unclaimed:

            def reaped(j: Job, status: str = status, field: str = field, seen: object = seen) -> bool:
                return j.status != status or getattr(j, field) != seen

            try:
                job = wait_for_job(job, timeout=options["timeout"], until=reaped, deadline=deadline)
            except JobGone:
                continue
            if job.status == JobStatus.FAILED:
                what = f"failed: {job.error}"
            elif status == JobStatus.RUNNING:
                what = "queued again"
            else:
                what = "sent again"
            self.stdout.write(f"job {job.pk} ({job.kind}): {what} (now {job.status})")
        self.stdout.write(
            f"reaped {len(lost)} lost job{pluralize(len(lost))}, "
            f"{len(unclaimed)} unclaimed job{pluralize(len(unclaimed))}"
        )
