"""The report's statistics (spec §7, §9; docs/report.md): the cells' rates as means over tasks (their t
intervals are grading.report.estimands'), the task-level resampling, and the Rogan-Gladen correction of the
mergeable rate from human labels. The pooled-ratio bootstrap of the rates (:func:`bootstrap_rates`) is the
report's method before format 3, kept for benchmarks/report_coverage.py.

Pure arithmetic over per-task sums: no run records here (:mod:`grading.report.build` turns runs into sums).
numpy is imported where a bootstrap runs, so most commands never load it.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from grading.report.estimands import RATE_PRIOR_WEIGHT, TaskMean, task_mean

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

CONFIDENCE = 0.95
MIN_LABELLED = 20  # labelled runs needed before the judge-error correction is shown


class Estimate(BaseModel):
    value: float | None
    ci: tuple[float, float] | None = None
    se: float | None = None  # standard error (of the mean of per-task rates); None where unknown
    # How ci was made: "t" (t interval on per-task rates), "no_spread" (every task gave the same value:
    # exact bound on the share of tasks that would not), "bootstrap" (percentile, tasks resampled).
    method: str | None = None
    interval_reason: str | None = None  # why ci is null, or what a "no_spread" interval bounds


class JudgeAccuracy(BaseModel):
    """The primary judge's outcome against human labels on mergeable. Sensitivity and specificity are
    Hájek ratios: each labelled run weighs 1 / its inclusion probability (``weighting``
    "inclusion_probability"), or all the same where the labels give none ("uniform_assumed")."""

    labelled: int
    needed: int = MIN_LABELLED
    sensitivity: float | None = None  # P(mergeable | a human says mergeable)
    specificity: float | None = None  # P(not mergeable | a human says not mergeable)
    undefined_reason: str | None = None
    # How the labelled runs were weighed (None: no labelled run): by 1 / inclusion probability, or all
    # alike because the labels do not say how they were drawn (uniform sampling assumed).
    weighting: Literal["inclusion_probability", "uniform_assumed"] | None = None
    # Kish's effective number of labelled runs, (Σw)² / Σw²: what unequal weights leave of their count.
    effective_labelled: float | None = None
    weighting_note: str | None = None  # the weighting in words, for the page and the files


def rogan_gladen(rate: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an observed ``rate`` of a classifier with this sensitivity and specificity,
    clipped to [0, 1]; None when Se + Sp <= 1 (the classifier is no better than chance)."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(1.0, max(0.0, (rate + specificity - 1) / youden))


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0-1) of sorted values, interpolating linearly between order statistics."""
    if not ordered:
        raise ValueError("no values")
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _interval(values: list[float], point: float) -> tuple[float, float] | None:
    """The percentile interval of bootstrap replicates. A percentile bound of a ratio can, rarely, miss the
    point estimate on small skewed data; the bound then moves to the estimate, so an interval always
    contains the number it is printed beside."""
    if not values:
        return None
    values.sort()
    tail = (1 - CONFIDENCE) / 2
    return (min(point, percentile(values, tail)), max(point, percentile(values, 1 - tail)))


def percentile_interval(values: list[float], point: float) -> tuple[float, float] | None:
    """The 95% percentile interval of bootstrap replicates, widened to hold ``point`` (see _interval)."""
    return _interval(values, point)


# Per task, the sums every rate is a ratio of: (measured runs, test-pass runs, mergeable runs).
TaskSums = tuple[int, int, int]


def _rates(sums: TaskSums) -> tuple[float, float, float]:
    n, passed, merged = sums
    return passed / n, merged / n, (passed - merged) / n


def _mersenne_twister(rng: random.Random) -> Any:
    """A numpy Generator on a copy of ``rng``'s state: it draws the values ``rng.random()`` would.

    Python's ``random.Random`` and numpy's MT19937 are the same Mersenne Twister, and both make a float in
    [0, 1) from two 32-bit words the same way, so copying the state across gives exactly the values the
    Python calls would return: a report does not depend on which of the two drew it. Hand the generator
    to :func:`_move_on` when done, so ``rng`` is left where as many calls would have left it.
    """
    import numpy as np  # here, not at the top: only a report with intervals needs it

    _, internal, _ = rng.getstate()
    bits = np.random.MT19937()
    key = np.array(internal[:-1], dtype=np.uint32)
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": internal[-1]}}
    return np.random.Generator(bits)


def _move_on(rng: random.Random, generator: Any) -> None:
    version, _, gauss = rng.getstate()
    after = generator.bit_generator.state["state"]
    rng.setstate((version, (*after["key"].tolist(), int(after["pos"])), gauss))


