"""How many runs are enough (spec §7): what would bring an interval to ±5 points.

§7's rule of thumb (3 repetitions per task, arm and model; 5 when arms are compared) says nothing about a
given comparison. These figures start from the data instead.

A contrast (:mod:`grading.report.contrasts`) averages, over T shared tasks, a per-task difference whose
variance has two parts: the spread of the true difference between tasks (σ²_B) and the noise of m runs per
side around their task's rate (σ²_W, one run's variance, over m, twice). So

    Var(contrast) ≈ (σ²_B + 2 σ²_W / m) / T,    half-width ≈ z · sqrt(Var)

σ²_W is pooled from the runs' spread inside each task and side; σ²_B is the observed spread of the
per-task differences less the part σ²_W explains (never below 0). More tasks shrink both parts; more
repetitions only the second, so past a point only tasks help, and the figures say so.

The judge-error-corrected rate θ = (p − (1 − Sp) q) / J, J = Se + Sp − 1 (Rogan-Gladen on the runs the
judge decided, a share q of the measured runs: here the runs that passed the tests), has by the delta
method Var(θ) ≈ [Var(p) + θ² Se(1 − Se) / n₊ + (q − θ)² Sp(1 − Sp) / n₋] / J², n₊ and n₋ the labelled runs
a human called mergeable and not. New labels add to n₊ and n₋ in the labels' current proportion; Var(p)
is the task-clustered variance of the pooled mergeable rate, which labels do not shrink.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from grading.report.estimands import t_quantile
from grading.report.models import ContrastMetric, LabelTarget, PairSums, Precision

TARGET_HALF_WIDTH = 0.05  # ±5 points
Z = NormalDist().inv_cdf(0.975)
_MAX_LABELS = 10_000_000  # a search bound: beyond it the answer is "more runs", not labels
_EPS = 1e-9


def _ceil(x: float) -> int:
    return math.ceil(x - _EPS)


# Each metric is the share of runs with a yes/no outcome: test passed, mergeable, or passed but not
# mergeable (the difference: a mergeable run passed the tests). Its column of a side's (measured, test-pass,
# mergeable) sums; None: test-pass less mergeable.
_COLUMN: dict[ContrastMetric, int | None] = {"test_pass_rate": 1, "mergeable_rate": 2, "difference": None}


def _successes(column: int | None, side: Sequence[int]) -> int:
    return side[column] if column is not None else side[1] - side[2]


def contrast_precision(
    pairs: Sequence[PairSums],
    metric: ContrastMetric,
    ci: tuple[float, float] | None,
    target: float = TARGET_HALF_WIDTH,
) -> Precision:
    """The half-width of a contrast's interval now, and how many more shared tasks (at the current
    repetitions) or how many runs per task and side (at the current tasks) would bring it to ±``target``."""
    return contrast_precisions(pairs, {metric: ci}, target)[metric]


def contrast_precisions(
    pairs: Sequence[PairSums],
    intervals: Mapping[ContrastMetric, tuple[float, float] | None],
    target: float = TARGET_HALF_WIDTH,
) -> dict[ContrastMetric, Precision]:
    """:func:`contrast_precision` of each metric of ``intervals`` (metric -> its interval), in one pass over
    the shared tasks."""
    tasks = len(pairs)
    halves = {metric: (ci[1] - ci[0]) / 2 if ci else None for metric, ci in intervals.items()}
    if tasks == 0:
        return {
            metric: Precision(
                target=target,
                half_width=half,
                predicted_half_width=None,
                between_task_variance=None,
                within_task_variance=None,
                repetitions=0.0,
                more_tasks=None,
                repetitions_needed=None,
                reason="no task has measured runs on both sides",
            )  # fmt: skip
            for metric, half in halves.items()
        }
    columns = {metric: _COLUMN[metric] for metric in intervals}
    diffs: dict[ContrastMetric, list[float]] = {metric: [] for metric in intervals}
    within_ss = dict.fromkeys(intervals, 0.0)
    inverse_n: list[float] = []
    within_df = 0
    for p in pairs:
        na, nb = p[0], p[3]
        inverse_n.append(1 / na + 1 / nb)
        for metric, column in columns.items():
            ka, kb = _successes(column, p[0:3]), _successes(column, p[3:6])
            diffs[metric].append(kb / nb - ka / na)
            for n, k in ((na, ka), (nb, kb)):
                if n >= 2:  # the unbiased variance of n yes/no outcomes with k yes: k(n − k) / (n(n − 1))
                    within_ss[metric] += k * (n - k) / n
        within_df += (na - 1 if na >= 2 else 0) + (nb - 1 if nb >= 2 else 0)
    c = sum(inverse_n) / tasks  # 2 / (harmonic mean of runs per task and side)
    return {
        metric: _with_power(
            _precision(
                diffs[metric], halves[metric], c, within_ss[metric] / within_df if within_df else None, target
            ),
            diffs[metric],
        )
        for metric in intervals
    }


POWER = 0.8
_MAX_TASKS = 1_000_000


def _detectable(spread: float, tasks: int) -> float:
    """The smallest true mean difference a two-sided 5% t test over ``tasks`` per-task differences of
    variance ``spread`` detects with 80% power: (t_0.975 + t_0.80) · sqrt(spread / tasks), df tasks − 1."""
    df = tasks - 1
    return (t_quantile(df) + t_quantile(df, 2 * POWER - 1)) * math.sqrt(spread / tasks)


def _with_power(precision: Precision, diffs: Sequence[float]) -> Precision:
    """``precision`` with its minimum detectable effect and the tasks that would detect ±target, from the
    observed spread of the per-task differences (none when there is no spread to go by)."""
    tasks = len(diffs)
    if tasks < 2:
        return precision
    mean = sum(diffs) / tasks
    spread = sum((d - mean) ** 2 for d in diffs) / (tasks - 1)
    if spread <= 0:
        return precision
    needed = max(2, _ceil(((Z + NormalDist().inv_cdf(POWER)) ** 2) * spread / precision.target**2))
    while needed < _MAX_TASKS and _detectable(spread, needed) > precision.target:
        needed += 1  # the t quantiles ask a few more tasks than the normal's count
    return precision.model_copy(
        update={"minimum_detectable_effect": _detectable(spread, tasks), "tasks_to_detect": needed}
    )


def _tasks_for(per_task: float, target: float) -> int:
    """The fewest tasks whose t interval (tasks − 1 degrees of freedom) of a mean of per-task values of
    variance ``per_task`` is at most ±``target``: the normal's count, then up while t asks for more."""
    needed = max(2, _ceil(Z * Z * per_task / target**2))
    while needed < _MAX_TASKS and t_quantile(needed - 1) * math.sqrt(per_task / needed) > target + _EPS:
        needed += 1
    return needed


