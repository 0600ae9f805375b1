"""Contrasts (spec §7): does arm B beat arm A for this model, and model B model A in this arm, by how much?

A contrast compares two cells that share a model (``kind`` "arm") or an arm (``kind`` "model"), over the
tasks both sides have measured runs of: the task set is the same on both sides, so a task's difficulty
cancels. Its value is the mean, over those tasks, of the per-task difference b − a of each rate (test-pass,
mergeable and their difference), each side's rate of a task being its share of that side's runs: every task
counts once, whatever the number of runs on either side (grading.report.estimands).

The interval is a t interval on the per-task differences (tasks − 1 degrees of freedom), so it is paired:
a task's difficulty is in both sides of its difference. Each contrast has its standard error, a two-sided
p-value against no difference and the Holm-adjusted p-value within its family (one kind, one metric).
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from grading.report.estimands import holm, task_mean
from grading.report.models import Contrast, ContrastKind, ContrastMetric, PairSums
from grading.report.power import contrast_precisions
from grading.report.stats import CONFIDENCE, percentile, resample_sums
from grading.report.sums import PartSums, sums_by_task

METRICS: tuple[ContrastMetric, ...] = ("test_pass_rate", "mergeable_rate", "difference")
KINDS: tuple[ContrastKind, ...] = ("arm", "model")
FEW_TASKS = 10  # a contrast over fewer shared tasks is marked "few tasks": its interval is wide and rough


def _side_rate(metric: ContrastMetric, n: float, passed: float, merged: float) -> float:
    if metric == "test_pass_rate":
        return passed / n
    if metric == "mergeable_rate":
        return merged / n
    return (passed - merged) / n


def _totals(pairs: Sequence[PairSums]) -> list[int] | None:
    """The six sums over the shared tasks; None without one."""
    return [sum(p[i] for p in pairs) for i in range(6)] if pairs else None


def _value_of_totals(metric: ContrastMetric, t: list[int] | None) -> float | None:
    if t is None:
        return None
    return _side_rate(metric, t[3], t[4], t[5]) - _side_rate(metric, t[0], t[1], t[2])


def cell_task_sums(parts: Iterable[PartSums]) -> dict[tuple[str, str], dict[str, tuple[int, int, int]]]:
    """Per (arm, model), per task: its (measured, test-pass, mergeable) runs, from the report's parts. A
    cell with nothing measured is still there (its contrasts have no value)."""

    cells: dict[tuple[str, str], list[PartSums]] = defaultdict(list)
    for p in parts:
        cells[(p.arm, p.model)].append(p)
    return {cell: sums_by_task(group) for cell, group in cells.items()}


def pair_sums(a: dict[str, tuple[int, int, int]], b: dict[str, tuple[int, int, int]]) -> list[PairSums]:
    """Per task with measured runs on both sides (sorted by task): the six sums of :data:`PairSums`."""
    return [(*a[task], *b[task]) for task in sorted(a.keys() & b.keys())]


def paired_intervals(
    pairs: Sequence[PairSums], replicates: int, rng: random.Random
) -> dict[ContrastMetric, tuple[float, float] | None]:
    """The 95% percentile interval of b − a for each metric, from one set of paired task-level replicates
    (a drawn task brings both sides' runs). None below two shared tasks or with no replicates."""

    if len(pairs) < 2 or replicates == 0:
        return dict.fromkeys(METRICS)
    drawn: Any = resample_sums(pairs, replicates, rng).astype(float)
    out: dict[ContrastMetric, tuple[float, float] | None] = {}
    tail = (1 - CONFIDENCE) / 2
    totals = _totals(pairs)
    for metric in METRICS:
        point = _value_of_totals(metric, totals)
        assert point is not None
        # _side_rate on the replicates' columns: numpy arrays, the same divisions
        b_side = _side_rate(metric, drawn[:, 3], drawn[:, 4], drawn[:, 5])
        a_side = _side_rate(metric, drawn[:, 0], drawn[:, 1], drawn[:, 2])
        values = sorted((b_side - a_side).tolist())  # type: ignore[attr-defined]
        # As for the cells: a percentile bound that misses the point estimate moves to it.
        out[metric] = (min(point, percentile(values, tail)), max(point, percentile(values, 1 - tail)))
    return out


def _interval_reason(tasks: int, replicates: int) -> str | None:
    if tasks == 0:
        return "no task has measured runs on both sides"
    if tasks == 1:
        return "one task has measured runs on both sides: nothing to resample"
    if replicates == 0:
        return "no intervals were asked for (bootstrap 0)"
    return None


def compared_sides(cells: Iterable[tuple[str, str]], kind: ContrastKind) -> dict[str, list[str]]:
    """The fixed value -> the sorted values compared under it (two or more)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for arm, model in cells:
        if kind == "arm":
            seen[model].add(arm)
        else:
            seen[arm].add(model)
    return {fixed: sorted(values) for fixed, values in sorted(seen.items()) if len(values) > 1}


def _task_differences(pairs: Sequence[PairSums]) -> dict[ContrastMetric, list[float]]:
    """Per metric, per shared task: b's rate of the task less a's (each side's share of its own runs)."""
    return {
        metric: [_side_rate(metric, p[3], p[4], p[5]) - _side_rate(metric, p[0], p[1], p[2]) for p in pairs]
        for metric in METRICS
    }


def contrasts_from_sums(
    cells: dict[tuple[str, str], dict[str, tuple[int, int, int]]],
    *,
    replicates: int,
    seed: int,
    target: float | None = None,
) -> list[Contrast]:
    """Every contrast of the report, from the sums :func:`cell_task_sums` gives (per (arm, model), per task,
    its measured, test-pass and mergeable runs): for each model each pair of arms, then for each arm each
    pair of models, three metrics each (b − a, ``a`` before ``b`` in sorted order). ``replicates`` 0 gives
    no intervals (the report's ``--bootstrap 0``); ``seed`` is kept for the report's signature. With
    ``target`` (a half-width such as 0.05) each carries its :class:`Precision`."""

    del seed  # the t intervals draw nothing
    out: list[Contrast] = []
    for kind in KINDS:
        for fixed, values in compared_sides(cells, kind).items():
            for a, b in itertools.combinations(values, 2):
                side_a, side_b = ((a, fixed), (b, fixed)) if kind == "arm" else ((fixed, a), (fixed, b))
                pairs = pair_sums(cells[side_a], cells[side_b])
                runs_count = sum(p[0] + p[3] for p in pairs)
                diffs = _task_differences(pairs)
                reason = _interval_reason(len(pairs), replicates)
                means = {
                    metric: task_mean(
                        diffs[metric], (-1.0, 1.0), intervals=replicates > 0, no_interval=reason
                    )
                    for metric in METRICS
                }
                intervals = {metric: means[metric].ci for metric in METRICS}
                precisions = contrast_precisions(pairs, intervals, target) if target else {}
                for metric in METRICS:
                    m = means[metric]
                    out.append(
                        Contrast(
                            kind=kind, fixed=fixed, a=a, b=b, metric=metric, value=m.value, ci=m.ci,
                            tasks=len(pairs), runs=runs_count, few_tasks=len(pairs) < FEW_TASKS,
                            interval_reason=m.reason if len(pairs) > 1 else reason,
                            precision=precisions.get(metric), se=m.se, method=m.method, p_value=m.p_value,
                            tasks_a=len(cells[side_a]), tasks_b=len(cells[side_b]),
                        )
                    )  # fmt: skip
    families: dict[tuple[str, str], list[Contrast]] = defaultdict(list)
    for c in out:
        families[(c.kind, c.metric)].append(c)
    for family in families.values():
        adjusted = holm([c.p_value for c in family])
        size = sum(c.p_value is not None for c in family)
        for c, p in zip(family, adjusted, strict=True):
            c.p_holm = p
            c.family_size = size if c.p_value is not None else 0
    return out
