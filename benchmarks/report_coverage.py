"""Coverage of the report's 95% intervals, on simulated run sets whose truth is known.

    .venv/bin/python benchmarks/report_coverage.py [--datasets 1000] [--sizes 5,10,20,40] [--bootstrap 1000]

Each data set is T tasks x 2 arms x 2 models, with a per-task difficulty (a random effect on the logit of
passing the tests and of being mergeable once they pass, so runs of one task are correlated), a per-task
arm effect (so contrasts vary between tasks), and unequal repetitions: 1 to 5 runs per task, arm and model,
arm "b" losing runs on its hard tasks (the design of issue 31). The truth is the population's: the mean over
tasks of each task's probability (of passing, of being mergeable, of the gap), computed once from 400,000
simulated tasks, and for a contrast the mean over tasks of the per-task difference.

Per method, per figure (cells: test-pass, mergeable, gap; contrasts: the same three, b − a), the share of
data sets whose interval holds the truth, the lowest and highest over the four cells or the four contrasts.
The methods:

- ``pooled bootstrap``: the report before issue 31: the pooled ratio over runs, percentile bootstrap over
  tasks (``grading.report.stats.bootstrap_rates``, ``grading.report.contrasts.paired_intervals``);
- ``task bootstrap``: the mean of per-task rates, percentile bootstrap over tasks;
- ``t on tasks``: the mean of per-task rates, t interval with tasks − 1 degrees of freedom
  (``grading.report.estimands.task_mean``: what the report uses for contrasts);
- ``t, quarter tasks``: the same, the spread of a cell's rates estimated as if a quarter of a task sat at 0
  and at 1 besides (``RATE_PRIOR_WEIGHT``: what the report uses for cells; contrasts as ``t on tasks``).

Every data set has its own seed (0 to datasets − 1): nothing is tuned to one.

Then the judge-error correction: the same design, the primary judge of each model with a known sensitivity
and specificity (model m1: 0.90 and 0.85; m2: 0.85 and 0.65) deciding the runs that passed the tests, and a
human labelling a random half of the runs the judge decided (all the review queue can label). Per cell, the
bias (mean estimate − truth, in points) and root mean square error of the mergeable rate as observed, as the
report corrected it before issue 31 (Rogan-Gladen on the rate over every measured run, one pooled sensitivity
and specificity), and as ``build_report`` corrects it now.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from grading.report.build import build_report  # noqa: E402
from grading.report.contrasts import paired_intervals  # noqa: E402
from grading.report.estimands import RATE_PRIOR_WEIGHT, task_mean  # noqa: E402
from grading.report.models import GradedRun  # noqa: E402
from grading.report.stats import bootstrap_rates, rogan_gladen  # noqa: E402

ARMS = ("a", "b")
MODELS = ("m1", "m2")
CELLS = [(arm, model) for arm in ARMS for model in MODELS]
CONTRASTS = [(("a", m), ("b", m)) for m in MODELS] + [((arm, "m1"), (arm, "m2")) for arm in ARMS]
FIGURES = ("test_pass_rate", "mergeable_rate", "difference")
METHODS = ("pooled bootstrap", "task bootstrap", "t on tasks", "t, quarter tasks")
BOUNDS = {"cell": (0.0, 1.0), "contrast": (-1.0, 1.0)}

# Logit-scale effects: pass = σ(PASS + task + arm + model + task×arm), mergeable given a pass likewise.
PASS, MERGE = 0.6, -0.2
ARM_EFFECT = {"a": (0.0, 0.0), "b": (0.3, 0.5)}
MODEL_EFFECT = {"m1": (0.0, 0.0), "m2": (-0.4, -0.3)}
TASK_SD = (1.2, 1.0)  # difficulty spread of passing and of being mergeable once passed
INTERACTION_SD = 0.4  # per task and arm


def _sigmoid(x: Any) -> Any:
    return 1 / (1 + np.exp(-x))


def task_probabilities(rng: np.random.Generator, tasks: int) -> dict[tuple[str, str], tuple[Any, Any]]:
    """Per cell, per task: the probability of passing the tests and of being mergeable."""
    d_pass = rng.normal(0, TASK_SD[0], tasks)
    d_merge = rng.normal(0, TASK_SD[1], tasks)
    inter = {arm: rng.normal(0, INTERACTION_SD, (2, tasks)) for arm in ARMS}
    out = {}
    for arm, model in CELLS:
        p = _sigmoid(PASS + d_pass + ARM_EFFECT[arm][0] + MODEL_EFFECT[model][0] + inter[arm][0])
        q = _sigmoid(MERGE + d_merge + ARM_EFFECT[arm][1] + MODEL_EFFECT[model][1] + inter[arm][1])
        out[(arm, model)] = (p, p * q)
    return out


def truth() -> dict[tuple[str, Any], tuple[float, float, float]]:
    """The population's figures, from many simulated tasks: per cell and per contrast."""
    probs = task_probabilities(np.random.default_rng(123_456), 400_000)
    values = {cell: (p, m, p - m) for cell, (p, m) in probs.items()}
    out: dict[tuple[str, Any], tuple[float, float, float]] = {}
    for cell, v in values.items():
        out[("cell", cell)] = tuple(float(x.mean()) for x in v)  # type: ignore[assignment]
    for a, b in CONTRASTS:
        out[("contrast", (a, b))] = tuple(  # type: ignore[assignment]
            float((vb - va).mean()) for va, vb in zip(values[a], values[b], strict=True)
        )
    return out