def _precision(
    diffs: list[float], half: float | None, c: float, within: float | None, target: float
) -> Precision:
    tasks = len(diffs)
    repetitions = 2 / c
    if tasks < 2:
        return Precision(
            target=target, half_width=half, predicted_half_width=None, between_task_variance=None,
            within_task_variance=within, repetitions=repetitions, more_tasks=None, repetitions_needed=None,
            reason="one shared task: the spread between tasks is unknown",
        )  # fmt: skip
    mean = sum(diffs) / tasks
    spread = sum((d - mean) ** 2 for d in diffs) / (tasks - 1)  # one task's difference, as observed
    # The report's interval is a t interval with tasks − 1 degrees of freedom: predict with its quantile.
    t_now = t_quantile(tasks - 1)
    if within is None:
        # One run per task and side throughout: the two parts cannot be told apart, only tasks can be
        # planned for (at one run each).
        return Precision(
            target=target, half_width=half, predicted_half_width=t_now * math.sqrt(spread / tasks),
            between_task_variance=None, within_task_variance=None, repetitions=repetitions,
            more_tasks=max(0, _tasks_for(spread, target) - tasks), repetitions_needed=None,
            reason="one run per task and side: the spread within a task is unknown",
        )  # fmt: skip
    between = max(0.0, spread - within * c)
    per_task = between + within * c
    reason = None
    # No repetition count: simulated (issue 31 §4), a count planned from the observed spread between tasks
    # came mostly in the draws that underestimated that spread and missed ±5 points by up to 60% (26% to
    # 58% of data sets got none at all); planned on an upper bound of the spread it still missed by up to
    # 25%. The tasks' count (more_tasks) reached ±4.7 to ±5.4 points in the same simulations.
    repetitions_needed: int | None = None
    if target**2 * tasks / (t_now * t_now) - between <= 0:
        reason = (
            f"with {tasks} tasks the spread between tasks alone keeps the interval wider than "
            f"±{100 * target:g} points: more repetitions cannot, only more tasks"
        )
    else:
        reason = (
            "more repetitions narrow only the runs' own noise; the count of tasks is the figure to plan on"
        )
    return Precision(
        target=target,
        half_width=half,
        predicted_half_width=t_now * math.sqrt(per_task / tasks),
        between_task_variance=between,
        within_task_variance=within,
        repetitions=repetitions,
        more_tasks=max(0, _tasks_for(per_task, target) - tasks),
        repetitions_needed=repetitions_needed,
        reason=reason,
    )