def uniforms(rng: random.Random, count: int) -> Any:
    """The next ``count`` values of ``rng.random()`` as a numpy array, drawn in C, and ``rng`` left where
    ``count`` calls would have left it (see :func:`_mersenne_twister`)."""
    generator = _mersenne_twister(rng)
    values = generator.random(count)
    _move_on(rng, generator)
    return values


_THREADS = min(4, os.cpu_count() or 1)


def in_parallel[T, R](fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``fn`` over ``items``, in their order, on up to four threads (one per processor): a bootstrap spends
    its time in numpy, which lets other threads run meanwhile. Each item must carry its own random
    generator (every cell and contrast is seeded from its key), so the results do not depend on which
    thread ran what, nor in which order."""
    if _THREADS < 2 or len(items) < 2:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=_THREADS, thread_name_prefix="bootstrap") as pool:
        return list(pool.map(fn, items))


# Draws per block of the resampling: a block's arrays (about 128 KB each) stay in the processor's cache,
# where one array of every draw (16 MB at 2000 replicates of 1000 tasks) would not, and reusing them spares
# the memory allocation of each replicate set. About half the time of drawing all at once.
_BLOCK_DRAWS = 16_384
_PACKED_BITS = 63  # the non-negative range of an int64


def _packed_columns(table: NDArray[np.int64]) -> list[tuple[NDArray[np.int64], list[tuple[int, int, int]]]]:
    """The columns of per-task sums, packed so that one gather and one sum add up several: per group, the
    packed column and its fields (column, shift, mask). A column's sums over a replicate are at most the
    number of tasks times its largest value, so non-negative columns side by side in the bits of one int64
    never carry into each other. A column with a negative value, or too large to share, is a group of its own
    (mask 0: taken whole)."""
    import numpy as np

    groups: list[tuple[NDArray[np.int64], list[tuple[int, int, int]]]] = []
    used = _PACKED_BITS
    for j, column in enumerate(table.T):
        bits = max(1, (int(column.max()) * len(table)).bit_length())
        if int(column.min()) < 0 or bits >= _PACKED_BITS:
            groups.append((np.ascontiguousarray(column), [(j, 0, 0)]))
            used = _PACKED_BITS
            continue
        if used + bits > _PACKED_BITS:
            groups.append((np.zeros(len(table), dtype=np.int64), []))
            used = 0
        packed, fields = groups[-1]
        packed |= column << used
        fields.append((j, used, (1 << bits) - 1))
        used += bits
    return groups


def resample_sums(sums: Sequence[tuple[int, ...]], replicates: int, rng: random.Random) -> NDArray[np.int64]:
    """``replicates`` resamples of per-task sums, as a (replicates, columns) array: each draws len(sums)
    tasks with replacement and adds up their sums, column by column. Vectorised; the draws are those of
    ``rng.choices(sums, k=len(sums))`` called once per replicate, so the result is the same as that loop's."""
    import numpy as np

    if replicates == 0 or not sums:
        return np.zeros((0, len(sums[0]) if sums else 0), dtype=np.int64)
    population = len(sums)
    table = np.asarray(sums, dtype=np.int64)
    out = np.empty((replicates, table.shape[1]), dtype=np.int64)
    groups = _packed_columns(table)
    rows = max(1, _BLOCK_DRAWS // population)  # replicates per block, drawn in turn: the same stream
    draws = np.empty(rows * population)
    index = np.empty(rows * population, dtype=np.intp)
    picked = np.empty(rows * population, dtype=np.int64)
    generator = _mersenne_twister(rng)
    for start in range(0, replicates, rows):
        block = min(rows, replicates - start)
        size = block * population
        generator.random(out=draws[:size])
        # random.choices picks population[floor(random() * n)] with n a float: the same product, and the
        # same floor, as the cast to integers truncates and the product is >= 0.
        np.multiply(draws[:size], float(population), out=draws[:size])
        index[:size] = draws[:size]
        for packed, fields in groups:
            np.take(packed, index[:size], out=picked[:size])
            added = picked[:size].reshape(block, population).sum(axis=1)
            for j, shift, mask in fields:
                out[start : start + block, j] = (added >> shift) & mask if mask else added
    _move_on(rng, generator)
    return out


def resample_tasks(tasks: Sequence[TaskSums], replicates: int, rng: random.Random) -> NDArray[np.int64]:
    """Bootstrap replicates of a cell, one row of (measured, test-pass, mergeable) sums each: a replicate
    draws len(tasks) tasks with replacement, and a drawn task brings all its runs (its sums). The same
    replicates serve every rate of the cell, so a difference is paired. None (no rows) below two tasks."""
    return resample_sums(tasks if len(tasks) >= 2 else [], replicates, rng)


def rate_estimates(
    tasks: Sequence[TaskSums], replicates: NDArray[np.int64]
) -> tuple[Estimate, Estimate, Estimate]:
    total: TaskSums = tuple(sum(t[i] for t in tasks) for i in range(3))  # type: ignore[assignment]
    if total[0] == 0:
        return Estimate(value=None), Estimate(value=None), Estimate(value=None)
    point = _rates(total)
    if not len(replicates):
        return Estimate(value=point[0]), Estimate(value=point[1]), Estimate(value=point[2])
    import numpy as np

    n, passed, merged = replicates.T
    # The same divisions as _rates, in float64 like Python's: the same values.
    columns = (passed / n, merged / n, (passed - merged) / n)
    return tuple(  # type: ignore[return-value]
        Estimate(value=v, ci=_interval(np.sort(c).tolist(), v)) for v, c in zip(point, columns, strict=True)
    )


def bootstrap_rates(
    tasks: Sequence[TaskSums], replicates: int, rng: random.Random
) -> tuple[Estimate, Estimate, Estimate]:
    """Test-pass rate, mergeable rate and their difference over per-task sums, with paired task-level
    percentile bootstrap intervals (one resample of tasks gives all three, so the difference's interval
    accounts for their correlation). An interval needs at least two tasks."""
    return rate_estimates(tasks, resample_tasks(tasks, replicates, rng))


def as_estimate(mean: TaskMean) -> Estimate:
    """A :class:`grading.report.estimands.TaskMean` as the report's :class:`Estimate`."""
    return Estimate(value=mean.value, ci=mean.ci, se=mean.se, method=mean.method, interval_reason=mean.reason)


def task_rate_estimates(tasks: Sequence[TaskSums], *, intervals: bool) -> tuple[Estimate, Estimate, Estimate]:
    """Test-pass rate, mergeable rate and their difference of a cell, each the mean over its tasks of the
    task's own rate (each task counts once, whatever its runs), with its standard error and 95% t interval
    over tasks (:func:`grading.report.estimands.task_mean`, the spread with :data:`RATE_PRIOR_WEIGHT`).
    Without ``intervals``, no interval."""
    measured = [t for t in tasks if t[0]]
    rates = [_rates(t) for t in measured]
    why = None if intervals else "no intervals were asked for (bootstrap 0)"
    return tuple(  # type: ignore[return-value]
        as_estimate(
            task_mean(
                [r[i] for r in rates],
                (0.0, 1.0),
                intervals=intervals,
                no_interval=why,
                prior_weight=RATE_PRIOR_WEIGHT,
            )
        )
        for i in range(3)
    )


# Per labelled task, each labelled run weighing 1 / its inclusion probability (1 where uniform sampling is
# assumed): (human-mergeable runs the judge called mergeable, human-mergeable runs, human-not-mergeable
# runs the judge called not mergeable, human-not-mergeable runs). Their ratios are Hájek estimates.
LabelSums = tuple[float, float, float, float]


def sensitivity_specificity(sums: LabelSums) -> tuple[float, float] | None:
    tp, pos, tn, neg = sums
    if pos == 0 or neg == 0:
        return None
    return tp / pos, tn / neg


def corrected_rate(
    tasks: Sequence[TaskSums],
    accuracy: JudgeAccuracy,
    labels: Sequence[LabelSums],
    replicates: NDArray[np.int64],
    rng: random.Random,
) -> Estimate | None:
    """The Rogan-Gladen corrected mergeable rate of a cell. Its interval pairs each replicate of the cell's
    tasks (from :func:`resample_tasks`) with an independent resample of the labelled tasks, so it carries
    the uncertainty of sensitivity and specificity too; replicates where the resampled judge is no better
    than chance, or has labels of one side only, are left out."""
    if accuracy.sensitivity is None or accuracy.specificity is None or accuracy.undefined_reason:
        return None
    n = sum(t[0] for t in tasks)
    if n == 0:
        return Estimate(value=None)
    value = rogan_gladen(sum(t[2] for t in tasks) / n, accuracy.sensitivity, accuracy.specificity)
    if value is None or not len(replicates):
        return Estimate(value=value)
    import numpy as np

    # One resample of the labelled tasks per replicate of the cell, drawn in turn (their weighted sums
    # carried along: a ratio of means is the ratio of sums). Then, replicate by replicate, what
    # sensitivity_specificity and rogan_gladen compute.
    tp, pos, tn, neg = resample_means(labels, len(replicates), rng).T
    both_sides = (pos > 0) & (neg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity, specificity = tp / pos, tn / neg
        youden = sensitivity + specificity - 1
        corrected = (replicates[:, 2] / replicates[:, 0] + specificity - 1) / youden
    kept = both_sides & (youden > 0)
    draws = np.minimum(1.0, np.maximum(0.0, corrected[kept]))
    return Estimate(value=value, ci=_interval(np.sort(draws).tolist(), value))


def resample_means(
    values: Sequence[tuple[float, ...]], replicates: int, rng: random.Random
) -> NDArray[np.float64]:
    """``replicates`` resamples of per-task values, as a (replicates, columns) array of their means over
    tasks: each draws len(values) tasks with replacement, as ``rng.choices`` would (floor(random() * n)).
    In blocks, a column at a time, into buffers reused (as :func:`resample_sums`)."""
    import numpy as np

    population = len(values)
    table = np.asarray(values, dtype=float).reshape(population, -1)
    out = np.empty((replicates, table.shape[1]))
    if replicates == 0 or not population:
        return out[:0]
    columns = [np.ascontiguousarray(column) for column in table.T]
    rows = max(1, _BLOCK_DRAWS // population)
    draws = np.empty(rows * population)
    index = np.empty(rows * population, dtype=np.intp)
    picked = np.empty(rows * population)
    generator = _mersenne_twister(rng)
    for start in range(0, replicates, rows):
        block = min(rows, replicates - start)
        size = block * population
        generator.random(out=draws[:size])
        np.multiply(draws[:size], float(population), out=draws[:size])
        index[:size] = draws[:size]
        for j, column in enumerate(columns):
            np.take(column, index[:size], out=picked[:size])
            out[start : start + block, j] = picked[:size].reshape(block, population).sum(axis=1)
    _move_on(rng, generator)
    out /= population
    return out


def judged_correction(merged: float, judged: float, sensitivity: float, specificity: float) -> float | None:
    """The mergeable rate had the judge been right, correcting only what it decided: ``merged`` is the
    share of runs it called mergeable, ``judged`` the share it decided (the rest were stopped by the tests,
    scope or integrity, and stay not mergeable). Rogan-Gladen on the judged runs' pass share, times their
    share: (merged − (1 − Sp) · judged) / (Se + Sp − 1), clipped to [0, judged]; None when Se + Sp <= 1."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return min(judged, max(0.0, (merged - (1 - specificity) * judged) / youden))


def corrected_task_rate(
    tasks: Sequence[tuple[float, float]],
    accuracy: JudgeAccuracy,
    labels: Sequence[LabelSums],
    replicates: int,
    rng: random.Random,
) -> Estimate | None:
    """The judge-error-corrected mergeable rate of a cell from its tasks' (mergeable share, judged share)
    of measured runs, each task once (:func:`judged_correction` of the means over tasks). Its interval is a
    percentile bootstrap that resamples the cell's tasks and, independently, the labelled tasks, so the
    uncertainty of sensitivity and specificity is in it; when more than 2.5% of the replicates find the judge
    no better than chance the correction is not shown (``value`` None, with the reason)."""
    if accuracy.sensitivity is None or accuracy.specificity is None or accuracy.undefined_reason:
        return None
    if not tasks:
        return Estimate(value=None)
    merged = math.fsum(t[0] for t in tasks) / len(tasks)
    judged = math.fsum(t[1] for t in tasks) / len(tasks)
    value = judged_correction(merged, judged, accuracy.sensitivity, accuracy.specificity)
    if value is None or replicates == 0 or len(tasks) < 2:
        why = None if value is None or replicates == 0 else "one task only: nothing to resample"
        return Estimate(value=value, interval_reason=why)
    import numpy as np

    means = resample_means(tasks, replicates, rng)
    # The labelled tasks resampled with their weighted sums: each replicate's Se and Sp are Hájek ratios.
    tp, pos, tn, neg = resample_means(labels, replicates, rng).T
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity, specificity = tp / pos, tn / neg
        youden = sensitivity + specificity - 1
        corrected = (means[:, 0] - (1 - specificity) * means[:, 1]) / youden
    kept = (pos > 0) & (neg > 0) & (youden > 0)
    if kept.sum() < (1 - (1 - CONFIDENCE) / 2) * replicates:
        return Estimate(
            value=None,
            interval_reason="the judge's sensitivity + specificity is not clearly above 1 (more than 2.5% of "
            "the label resamples find it no better than chance): the correction is not defined",
        )
    draws = np.minimum(means[kept, 1], np.maximum(0.0, corrected[kept]))
    return Estimate(value=value, ci=_interval(np.sort(draws).tolist(), value), method="bootstrap")
