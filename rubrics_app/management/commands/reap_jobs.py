"""manage.py reap_jobs [--wait] [--timeout SECONDS]

Sends the reaper job (what beat sends every JOB_REAP_EVERY_SECONDS): every running job whose worker stopped
beating is queued again, or failed with "worker lost" after JOB_MAX_ATTEMPTS claims. With --wait, blocks until
a worker has reaped the jobs that were lost when it was sent, and prints what became of each.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from rubrics_app.management.wait import JobGone, wait_for_job
from rubrics_app.models import Job, JobStatus
from rubrics_app.services.jobs import lost_jobs, reap_lost_jobs


class Command(BaseCommand):
    help = "Queue again (or fail) running jobs whose worker was lost."

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
        lost_jobs_now = lost_jobs()
        lost = {job.pk: job.heartbeat_at for job in lost_jobs_now}
        reap_lost_jobs.delay()
        if not options["wait"]:
            self.stdout.write(f"reaper sent; {len(lost)} job(s) look lost now")
            return
        deadline = time.monotonic() + options["timeout"]
        for job in lost_jobs_now:
            beat = lost[job.pk]

            def reaped(j: Job, beat: object = beat) -> bool:
                # No longer running, or running again under a new claim (a fresh heartbeat).
                return j.status != JobStatus.RUNNING or j.heartbeat_at != beat

            try:
                job = wait_for_job(job, timeout=options["timeout"], until=reaped, deadline=deadline)
            except JobGone:
                continue
            what = "queued again" if job.status != JobStatus.FAILED else f"failed: {job.error}"
            self.stdout.write(f"job {job.pk} ({job.kind}): {what} (now {job.status})")
        self.stdout.write(f"reaped {len(lost)} lost job(s)")
