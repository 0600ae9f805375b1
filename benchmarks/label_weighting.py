"""Inverse-probability weighting of human labels (issue 31 §3), on simulated run sets whose truth is known.

    .venv/bin/python benchmarks/label_weighting.py [--datasets 500] [--tasks 40] [--bootstrap 500]

Each data set is one arm and model: T tasks of 10 runs, a per-task difficulty (a random effect on the logit
of passing the tests and of being mergeable once they pass). A run that passes the tests has one or two
blockers (even odds). A truly mergeable run passes every blocker; a truly not-mergeable one fails its first
and, when it has two, its second with even odds. Two judges give each blocker a verdict, independently: the
primary with sensitivity 0.90 and specificity 0.80 per blocker, the second with 0.85 and 0.75. The run's
outcome is the primary's (mergeable when it passes every blocker).

Labels are drawn as the app's review queue draws them: every pair the judges disagree on (inclusion
probability 1), and each agreed pair with the sample share r (10%, 15% or 20%, per data set in turn),
independently. A human (always right) labels every pair drawn; a run counts once every blocker is labelled,
with the inclusion probability :func:`grading.run_inclusion_probability` gives it (the product over its
pairs). Disagreements are where a judge erred, so the labelled runs over-represent the primary's errors.

The truth is the population's: the judge's run-level sensitivity and specificity follow from the per-blocker
ones; the mergeable rate (mean over tasks) is computed once from 400,000 simulated tasks. Per data set,
``build_report`` twice: the labels as drawn but unweighted (``label_probability`` None: uniform sampling
assumed, the report before issue 31 §3) and weighted by 1/π. Printed: the bias of Se, Sp and the corrected
mergeable rate (mean estimate − truth, in points), the RMSE of the corrected rate, and the share of data sets
whose 95% interval for it holds the truth.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from grading import run_inclusion_probability  # noqa: E402
from grading.report.build import build_report  # noqa: E402
from grading.report.models import GradedRun  # noqa: E402

RUNS_PER_TASK = 10
PASS, MERGE = 0.4, 0.0  # logits of passing the tests and of being mergeable once passed, at the mean task
TASK_SD = (1.0, 1.0)
PRIMARY = (0.95, 0.80)  # per blocker: P(pass | truly passes), P(fail | truly fails)
SECOND = (0.95, 0.70)
SAMPLE_SHARES = (0.10, 0.15, 0.20)  # the agreed pairs' sample share, per data set in turn
ESTIMATORS = ("unweighted", "weighted")


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def true_accuracy() -> tuple[float, float]:
    """The primary judge's run-level sensitivity and specificity under the design (one or two blockers)."""
    s, q = PRIMARY
    sensitivity = 0.5 * s + 0.5 * s * s
    # Not mergeable: the first blocker fails; a second one fails with even odds. The judge calls the run
    # mergeable only when it passes every blocker.
    false_pass_two = (1 - q) * (0.5 * (1 - q) + 0.5 * s)
    specificity = 0.5 * q + 0.5 * (1 - false_pass_two)
    return sensitivity, specificity


def true_rate() -> float:
    """The mergeable rate of the population of tasks (each task once): E[P(pass) · P(mergeable | pass)]."""
    rng = np.random.default_rng(20_261_207)
    n = 400_000
    p = _sigmoid(PASS + rng.normal(0, TASK_SD[0], n))
    m = _sigmoid(MERGE + rng.normal(0, TASK_SD[1], n))
    return float((p * m).mean())


def simulate(seed: int, tasks: int) -> tuple[list[GradedRun], float]:
    """One data set: its runs with the human verdict and inclusion probability where labelled, and the
    agreed pairs' sample share it used."""
    rng = np.random.default_rng(seed)
    share = SAMPLE_SHARES[seed % len(SAMPLE_SHARES)]
    p = _sigmoid(PASS + rng.normal(0, TASK_SD[0], tasks))
    m = _sigmoid(MERGE + rng.normal(0, TASK_SD[1], tasks))
    runs = []
    for t in range(tasks):
        for i in range(RUNS_PER_TASK):
            name, task = f"t{t}/{i}", f"t{t}"
            if rng.random() >= p[t]:
                runs.append(
                    GradedRun(
                        run=name,
                        task=task,
                        status="not_mergeable",
                        test_pass=False,
                        mergeable=False,
                        checks_passed=True,
                    )
                )
                continue
            truly = bool(rng.random() < m[t])
            blockers = 1 + int(rng.random() < 0.5)
            truth = [True] * blockers if truly else [False] + [bool(rng.random() < 0.5)] * (blockers - 1)
            primary, draws = [], {}
            for b, passes in enumerate(truth):
                verdicts = []
                for sensitivity, specificity in (PRIMARY, SECOND):
                    right = rng.random() < (sensitivity if passes else specificity)
                    verdicts.append(passes if right else not passes)
                primary.append(verdicts[0])
                if verdicts[0] != verdicts[1]:
                    draws[f"B{b}"] = [("judges", 1.0)]
                elif rng.random() < share:
                    draws[f"B{b}"] = [("agreed", share)]
            called = all(primary)
            labelled = len(draws) == blockers
            probability = (
                run_inclusion_probability([f"B{b}" for b in range(blockers)], draws) if labelled else None
            )
            runs.append(
                GradedRun(
                    run=name,
                    task=task,
                    status="mergeable" if called else "not_mergeable",
                    test_pass=True,
                    mergeable=called,
                    checks_passed=True,
                    human_mergeable=truly if labelled else None,
                    label_probability=probability,
                )
            )
    return runs, share