def simulate(seed: int, tasks: int) -> dict[tuple[str, str], list[tuple[int, int, int]]]:
    """One data set: per cell, per task, its (measured, test-pass, mergeable) runs."""
    rng = np.random.default_rng(seed)
    probs = task_probabilities(rng, tasks)
    hard = probs[("a", "m1")][0] < 0.5  # arm b keeps fewer runs of these
    out = {}
    for cell, (p, m) in probs.items():
        keep = np.where(hard & (cell[0] == "b"), 0.15, 0.6)
        runs = 1 + rng.binomial(4, keep)
        passed = rng.binomial(runs, p)
        merged = rng.binomial(passed, np.divide(m, p, out=np.zeros_like(m), where=p > 0))
        out[cell] = list(zip(runs.tolist(), passed.tolist(), merged.tolist(), strict=True))
    return out


def _per_task(sums: Sequence[tuple[int, int, int]]) -> list[tuple[float, float, float]]:
    return [(k / n, j / n, (k - j) / n) for n, k, j in sums]


def _task_bootstrap(values: Any, replicates: int, rng: np.random.Generator) -> list[tuple[float, float]]:
    draws = values[rng.integers(0, len(values), (replicates, len(values)))].mean(axis=1)
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def intervals(
    data: dict[tuple[str, str], list[tuple[int, int, int]]], replicates: int, seed: int
) -> dict[str, dict[tuple[str, Any], list[tuple[float, float] | None]]]:
    """Per method, per figure key, the three intervals (test-pass, mergeable, gap)."""
    out: dict[str, dict[tuple[str, Any], list[tuple[float, float] | None]]] = defaultdict(dict)
    rng = np.random.default_rng(seed + 7_777_777)
    for cell, sums in data.items():
        values = _per_task(sums)
        if replicates:
            pooled = bootstrap_rates(sums, replicates, random.Random(seed))
            out["pooled bootstrap"][("cell", cell)] = [e.ci for e in pooled]
            out["task bootstrap"][("cell", cell)] = list(_task_bootstrap(np.array(values), replicates, rng))
        out["t on tasks"][("cell", cell)] = [
            task_mean([v[i] for v in values], BOUNDS["cell"]).ci for i in range(3)
        ]
        out["t, quarter tasks"][("cell", cell)] = [
            task_mean([v[i] for v in values], BOUNDS["cell"], prior_weight=RATE_PRIOR_WEIGHT).ci
            for i in range(3)
        ]
    for a, b in CONTRASTS:
        pairs = [(*x, *y) for x, y in zip(data[a], data[b], strict=True)]
        diffs = [tuple(vb - va for va, vb in zip(x, y, strict=True)) for x, y in
                 zip(_per_task(data[a]), _per_task(data[b]), strict=True)]  # fmt: skip
        if replicates:
            paired = paired_intervals(pairs, replicates, random.Random(seed))
            out["pooled bootstrap"][("contrast", (a, b))] = [paired[f] for f in FIGURES]  # type: ignore[index]
            out["task bootstrap"][("contrast", (a, b))] = list(
                _task_bootstrap(np.array(diffs), replicates, rng)
            )
        out["t on tasks"][("contrast", (a, b))] = [
            task_mean([d[i] for d in diffs], BOUNDS["contrast"]).ci for i in range(3)
        ]
        out["t, quarter tasks"][("contrast", (a, b))] = out["t on tasks"][("contrast", (a, b))]
    return out


def coverage(
    sizes: Sequence[int], datasets: int, replicates: int
) -> dict[tuple[int, str, str, str], tuple[float, float]]:
    """(tasks, method, "cell" | "contrast", figure) -> (lowest, highest) coverage over the cells or
    contrasts."""
    known = truth()
    hits: dict[tuple[int, str, tuple[str, Any], str], int] = defaultdict(int)
    counted: dict[tuple[int, str, tuple[str, Any], str], int] = defaultdict(int)
    for tasks in sizes:
        for seed in range(datasets):
            found = intervals(simulate(seed * 1000 + tasks, tasks), replicates, seed)
            for method, figures in found.items():
                for key, cis in figures.items():
                    for figure, ci, true in zip(FIGURES, cis, known[key], strict=True):
                        counted[(tasks, method, key, figure)] += 1
                        hits[(tasks, method, key, figure)] += bool(
                            ci and ci[0] - 1e-12 <= true <= ci[1] + 1e-12
                        )
    out: dict[tuple[int, str, str, str], list[float]] = defaultdict(list)
    for (tasks, method, key, figure), n in counted.items():
        out[(tasks, method, key[0], figure)].append(hits[(tasks, method, key, figure)] / n)
    return {k: (min(v), max(v)) for k, v in out.items()}


