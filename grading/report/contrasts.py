"""Contrasts (spec §7): does arm B beat arm A for this model, and model B model A in this arm, by how much?

A contrast compares two cells that share a model (``kind`` "arm") or an arm (``kind`` "model"), over the
tasks both sides have measured runs of: the task set is the same on both sides, so a task's difficulty
cancels. Its value is b − a for each of the cells' rates (test-pass, mergeable and their difference), each
the pooled ratio over that side's runs of the shared tasks.

The interval is a *paired* task-level bootstrap: a replicate draws the shared tasks with replacement and a
drawn task brings both sides' runs, so the two rates move together as they do in the data. It is seeded
per contrast (from the report's seed and the contrast's key), like the cells.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from grading.report.models import Contrast, ContrastKind, ContrastMetric, PairSums
from grading.report.power import contrast_precisions
from grading.report.stats import CONFIDENCE, in_parallel, percentile, resample_sums
from grading.report.sums import PartSums, sums_by_task

METRICS: tuple[ContrastMetric, ...] = ("test_pass_rate", "mergeable_rate", "difference")
KINDS: tuple[ContrastKind, ...] = ("arm", "model")
FEW_TASKS = 5  # a contrast over fewer shared tasks is marked "few tasks": its interval covers less


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


def _sides(cells: Iterable[tuple[str, str]], kind: ContrastKind) -> dict[str, list[str]]:
    """The fixed value -> the sorted values compared under it (two or more)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for arm, model in cells:
        if kind == "arm":
            seen[model].add(arm)
        else:
            seen[arm].add(model)
    return {fixed: sorted(values) for fixed, values in sorted(seen.items()) if len(values) > 1}


def contrasts_from_sums(
    cells: dict[tuple[str, str], dict[str, tuple[int, int, int]]],
    *,
    replicates: int,
    seed: int,
    target: float | None = None,
) -> list[Contrast]:
    """Every contrast of the report, from the sums :func:`cell_task_sums` gives (per (arm, model), per task,
    its measured, test-pass and mergeable runs): for each model each pair of arms, then for each arm each
    pair of models, three metrics each (b − a, ``a`` before ``b`` in sorted order). With ``target`` (a
    half-width such as 0.05) each carries its :class:`Precision`."""

    compared: list[tuple[ContrastKind, str, str, str, list[PairSums]]] = []
    for kind in KINDS:
        for fixed, values in _sides(cells, kind).items():
            for a, b in itertools.combinations(values, 2):
                side_a, side_b = ((a, fixed), (b, fixed)) if kind == "arm" else ((fixed, a), (fixed, b))
                compared.append((kind, fixed, a, b, pair_sums(cells[side_a], cells[side_b])))

    def intervals_of(
        contrast: tuple[ContrastKind, str, str, str, list[PairSums]],
    ) -> dict[ContrastMetric, tuple[float, float] | None]:
        kind, fixed, a, b, pairs = contrast
        rng = random.Random("\x1f".join([str(seed), "contrast", kind, fixed, a, b]))
        return paired_intervals(pairs, replicates, rng)

    out: list[Contrast] = []
    for (kind, fixed, a, b, pairs), intervals in zip(
        compared, in_parallel(intervals_of, compared), strict=True
    ):
        runs_count = sum(p[0] + p[3] for p in pairs)
        totals = _totals(pairs)
        precisions = contrast_precisions(pairs, intervals, target) if target else {}
        for metric in METRICS:
            ci = intervals[metric]
            out.append(
                Contrast(
                    kind=kind, fixed=fixed, a=a, b=b, metric=metric,
                    value=_value_of_totals(metric, totals), ci=ci, tasks=len(pairs), runs=runs_count,
                    few_tasks=len(pairs) < FEW_TASKS,
                    interval_reason=None if ci else _interval_reason(len(pairs), replicates),
                    precision=precisions.get(metric),
                )
            )  # fmt: skip
    return out
