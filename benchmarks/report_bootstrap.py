"""How long ``build_report`` takes by number of runs and bootstrap replicates.

Run: ``.venv/bin/python benchmarks/report_bootstrap.py``. Prints seconds and the ratio to the smallest
case, so a change to the bootstrap can be compared on any machine.
"""

from __future__ import annotations

import random
import time

from grading.report import GradedRun, JudgeVerdicts, build_report

PRIMARY = "anthropic:claude-sonnet-4-5-20250929"
SECOND = "openai:gpt-4o-2024-08-06"


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
                    runs.append(
                        GradedRun(
                            run=f"{t}/{arm}/{model}/{rep}", task=f"t{t}", arm=arm, model=model,
                            prompt_style=style, status="mergeable" if mergeable else "not_mergeable",
                            test_pass=passed, mergeable=mergeable, merge_score=float(mergeable),
                            checks_passed=True, provisional=False,
                            primary=primary if passed else None, second=second if passed else None,
                            human_mergeable=mergeable if rng.random() < 0.02 else None,
                        )
                    )  # fmt: skip
    return runs


def main() -> None:
    rows = []
    for tasks in (50, 500):
        runs = synthetic_runs(tasks)
        for replicates in (0, 200, 2000):
            start = time.perf_counter()
            build_report(runs, bootstrap=replicates)
            rows.append((len(runs), replicates, time.perf_counter() - start))
    base = rows[0][2] or 1e-9
    print(f"{'runs':>7} {'replicates':>10} {'seconds':>8} {'ratio':>8}")
    for runs_n, replicates, seconds in rows:
        print(f"{runs_n:>7} {replicates:>10} {seconds:>8.2f} {seconds / base:>8.1f}")


if __name__ == "__main__":
    main()
