"""Following a job from the command line: the one wait loop every command with ``--wait`` uses."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.core.management.base import CommandError

from rubrics_app.models import Job

POLL_SECONDS = 0.5


class JobGone(CommandError):
    """The job's row was deleted while waiting for it."""


def wait_for_job(
    job: Job,
    *,
    timeout: float,
    on_poll: Callable[[Job], None] | None = None,
    until: Callable[[Job], bool] | None = None,
    deadline: float | None = None,
) -> Job:
    """Poll ``job`` until it is finished (or ``until(job)`` holds) and return it as it is then.

    ``on_poll(job)`` is called with each fresh read, the last one included, so a command prints progress as
    it comes. After ``timeout`` seconds (or at the monotonic ``deadline``, shared by several waits) it stops
    with exit code 2, saying what the job is still doing."""
    done = until or (lambda j: j.is_finished)
    stop = deadline if deadline is not None else time.monotonic() + timeout
    while True:
        fresh = Job.objects.filter(pk=job.pk).first()
        if fresh is None:
            raise JobGone(f"job {job.pk} is gone", returncode=2)
        if on_poll is not None:
            on_poll(fresh)
        if done(fresh):
            return fresh
        if time.monotonic() > stop:
            raise CommandError(f"job {job.pk} is still {fresh.status} after {timeout:g} s", returncode=2)
        time.sleep(POLL_SECONDS)
