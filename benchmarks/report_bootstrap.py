"""``build_report`` (the report of ``rubric report`` and of the report page) with its task bootstrap drawn by
numpy, against the same report with the bootstrap drawn by ``random.choices`` one replicate at a time (how
it was written before), in the same run.

    .venv/bin/python benchmarks/report_bootstrap.py

Both draw the same numbers from the same seeded generator, so the two reports must be equal: the script
checks that before it prints. Runs: tasks x 2 arms x 2 models x 5 repetitions, with human labels on 1 run
in 5 so that the judge-error-corrected rate (which resamples the labelled tasks too) is computed. The
report includes its contrasts (two arms per model, two models per arm: 12, each with its paired bootstrap).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import grading.report.contrasts  # noqa: E402
import grading.report.stats  # noqa: E402
from benchmarks._common import Row, machine, print_table  # noqa: E402
from grading.report.build import build_report  # noqa: E402
from grading.report.models import GradedRun, JudgeVerdicts  # noqa: E402

PRIMARY = "anthropic:claude-sonnet-4-5-20250929"
SECOND = "openai:gpt-4o-2024-08-06"
REPLICATES = 2000
REPEAT = 3


def synthetic_runs(tasks: int, repetitions: int = 5, seed: int = 0) -> list[GradedRun]:
    """tasks x 2 arms x 2 models x repetitions runs, each task of one prompt style."""
    rng = random.Random(seed)
    runs = []
    for t in range(tasks):
        style = "spec" if t % 2 else "issue"
        for arm in ("baseline", "guidance"):
            for model in ("claude-opus-4-6", "gpt-5.1-codex"):
                for rep in range(repetitions):
                    passed = rng.random() < 0.7
                    mergeable = passed and rng.random() < 0.5
                    # The judges are called only when the tests pass.
                    primary = JudgeVerdicts(judge=PRIMARY, blockers={"B1": "pass" if mergeable else "fail"})
                    second = JudgeVerdicts(judge=SECOND, blockers={"B1": rng.choice(["pass", "fail"])})
                    human = (mergeable if rng.random() < 0.9 else not mergeable) if rep == 0 else None
                    runs.append(
                        GradedRun(
                            run=f"{t}/{arm}/{model}/{rep}", task=f"t{t}", arm=arm, model=model,
                            prompt_style=style, status="mergeable" if mergeable else "not_mergeable",
                            test_pass=passed, mergeable=mergeable, merge_score=float(mergeable),
                            checks_passed=True, provisional=False,
                            primary=primary if passed else None, second=second if passed else None,
                            human_mergeable=human if passed else None,
                        )
                    )  # fmt: skip
    return runs


def _loop(sums: Sequence[tuple[int, ...]], replicates: int, rng: random.Random) -> Any:
    # The bootstrap as it was: one random.choices and one zip of sums per replicate.
    if replicates == 0 or not sums:
        return np.zeros((0, len(sums[0]) if sums else 0), dtype=np.int64)
    rows = [tuple(map(sum, zip(*rng.choices(sums, k=len(sums)), strict=True))) for _ in range(replicates)]
    return np.array(rows, dtype=np.int64)


@contextmanager
def plain_python() -> Iterator[None]:
    # Both modules that draw replicates call it by their own name.
    modules = (grading.report.stats, grading.report.contrasts)
    vectorised = grading.report.stats.resample_sums
    for module in modules:
        setattr(module, "resample_sums", _loop)  # noqa: B010
    try:
        yield
    finally:
        for module in modules:
            setattr(module, "resample_sums", vectorised)  # noqa: B010


def best_of(runs: list[GradedRun]) -> tuple[float, dict[str, Any]]:
    best = float("inf")
    report: dict[str, Any] = {}
    for _ in range(REPEAT):
        started = time.perf_counter()
        report = build_report(runs, bootstrap=REPLICATES).to_json_dict()
        best = min(best, time.perf_counter() - started)
    return best, report


def main() -> None:
    rows = []
    notes = []
    for tasks in (50, 500):
        runs = synthetic_runs(tasks)
        numpy_seconds, numpy_report = best_of(runs)
        with plain_python():
            loop_seconds, loop_report = best_of(runs)
        if numpy_report != loop_report:
            raise SystemExit(f"{len(runs)} runs: the vectorised bootstrap gave another report")
        assert numpy_report["cells"][0]["corrected_mergeable_rate"]["ci"] is not None
        assert all(c["ci"] is not None for c in numpy_report["contrasts"])  # 12 contrasts, paired bootstrap
        rows.append(
            Row(
                f"`build_report`, {len(runs):,} runs ({tasks} tasks), {REPLICATES} replicates",
                numpy_seconds,
                "the same, bootstrap by `random.choices`",
                loop_seconds,
                goal=None,
            )
        )
        zero = min(_timed_zero(runs) for _ in range(REPEAT))
        notes.append(f"{len(runs):,} runs without intervals (`--bootstrap 0`): {zero:.3f} s.")
    notes.append("The two reports are equal at each size (checked), interval for interval.")
    notes.append(f"Fastest of {REPEAT} runs each; {machine()}.")
    print_table("Report statistics: the task bootstrap vectorised against the plain loop", rows, notes)


def _timed_zero(runs: list[GradedRun]) -> float:
    started = time.perf_counter()
    build_report(runs, bootstrap=0)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
