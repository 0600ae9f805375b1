"""Agent runs imported into the app for sweeps: each with a diff of its own (so no two share a cached
verdict), built on disk by runs_helpers and imported by the real import service."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import JobStatus, Repository
from rubrics_app.services.runs.store import import_run_dirs
from rubrics_app.services.sweeps.run import SweepRequest, sweep_now
from tests.app.conftest import LAZY_DIFF
from tests.app.runs_helpers import RUN_DIFF, write_run


def numbered_diff(n: int) -> bytes:
    """The valid fix with a comment line that makes the diff (and its cache key) unique."""
    return RUN_DIFF.replace(b"@@ -1,2 +1,4 @@", b"@@ -1,2 +1,5 @@").replace(
        b"+    if x > 1:\n", f"+    # run {n}\n+    if x > 1:\n".encode()
    )


def import_runs(
    repository: Repository,
    root: Path,
    count: int,
    *,
    arm: str = "guidance",
    model: str = "model-a",
    unique: bool = True,
    lazy: tuple[int, ...] = (),
    failing_tests: tuple[int, ...] = (),
) -> None:
    """``count`` runs of fix_fraction_gt1 (repetitions 0..count-1) imported into ``repository``; those in
    ``lazy`` carry the clamping diff (B1 fails), those in ``failing_tests`` have pass false."""
    for n in range(count):
        diff = LAZY_DIFF if n in lazy else (numbered_diff(n) if unique else RUN_DIFF)
        write_run(root, f"{arm}-{model}-{n}", arm=arm, model=model, repetition=n, diff=diff,
                  passed=n not in failing_tests)  # fmt: skip
    import_run_dirs(repository, root, "", user=Actor.command_line())


def sweep(repository: Repository, maintainer: User) -> None:
    """A sweep of every run with both judges (the second on every diff), run here to its end."""
    done = sweep_now(
        repository, Actor.member(maintainer), SweepRequest(second_sample=1.0), cache=MemoryCache()
    )
    assert done.job.status == JobStatus.DONE, done.job.error
