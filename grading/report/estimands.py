"""What the report's rates and contrasts estimate (spec §7; docs/report.md), and their intervals.

Each task counts once. A cell's rate is the mean, over its tasks, of each task's own rate (its share of
measured runs); a contrast is the mean, over the tasks both sides share, of the per-task difference b − a.
A task run five times weighs what a task run once weighs, so a side that lost runs on its hard tasks does
not look better for it (a pooled ratio over runs would).

The interval is a t interval on the per-task values, with tasks − 1 degrees of freedom: the runs of a task
are correlated (one difficulty for all), so the task is the unit. ``benchmarks/report_coverage.py`` chose
it against a percentile bootstrap over tasks by simulated coverage (docs/benchmarks.md has the table).

When every task gives the same value (30 passes of 30 runs; a contrast whose sides agree on every task) the
spread is 0 and a t interval has width 0, which would claim a precision the data do not have. The interval
is then the exact binomial bound on the share of tasks that would give another value (0 of T seen, two-sided
95%: at most 1 − 0.025^(1/T)), each such task moving the mean as far as the metric's range allows.

Pure arithmetic, no numpy, no run records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

CONFIDENCE = 0.95
IntervalMethod = Literal["t", "no_spread"]

NO_SPREAD_REASON = (
    "every task gives the same value: no spread to estimate an interval from; the interval bounds the share "
    "of tasks that would give another value (exact binomial, 0 of {tasks})"
)


def _t_two_sided_inside(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with ``df`` (integer >= 1) degrees of freedom (Abramowitz and Stegun
    26.7.3-4: finite sums in cos θ, θ = atan(t / sqrt(df)))."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2:
        total, term = 0.0, 1.0
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):
                term *= (k - 1) / k * c2
                total += term
        return 2 / math.pi * (theta + s * math.cos(theta) * total)
    total, term = 1.0, 1.0
    for k in range(2, df - 1, 2):
        term *= (k - 1) / k * c2
        total += term
    return s * total


def t_two_sided_p(t: float, df: int) -> float:
    """The two-sided p-value of a t statistic with ``df`` degrees of freedom."""
    if df >= 2000:  # the sums grow with df; the normal is within 1e-4 there
        return math.erfc(abs(t) / math.sqrt(2))
    return max(0.0, 1.0 - _t_two_sided_inside(abs(t), df))


@lru_cache(maxsize=512)
def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| < t) = ``confidence`` for ``df`` degrees of freedom (by bisection, to 1e-12)."""
    if df < 1:
        raise ValueError("df must be >= 1")
    lo, hi = 0.0, 1.0

    def inside(x: float) -> float:
        return 1 - t_two_sided_p(x, df) if df >= 2000 else _t_two_sided_inside(x, df)

    while inside(hi) < confidence:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if inside(mid) < confidence:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def no_spread_share(tasks: int, confidence: float = CONFIDENCE) -> float:
    """The exact (Clopper-Pearson) upper bound on a share when 0 of ``tasks`` showed it."""
    return 1.0 - float(((1 - confidence) / 2) ** (1 / tasks))


class TaskMean:
    """The mean of per-task values with its standard error, interval and p-value (against 0)."""

    __slots__ = ("ci", "method", "p_value", "reason", "se", "tasks", "value")

    def __init__(
        self,
        value: float | None,
        se: float | None = None,
        ci: tuple[float, float] | None = None,
        method: IntervalMethod | None = None,
        reason: str | None = None,
        p_value: float | None = None,
        tasks: int = 0,
    ) -> None:
        self.value, self.se, self.ci, self.method = value, se, ci, method
        self.reason, self.p_value, self.tasks = reason, p_value, tasks


# A rate's spread is estimated as if a quarter of a task sat at each end of its range (0 and 1) beside the
# real ones. A rate near 0 or 1 has a small observed spread exactly when it is estimated too close to the
# end, and a plain t interval then covers too little (0.92 at 10 tasks in benchmarks/report_coverage.py);
# with the quarter tasks it covers at least 0.93 from 5 tasks on. The mean itself is the plain one.
RATE_PRIOR_WEIGHT = 0.25


def task_mean(
    values: Sequence[float],
    bounds: tuple[float, float],
    *,
    intervals: bool = True,
    no_interval: str | None = None,
    prior_weight: float = 0.0,
) -> TaskMean:
    """The mean of per-task ``values`` (each task once), its standard error (sd / sqrt(T)), its 95% t
    interval (T − 1 degrees of freedom) clipped to ``bounds`` (the metric's range), and the two-sided p-value
    of the mean against 0. ``prior_weight`` w > 0 estimates the spread as if w tasks sat at each bound too
    (:data:`RATE_PRIOR_WEIGHT`, for rates). Without ``intervals`` only the mean and standard error, with
    ``no_interval`` as the reason."""
    tasks = len(values)
    if not tasks:
        return TaskMean(None, reason="no task has measured runs")
    mean = math.fsum(values) / tasks
    if tasks < 2:
        return TaskMean(mean, reason="one task only: the spread between tasks is unknown", tasks=1)
    lo, hi = bounds
    spread = math.fsum((v - mean) ** 2 for v in values)
    if spread <= 1e-30 * max(1.0, mean * mean) * tasks:
        spread = 0.0
    if prior_weight and spread:
        shrunk = (math.fsum(values) + prior_weight * (lo + hi)) / (tasks + 2 * prior_weight)
        around = math.fsum((v - shrunk) ** 2 for v in values)
        spread = around + prior_weight * ((lo - shrunk) ** 2 + (hi - shrunk) ** 2)
        variance = spread / (tasks + 2 * prior_weight - 1)
    else:
        variance = spread / (tasks - 1)
    se = math.sqrt(variance / tasks)
    if not spread:
        share = no_spread_share(tasks)
        ci = (mean - share * (mean - lo), mean + share * (hi - mean)) if intervals else None
        # No p-value either: a t statistic with no spread is 0/0 or infinite, neither a test.
        reason = NO_SPREAD_REASON.format(tasks=tasks) if ci else no_interval
        return TaskMean(mean, 0.0, ci, "no_spread" if ci else None, reason, None, tasks)
    p_value = t_two_sided_p(mean / se, tasks - 1)
    if not intervals:
        return TaskMean(mean, se, reason=no_interval, p_value=p_value, tasks=tasks)
    half = t_quantile(tasks - 1) * se
    return TaskMean(mean, se, (max(lo, mean - half), min(hi, mean + half)), "t", None, p_value, tasks)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None: not in the family)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
