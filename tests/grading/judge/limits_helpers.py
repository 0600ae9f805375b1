"""Judge calls through a rate-limited backend in threads: shared by the limit tests."""

from __future__ import annotations

import threading
import time

from grading.judge.limits import LimitedBackend
from grading.judge.runner import JudgeSettings, judge_run
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

MODEL = "claude-sonnet-4-5-20250929"


def judge_in_threads(backend: LimitedBackend, count: int) -> list[float]:
    """``count`` diffs judged at once from threads of their own (as a sweep does); their finish times."""
    rubric = make_rubric()
    ends: list[float] = []

    def one(n: int) -> None:
        judge_run(TASK, rubric, DIFF.replace("area", f"area{n}", 1), backend, config_edited=False,
                  settings=JudgeSettings(consistency_check=False))  # fmt: skip
        ends.append(time.monotonic())

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return ends