def _rate_variance(tasks: Sequence[tuple[int, int, int]]) -> tuple[float, float] | None:
    """The pooled mergeable rate and its task-clustered variance (binomial with one task)."""
    measured = [t for t in tasks if t[0]]
    total = sum(t[0] for t in measured)
    if not total:
        return None
    rate = sum(t[2] for t in measured) / total
    if len(measured) < 2:
        return rate, rate * (1 - rate) / total
    k = len(measured)
    residuals = sum((t[2] - rate * t[0]) ** 2 for t in measured)
    return rate, k / (k - 1) * residuals / total**2


def label_target(
    tasks: Sequence[tuple[int, int, int]],
    labels: Sequence[tuple[float, float, float, float]],
    *,
    minimum: int,
    target: float = TARGET_HALF_WIDTH,
    labelled: int | None = None,
) -> LabelTarget:
    """``tasks``: per task (measured, test-pass, mergeable) runs; ``labels``: per task the judge's hits
    against human labels (tp, human mergeable, tn, human not mergeable), as counts or as weighted sums
    scaled to the labels' effective number. ``minimum`` is the number of labelled runs the correction needs
    before it is shown; the answer is never below what reaches it. ``labelled``: the labelled runs (default
    the labels' total)."""
    if labelled is None:
        labelled = round(sum(lab[1] + lab[3] for lab in labels))
    tp, pos, tn, neg = (sum(lab[i] for lab in labels) for i in range(4))
    base = {"target": target, "labelled": labelled}
    rate_var = _rate_variance(tasks)
    if rate_var is None:
        return LabelTarget(**base, corrected_rate=None, half_width=None, more_labels=None,
                           reason="no measured runs")  # fmt: skip
    if pos == 0 or neg == 0:
        return LabelTarget(
            **base, corrected_rate=None, half_width=None, more_labels=None,
            reason="labels on both sides (a human said mergeable, and not) are needed first",
        )  # fmt: skip
    sensitivity, specificity = tp / pos, tn / neg
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return LabelTarget(
            **base, corrected_rate=None, half_width=None, more_labels=None,
            reason="sensitivity + specificity <= 1: the judge is no better than chance",
        )  # fmt: skip
    rate, var_p = rate_var
    # The runs the judge decided, as a share of the measured ones: those that passed the tests (scope and
    # integrity failures among them are not in these sums, and few).
    judged = sum(t[1] for t in tasks) / sum(t[0] for t in tasks)
    theta = min(judged, max(0.0, (rate - (1 - specificity) * judged) / youden))
    # For the variance, Se and Sp shrunk towards 1/2 by one label each side: a judge right on all of a
    # few labels is not known to be perfect.
    se_v = (tp + 1) / (pos + 2)
    sp_v = (tn + 1) / (neg + 2)
    share = pos / (pos + neg)

    def half_width(more: int) -> float:
        var = (
            var_p
            + theta**2 * se_v * (1 - se_v) / (pos + more * share)
            + (judged - theta) ** 2 * sp_v * (1 - sp_v) / (neg + more * (1 - share))
        ) / youden**2
        return Z * math.sqrt(var)

    now = half_width(0)
    floor = Z * math.sqrt(var_p) / youden
    if floor >= target:
        return LabelTarget(
            **base, corrected_rate=theta, half_width=now, more_labels=None,
            reason=f"the runs' own spread alone gives ±{100 * floor:.1f} points after the correction: "
            "more runs are needed, not more labels",
        )  # fmt: skip
    lo, hi = 0, 1
    while half_width(hi) > target and hi < _MAX_LABELS:
        lo, hi = hi, hi * 2
    while lo < hi:  # the least count that reaches the target (half_width falls as labels are added)
        mid = (lo + hi) // 2
        if half_width(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    more = max(hi, minimum - labelled, 0)
    return LabelTarget(**base, corrected_rate=theta, half_width=now, more_labels=more)
