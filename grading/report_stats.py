"""The report's statistics (spec §7, §9; docs/report.md): task-level percentile bootstrap of the test-pass
and mergeable rates, and the Rogan-Gladen correction of the mergeable rate from human labels.

Pure arithmetic over per-task sums: no run records here (:mod:`grading.report` turns runs into sums). numpy
is imported where a bootstrap runs, so most commands never load it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

CONFIDENCE = 0.95
MIN_LABELLED = 20  # labelled runs needed before the judge-error correction is shown


class Estimate(BaseModel):
    value: float | None
    ci: tuple[float, float] | None = None


class JudgeAccuracy(BaseModel):
    """The primary judge's outcome against human labels on mergeable."""

    labelled: int
    needed: int = MIN_LABELLED
    sensitivity: float | None = None  # P(mergeable | a human says mergeable)
    specificity: float | None = None  # P(not mergeable | a human says not mergeable)
    undefined_reason: str | None = None


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


# Per task, the sums every rate is a ratio of: (measured runs, test-pass runs, mergeable runs).
TaskSums = tuple[int, int, int]


def _rates(sums: TaskSums) -> tuple[float, float, float]:
    n, passed, merged = sums
    return passed / n, merged / n, (passed - merged) / n


def uniforms(rng: random.Random, count: int) -> Any:
    """The next ``count`` values of ``rng.random()`` as a numpy array, drawn in C, and ``rng`` left where
    ``count`` calls would have left it.

    Python's ``random.Random`` and numpy's MT19937 are the same Mersenne Twister, and both make a float in
    [0, 1) from two 32-bit words the same way, so copying the state across gives exactly the values the
    Python calls would return: a report does not depend on which of the two drew it.
    """
    import numpy as np  # here, not at the top: only a report with intervals needs it

    version, internal, gauss = rng.getstate()
    bits = np.random.MT19937()
    key = np.array(internal[:-1], dtype=np.uint32)
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": internal[-1]}}
    values = np.random.Generator(bits).random(count)
    after = bits.state["state"]
    rng.setstate((version, (*after["key"].tolist(), int(after["pos"])), gauss))
    return values


def choice_indices(rng: random.Random, population: int, rows: int) -> Any:
    """``rows`` draws of ``population`` indices with replacement, as a (rows, population) numpy array: the
    indices ``rng.choices(range(population), k=population)`` would pick, ``rows`` times in turn."""
    import numpy as np

    draws = uniforms(rng, rows * population)
    # random.choices picks population[floor(random() * n)] with n a float: the same product, the same floor
    # (in place: the arrays are large).
    np.multiply(draws, float(population), out=draws)
    np.floor(draws, out=draws)
    return draws.astype(np.intp).reshape(rows, population)


def resample_sums(sums: Sequence[tuple[int, ...]], replicates: int, rng: random.Random) -> NDArray[np.int64]:
    """``replicates`` resamples of per-task sums, as a (replicates, columns) array: each draws len(sums)
    tasks with replacement and adds up their sums, column by column. Vectorised; the draws are those of
    ``rng.choices(sums, k=len(sums))`` called once per replicate, so the result is the same as that loop's."""
    import numpy as np

    if replicates == 0 or not sums:
        return np.zeros((0, len(sums[0]) if sums else 0), dtype=np.int64)
    index = choice_indices(rng, len(sums), replicates)
    table = np.asarray(sums, dtype=np.int64)
    # Column by column: indexing one column is several times faster than indexing the rows.
    return np.stack([column[index].sum(axis=1) for column in table.T], axis=1)


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


# Per labelled task: (human-mergeable runs the judge called mergeable, human-mergeable runs,
# human-not-mergeable runs the judge called not mergeable, human-not-mergeable runs).
LabelSums = tuple[int, int, int, int]


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

    # One resample of the labelled tasks per replicate of the cell, drawn in turn. Then, replicate by
    # replicate, what sensitivity_specificity and rogan_gladen compute, in the same float operations
    # and order.
    tp, pos, tn, neg = resample_sums(labels, len(replicates), rng).T
    both_sides = (pos > 0) & (neg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity, specificity = tp / pos, tn / neg
        youden = sensitivity + specificity - 1
        corrected = (replicates[:, 2] / replicates[:, 0] + specificity - 1) / youden
    kept = both_sides & (youden > 0)
    draws = np.minimum(1.0, np.maximum(0.0, corrected[kept]))
    return Estimate(value=value, ci=_interval(np.sort(draws).tolist(), value))