JUDGE = {"m1": (0.90, 0.85), "m2": (0.85, 0.65)}  # (sensitivity, specificity) per model under test
LABELLED = 0.5  # share of judged runs a human labels


def judged_runs(seed: int, tasks: int) -> list[GradedRun]:
    """One data set as graded runs: per task, arm and model 1 to 5 runs; a run passes the tests with the
    task's probability, is truly mergeable given that with the task's, and the judge calls it mergeable
    with its model's sensitivity (truly mergeable) or 1 − specificity (not); half the judged runs are
    labelled."""
    rng = np.random.default_rng(seed)
    probs = task_probabilities(rng, tasks)
    out = []
    for (arm, model), (p, m) in probs.items():
        se, sp = JUDGE[model]
        for t in range(tasks):
            for i in range(1 + int(rng.binomial(4, 0.6))):
                name = f"{arm}/{model}/t{t}/{i}"
                if rng.random() >= p[t]:
                    out.append(GradedRun(run=name, task=f"t{t}", arm=arm, model=model, status="not_mergeable",
                                         test_pass=False, mergeable=False, checks_passed=False))  # fmt: skip
                    continue
                truly = bool(rng.random() < m[t] / p[t])
                called = bool(rng.random() < (se if truly else 1 - sp))
                human = truly if rng.random() < LABELLED else None
                status = "mergeable" if called else "not_mergeable"
                out.append(GradedRun(run=name, task=f"t{t}", arm=arm, model=model, status=status,
                                     test_pass=True, mergeable=called, checks_passed=True,
                                     human_mergeable=human))  # fmt: skip
    return out


def correction_bias(sizes: Sequence[int], datasets: int) -> dict[tuple[int, str], tuple[float, float, float]]:
    """(tasks, estimator) -> (lowest bias, highest bias, largest RMSE) over the four cells."""
    known = truth()
    errors: dict[tuple[int, str, tuple[str, str]], list[float]] = defaultdict(list)
    for tasks in sizes:
        for seed in range(datasets):
            runs = judged_runs(seed * 1000 + tasks, tasks)
            rep = build_report(runs, bootstrap=0)
            labelled = [r for r in runs if r.human_mergeable is not None]
            pos = [r for r in labelled if r.human_mergeable]
            neg = [r for r in labelled if not r.human_mergeable]
            se = sum(bool(r.mergeable) for r in pos) / len(pos) if pos else None
            sp = sum(not r.mergeable for r in neg) / len(neg) if neg else None
            for cell in rep.cells:
                key = (cell.arm, cell.model)
                true = known[("cell", key)][1]
                mine = [r for r in runs if (r.arm, r.model) == key]
                pooled = sum(bool(r.mergeable) for r in mine) / len(mine)
                old = rogan_gladen(pooled, se, sp) if se is not None and sp is not None else None
                now = cell.corrected_mergeable_rate.value if cell.corrected_mergeable_rate else None
                for name, value in (("observed", cell.mergeable_rate.value), ("corrected before", old),
                                    ("corrected now", now)):  # fmt: skip
                    if value is not None:
                        errors[(tasks, name, key)].append(value - true)
    out: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for (tasks, name, _), errs in errors.items():
        e = np.array(errs)
        out[(tasks, name)].append((float(e.mean()), float(np.sqrt((e**2).mean()))))
    return {k: (min(b for b, _ in v), max(b for b, _ in v), max(r for _, r in v)) for k, v in out.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--sizes", default="5,10,20,40")
    parser.add_argument("--bootstrap", type=int, default=1000, help="replicates per bootstrap (0: t only)")
    parser.add_argument("--bias-datasets", type=int, default=300, help="data sets per size for the bias")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    table = coverage(sizes, args.datasets, args.bootstrap)
    print(f"Coverage of 95% intervals, {args.datasets} data sets per size (lowest-highest over 4 cells or "
          "4 contrasts)")  # fmt: skip
    head = ["tasks", "method"] + [
        f"{kind} {f}" for kind in ("cell", "contrast") for f in ("pass", "merge", "gap")
    ]
    print(" | ".join(head))
    for tasks in sizes:
        for method in METHODS:
            if (tasks, method, "cell", FIGURES[0]) not in table:
                continue
            row = [str(tasks), method]
            for kind in ("cell", "contrast"):
                for figure in FIGURES:
                    lo, hi = table[(tasks, method, kind, figure)]
                    row.append(f"{lo:.3f}-{hi:.3f}")
            print(" | ".join(row))
    if args.bias_datasets:
        bias = correction_bias(sizes, args.bias_datasets)
        print()
        print(f"Mergeable rate against the truth, {args.bias_datasets} data sets per size: bias lowest to "
              "highest over the 4 cells, and the largest RMSE, in points")  # fmt: skip
        print("tasks | estimator | bias | RMSE")
        for tasks in sizes:
            for name in ("observed", "corrected before", "corrected now"):
                lo, hi, rmse = bias[(tasks, name)]
                print(f"{tasks} | {name} | {100 * lo:+.1f} to {100 * hi:+.1f} | {100 * rmse:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