@dataclass
class Figures:
    sensitivity: list[float]
    specificity: list[float]
    corrected: list[float]
    covered: list[bool]  # per data set with an interval

    def bias(self, values: list[float], truth: float) -> float:
        return float(np.mean(values) - truth) if values else float("nan")


def study(datasets: int, tasks: int, bootstrap: int, first_seed: int = 0) -> dict[str, Figures]:
    """Per estimator, each data set's figures (data sets whose correction is not shown are left out)."""
    out = {name: Figures([], [], [], []) for name in ESTIMATORS}
    truth = true_rate()
    for seed in range(first_seed, first_seed + datasets):
        runs, _ = simulate(seed, tasks)
        for name in ESTIMATORS:
            given = (
                runs
                if name == "weighted"
                else [r.model_copy(update={"label_probability": None}) for r in runs]
            )
            report = build_report(given, bootstrap=bootstrap, seed=seed)
            accuracy, cell = report.judge_accuracy, report.cells[0]
            figures = out[name]
            if accuracy.sensitivity is None or accuracy.specificity is None:
                continue
            figures.sensitivity.append(accuracy.sensitivity)
            figures.specificity.append(accuracy.specificity)
            corrected = cell.corrected_mergeable_rate
            if corrected is None or corrected.value is None:
                continue
            figures.corrected.append(corrected.value)
            if corrected.ci is not None:
                figures.covered.append(corrected.ci[0] <= truth <= corrected.ci[1])
    return out


def table(figures: dict[str, Figures], datasets: int, tasks: int) -> list[list[str]]:
    sensitivity, specificity = true_accuracy()
    truth = true_rate()
    rows = []
    for name, f in figures.items():
        errors = np.array(f.corrected) - truth
        rows.append(
            [
                name,
                f"{100 * f.bias(f.sensitivity, sensitivity):+.2f}",
                f"{100 * f.bias(f.specificity, specificity):+.2f}",
                f"{100 * f.bias(f.corrected, truth):+.2f}",
                f"{100 * float(np.sqrt((errors**2).mean())):.2f}" if len(errors) else "n/a",
                f"{np.mean(f.covered):.3f} ({len(f.covered)})" if f.covered else "n/a",
                str(len(f.corrected)),
            ]
        )
    return rows


def print_study(figures: dict[str, Figures], datasets: int, tasks: int, bootstrap: int) -> None:
    sensitivity, specificity = true_accuracy()
    print(
        f"\n### Label weighting: {datasets} data sets of {tasks} tasks x {RUNS_PER_TASK} runs, agreed pairs "
        f"sampled at {', '.join(f'{s:.0%}' for s in SAMPLE_SHARES)}, bootstrap {bootstrap}\n"
    )
    print(f"Truth: Se {sensitivity:.4f}, Sp {specificity:.4f}, mergeable rate {true_rate():.4f}\n")
    print(
        "| labels | Se bias (pp) | Sp bias (pp) | corrected bias (pp) | corrected RMSE (pp) | coverage "
        "| shown |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in table(figures, datasets, tasks):
        print("| " + " | ".join(row) + " |")
    sys.stdout.flush()


def goals(quick: bool = False) -> list[Any]:
    """Issue 31 §3: weighted by how they were drawn, the labels give the corrected rate within 1 point of
    the truth on average and a 95% interval that holds it in at least 93% of data sets. Quick: 150 data
    sets, bootstrap 300."""
    from _common import Goal  # type: ignore[import-not-found]  # beside this script, as run_all runs it

    datasets, bootstrap, tasks = (150, 300, 40) if quick else (500, 500, 40)
    figures = study(datasets, tasks, bootstrap)
    print_study(figures, datasets, tasks, bootstrap)
    weighted = figures["weighted"]
    truth = true_rate()
    unweighted = figures["unweighted"]
    off = 100 * unweighted.bias(unweighted.corrected, truth)
    note = f"{datasets} data sets of {tasks} tasks; unweighted labels give a bias of {off:+.1f} pp"
    return [
        Goal(
            "issue 31 §3: weighted labels",
            "|bias| of the corrected rate (points)",
            abs(100 * weighted.bias(weighted.corrected, truth)),
            1.0,
            "pp",
            note,
        ),
        Goal(
            "issue 31 §3: weighted labels",
            "1 − coverage of its 95% interval",
            1 - float(np.mean(weighted.covered)),
            0.07,
            "",
            note,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=500)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument(
        "--bootstrap", type=int, default=500, help="replicates per bootstrap (0: no interval)"
    )
    args = parser.parse_args(argv)
    figures = study(args.datasets, args.tasks, args.bootstrap)
    print_study(figures, args.datasets, args.tasks, args.bootstrap)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
