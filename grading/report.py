"""Reports (spec §7, §8, §9): mergeable against test-pass per arm and model, with task-level intervals.

One computation for both faces: ``rubric report`` builds :class:`GradedRun` records from run directories
(:mod:`grading.report_files`), the web app builds them from its rows; both call :func:`build_report`.
The statistics are described in docs/report.md. In short:

- Rates are over *measured* runs: a run with no rubric (not measured), a grader failure or a judge failure
  is counted apart and left out of both the test-pass and the mergeable rate, so that their difference
  compares the same runs.
- Intervals: 95% percentile bootstrap that resamples tasks (the runs of a drawn task stay together),
  seeded per cell so that a report is reproducible and a cell's interval does not depend on the others.
- Cohen's κ between the primary and the second judge; null with a reason where it cannot say anything.
- Rogan-Gladen correction of the mergeable rate from human labels (at least :data:`MIN_LABELLED`).
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grading.agreement import Agreement as Agreement  # re-exported: the report's public name
from grading.agreement import cohen_kappa as cohen_kappa  # re-exported
from grading.contrasts import Contrast, build_contrasts
from grading.judge.cache import RepeatAgreement
from grading.judge.specs import model_family
from grading.outcome import OutcomeStatus
from grading.power import TARGET_HALF_WIDTH, LabelTarget, label_target
from grading.schema import PromptStyle

if TYPE_CHECKING:  # numpy is imported where the bootstrap runs: most commands never need it
    import numpy as np
    from numpy.typing import NDArray

FORMAT = 2  # the report's JSON (metrics.json has its own: grading.outcome.METRICS_FORMAT)
CONFIDENCE = 0.95
DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 0
MIN_LABELLED = 20  # labelled runs needed before the judge-error correction is shown
MIN_REPETITIONS = 3  # runs per (task, arm, model) (§7)
MIN_REPETITIONS_COMPARED = 5  # ... when two arms are compared

Verdict = Literal["pass", "fail"]
Split = Literal["before_cutoff", "after_cutoff", "unknown"]
SPLITS: tuple[Split, ...] = ("before_cutoff", "after_cutoff", "unknown")


# --- input: one graded run --------------------------------------------------------------------------------


class JudgeVerdicts(BaseModel):
    """One judge's verdicts on one run, as the report needs them."""

    model_config = ConfigDict(frozen=True)

    judge: str  # the spec: "anthropic:claude-...", "openai:...", "scripted:<file>"
    family: str | None = None  # provider family as recorded (metrics.json judge_families); else derived
    scripted: bool = False
    failure: str | None = None  # a judge failure: no verdict counts
    blockers: dict[str, Verdict] = {}
    non_blockers: dict[str, Verdict] = {}
    # Same judge, same input, judged again (regrade sample or --no-cache): the verdicts held before.
    previous: dict[str, Verdict] | None = None
    tree_judged: list[str] = []  # needs_tree blockers this judge decided with the base tree
    cost_usd: float = 0.0  # the diff-only judge's calls for this run (0 on a cache hit)
    tree_cost_usd: float = 0.0  # the tree judge's, apart: its cost is not the diff-only one (§9)
    cost_known: bool = True  # False when a call's model had no price

    @property
    def complete(self) -> bool:
        return self.failure is None

    def mergeable(self) -> bool:
        """No blocker fails, by this judge (scope and integrity are not the judge's to decide)."""
        return all(v == "pass" for v in self.blockers.values())

    def vendor(self) -> str | None:
        """The model vendor behind this judge, for the self-preference check (§9); None when unknown."""
        if self.scripted:
            return None
        if self.family:
            return model_family(self.family) or self.family.lower()
        provider, _, model = self.judge.partition(":")
        return model_family(model) or (provider if provider in ("anthropic", "claude-code") else None)


class GradedRun(BaseModel):
    """One graded run: what ``rubric grade`` decided (metrics.json) plus where it belongs in a report.

    ``test_pass`` is ``pass`` and every other gate entry except ``mergeable`` (None when unknown, a grader
    failure). ``checks_passed`` is the scope and test-integrity checks together (None when not run).
    ``provisional`` is None when the record does not say whether the rubric was admitted (treated as
    provisional). ``human_mergeable`` is a human's verdict on the run, where one exists.
    """

    model_config = ConfigDict(frozen=True)

    run: str
    task: str
    arm: str = ""
    model: str = ""
    prompt_style: PromptStyle | None = None
    base_date: date | None = None
    status: OutcomeStatus
    test_pass: bool | None
    mergeable: bool | None
    merge_score: float | None = Field(default=None, ge=0, le=1)
    checks_passed: bool | None = None
    metrics: dict[str, float] = {}  # numeric grade.json metrics, averaged per cell
    flags: dict[str, bool] = {}  # true/false grade.json metrics (not ``pass``), a rate per cell
    # The test-integrity parts that could not be measured (metrics.json details.integrity_not_measured):
    # the run counts apart per cell, since its integrity check covered only the other parts.
    integrity_not_measured: list[str] = []
    primary: JudgeVerdicts | None = None
    second: JudgeVerdicts | None = None
    provisional: bool | None = None
    human_mergeable: bool | None = None

    @model_validator(mode="after")
    def _status_agrees(self) -> GradedRun:
        expected = {"mergeable": True, "not_mergeable": False}.get(self.status)
        if self.mergeable is not expected:
            raise ValueError(f"mergeable {self.mergeable} contradicts status {self.status!r}")
        if self.status in ("mergeable", "not_mergeable") and self.test_pass is None:
            raise ValueError(f"a {self.status} run has test_pass true or false")
        if self.status == "mergeable" and not self.test_pass:
            raise ValueError("a mergeable run passed the tests")
        return self

    @property
    def measured(self) -> bool:
        """Counted in the rates: mergeable decided (not null) and whether it passed the tests known."""
        return self.mergeable is not None and self.test_pass is not None


def grade_metrics(values: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, bool]]:
    """grade.json's metrics as a report shows them: finite numbers (a mean per cell) and true/false values
    (a rate per cell: a mean of booleans would read as a number). ``pass`` is left out: it is the test-pass
    rate's. Other values (text, lists, objects) are not metrics."""
    numeric: dict[str, float] = {}
    flags: dict[str, bool] = {}
    for name, value in values.items():
        if name == "pass":
            continue
        if isinstance(value, bool):
            flags[name] = value
        elif isinstance(value, int | float) and math.isfinite(value):
            numeric[name] = float(value)
    return numeric, flags


# --- output ----------------------------------------------------------------------------------------------


class Estimate(BaseModel):
    value: float | None
    ci: tuple[float, float] | None = None


class MetricMean(BaseModel):
    mean: float
    runs: int  # runs that reported the metric


class MetricRate(BaseModel):
    """A true/false grade.json metric in a cell: the share of the runs reporting it that said true."""

    rate: float
    true: int
    runs: int  # runs that reported the metric as true or false


class Cell(BaseModel):
    arm: str
    model: str
    prompt_style: PromptStyle | None
    runs: int
    tasks: int
    measured: int  # the runs the rates are over
    test_pass_rate: Estimate
    mergeable_rate: Estimate
    difference: Estimate  # test-pass rate minus mergeable rate
    mean_merge_score: float | None  # among mergeable runs
    grader_failures: int
    judge_failures: int
    not_measured: int
    provisional: bool
    corrected_mergeable_rate: Estimate | None = None  # Rogan-Gladen; None without enough human labels
    metrics: dict[str, MetricMean] = {}
    metric_rates: dict[str, MetricRate] = {}
    # Measured runs graded with some test-integrity part not measured, and how many per part.
    integrity_not_measured_runs: int = 0
    integrity_not_measured: dict[str, int] = {}


class ContaminationCell(Cell):
    split: Split


class TaskRow(BaseModel):
    task: str
    runs: int
    judged: int  # runs whose blockers the primary judge decided (the histogram's denominator)
    failed_blockers: dict[str, int]


class AgreementReport(BaseModel):
    mergeable: Agreement
    items: dict[str, Agreement]  # "<task>/<blocker id>": blocker ids are per task


class Disagreement(BaseModel):
    run: str
    task: str
    item: str
    primary: Verdict
    second: Verdict


class JudgeAccuracy(BaseModel):
    """The primary judge's outcome against human labels on mergeable."""

    labelled: int
    needed: int = MIN_LABELLED
    sensitivity: float | None = None  # P(mergeable | a human says mergeable)
    specificity: float | None = None  # P(not mergeable | a human says not mergeable)
    undefined_reason: str | None = None


class JudgeUse(BaseModel):
    role: Literal["primary", "second"]
    judge: str
    scripted: bool
    vendor: str | None
    runs: int
    cost_usd: float = 0.0  # the diff-only judge, over these runs
    tree_cost_usd: float = 0.0  # the tree judge (needs_tree blockers), reported apart
    tree_judged: int = 0  # verdicts the tree judge gave (counted like any other)
    tree_judged_runs: int = 0
    cost_known: bool = True


class Report(BaseModel):
    format: int = FORMAT
    contrasts: list[Contrast] = []  # grading.contrasts: arm against arm, model against model
    cells: list[Cell]
    by_prompt_style: list[Cell]
    by_contamination: list[ContaminationCell]
    tasks: list[TaskRow]
    agreement: AgreementReport
    repeat_agreement: RepeatAgreement | None
    disagreements: list[Disagreement]
    judge_accuracy: JudgeAccuracy
    # grading.power: human-labelled runs that would bring the corrected rate (all runs) to ±5 points
    label_target: LabelTarget | None = None
    judges: list[JudgeUse]
    bootstrap: int
    seed: int
    warnings: list[str]

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --- statistics ------------------------------------------------------------------------------------------


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


def _rate_estimates(
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
    return _rate_estimates(tasks, resample_tasks(tasks, replicates, rng))


# Per labelled task: (human-mergeable runs the judge called mergeable, human-mergeable runs,
# human-not-mergeable runs the judge called not mergeable, human-not-mergeable runs).
LabelSums = tuple[int, int, int, int]


def _accuracy(sums: LabelSums) -> tuple[float, float] | None:
    tp, pos, tn, neg = sums
    if pos == 0 or neg == 0:
        return None
    return tp / pos, tn / neg


def judge_accuracy(labelled: Sequence[GradedRun]) -> tuple[JudgeAccuracy, list[LabelSums]]:
    """Sensitivity and specificity of the runs' mergeable outcome against human labels, and the per-task
    sums the corrected rate's bootstrap resamples."""
    by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in labelled:
        sums = by_task[r.task]
        if r.human_mergeable:
            sums[0] += bool(r.mergeable)
            sums[1] += 1
        else:
            sums[2] += not r.mergeable
            sums[3] += 1
    per_task: list[LabelSums] = [tuple(s) for _, s in sorted(by_task.items())]  # type: ignore[misc]
    n = len(labelled)
    if n < MIN_LABELLED:
        needed = f"{n} labelled runs; at least {MIN_LABELLED} are needed ({MIN_LABELLED - n} more)"
        return JudgeAccuracy(labelled=n, undefined_reason=needed), per_task
    total: LabelSums = tuple(sum(s[i] for s in per_task) for i in range(4))  # type: ignore[assignment]
    accuracy = _accuracy(total)
    if accuracy is None:
        side = "mergeable" if total[1] == 0 else "not mergeable"
        one_sided = f"no labelled run is {side} by the human verdict: sensitivity and specificity need both"
        return JudgeAccuracy(labelled=n, undefined_reason=one_sided), per_task
    sensitivity, specificity = accuracy
    reason: str | None = None
    if sensitivity + specificity <= 1:
        reason = "sensitivity + specificity <= 1: the judge is no better than chance, nothing to correct"
    return (
        JudgeAccuracy(labelled=n, sensitivity=sensitivity, specificity=specificity, undefined_reason=reason),
        per_task,
    )


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
    # replicate, what _accuracy and rogan_gladen compute, in the same float operations and order.
    tp, pos, tn, neg = resample_sums(labels, len(replicates), rng).T
    both_sides = (pos > 0) & (neg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity, specificity = tp / pos, tn / neg
        youden = sensitivity + specificity - 1
        corrected = (replicates[:, 2] / replicates[:, 0] + specificity - 1) / youden
    kept = both_sides & (youden > 0)
    draws = np.minimum(1.0, np.maximum(0.0, corrected[kept]))
    return Estimate(value=value, ci=_interval(np.sort(draws).tolist(), value))


# --- the report ------------------------------------------------------------------------------------------


def contamination_split(run: GradedRun, cutoffs: dict[str, date]) -> Split:
    """before_cutoff when the task's base date is on or before the model's training cutoff (its fix may
    have been seen: the merge comes after the base), after_cutoff when later, unknown otherwise."""
    cutoff = cutoffs.get(run.model)
    if cutoff is None or run.base_date is None:
        return "unknown"
    return "after_cutoff" if run.base_date > cutoff else "before_cutoff"


def _task_sums(runs: Iterable[GradedRun]) -> list[TaskSums]:
    by_task: dict[str, list[int]] = {}
    for r in runs:
        if r.measured:
            sums = by_task.setdefault(r.task, [0, 0, 0])
            sums[0] += 1
            sums[1] += bool(r.test_pass)
            sums[2] += bool(r.mergeable)
    return [(s[0], s[1], s[2]) for _, s in sorted(by_task.items())]


class _Context:
    def __init__(self, replicates: int, seed: int, accuracy: JudgeAccuracy, labels: list[LabelSums]) -> None:
        self.replicates = replicates
        self.seed = seed
        self.accuracy = accuracy
        self.labels = labels

    def rng(self, *key: str | None) -> random.Random:
        # Seeded per cell, from its key: a cell's interval does not depend on which other cells exist.
        return random.Random("\x1f".join([str(self.seed), *(k or "" for k in key)]))


def _cell_fields(runs: list[GradedRun], ctx: _Context, key: tuple[str | None, ...]) -> dict[str, Any]:
    # One pass over the runs for every count below (a cell can hold thousands), in the runs' order, so the
    # sums of floats add up in the same order as one pass per figure did.
    by_task: dict[str, list[int]] = {}
    tasks: set[str] = set()
    statuses: dict[str, int] = defaultdict(int)
    provisional = False
    scores: list[float] = []
    metric_values: dict[str, list[float]] = defaultdict(list)
    flag_values: dict[str, list[bool]] = defaultdict(list)
    unmeasured_parts: dict[str, int] = defaultdict(int)
    unmeasured_runs = 0
    for r in runs:
        tasks.add(r.task)
        statuses[r.status] += 1
        provisional = provisional or r.provisional is not False
        if r.mergeable and r.merge_score is not None:
            scores.append(r.merge_score)
        if r.status != "grader_failure":
            for name, value in r.metrics.items():
                metric_values[name].append(value)
            for name, flag in r.flags.items():
                flag_values[name].append(flag)
        if r.mergeable is not None and r.test_pass is not None:  # r.measured
            sums = by_task.setdefault(r.task, [0, 0, 0])
            sums[0] += 1
            sums[1] += r.test_pass
            sums[2] += r.mergeable
            if r.integrity_not_measured:
                unmeasured_runs += 1
                for part in set(r.integrity_not_measured):
                    unmeasured_parts[part] += 1
    task_sums: list[TaskSums] = [(t[0], t[1], t[2]) for _, t in sorted(by_task.items())]
    rng = ctx.rng(*key)
    replicates = resample_tasks(task_sums, ctx.replicates, rng)
    test_pass, mergeable, difference = _rate_estimates(task_sums, replicates)
    corrected = corrected_rate(task_sums, ctx.accuracy, ctx.labels, replicates, rng)
    return {
        "runs": len(runs),
        "tasks": len(tasks),
        "measured": sum(t[0] for t in task_sums),
        "test_pass_rate": test_pass,
        "mergeable_rate": mergeable,
        "difference": difference,
        "mean_merge_score": sum(scores) / len(scores) if scores else None,
        "grader_failures": statuses["grader_failure"],
        "judge_failures": statuses["judge_failure"],
        "not_measured": statuses["not_measured"],
        "provisional": provisional,
        "corrected_mergeable_rate": corrected,
        "metrics": {
            name: MetricMean(mean=sum(v) / len(v), runs=len(v)) for name, v in sorted(metric_values.items())
        },
        "metric_rates": {
            name: MetricRate(rate=sum(v) / len(v), true=sum(v), runs=len(v))
            for name, v in sorted(flag_values.items())
        },
        "integrity_not_measured_runs": unmeasured_runs,
        "integrity_not_measured": dict(sorted(unmeasured_parts.items())),
    }


def _group[K: tuple[Any, ...]](
    runs: Iterable[GradedRun], key: Callable[[GradedRun], K]
) -> dict[K, list[GradedRun]]:
    groups: dict[K, list[GradedRun]] = defaultdict(list)
    for r in runs:
        groups[key(r)].append(r)
    return groups


def _sort_key(value: str | None) -> tuple[int, str]:
    return (value is None, value or "")


def _task_rows(runs: Sequence[GradedRun]) -> list[TaskRow]:
    rows = []
    for task, task_runs in sorted(_group(runs, lambda r: (r.task,)).items()):
        failed: dict[str, int] = defaultdict(int)
        judged = 0
        for r in task_runs:
            # Only runs the primary judge decided: the blockers agents fail when the tests pass.
            if r.primary is not None and r.primary.complete and r.test_pass:
                judged += 1
                for item, verdict in r.primary.blockers.items():
                    if verdict == "fail":
                        failed[item] += 1
        rows.append(
            TaskRow(
                task=task[0], runs=len(task_runs), judged=judged, failed_blockers=dict(sorted(failed.items()))
            )
        )
    return rows


def _both_judged(runs: Sequence[GradedRun]) -> list[tuple[GradedRun, JudgeVerdicts, JudgeVerdicts]]:
    out = []
    for r in runs:
        if r.primary and r.second and r.primary.complete and r.second.complete and r.test_pass:
            out.append((r, r.primary, r.second))
    return out


def _agreement(runs: Sequence[GradedRun]) -> tuple[AgreementReport, list[Disagreement]]:
    both = _both_judged(runs)
    # Mergeable pairs only where the judges decide it: a run that failed scope or integrity is not
    # mergeable by either, and counting it would inflate κ with agreement that is not the judges'.
    mergeable = cohen_kappa(
        [(p.mergeable(), s.mergeable()) for r, p, s in both if r.checks_passed], "primary", "second"
    )
    item_pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    disagreements: list[Disagreement] = []
    for r, p, s in both:
        for item, verdict in p.blockers.items():
            other = s.blockers.get(item)
            if other is not None:
                item_pairs[f"{r.task}/{item}"].append((verdict == "pass", other == "pass"))
        for mine, theirs in ((p.blockers, s.blockers), (p.non_blockers, s.non_blockers)):
            if mine == theirs:  # most pairs agree throughout: nothing to look for item by item
                continue
            for item in sorted(mine):
                if item in theirs and mine[item] != theirs[item]:
                    disagreements.append(
                        Disagreement(
                            run=r.run, task=r.task, item=item, primary=mine[item], second=theirs[item]
                        )
                    )
    items = {k: cohen_kappa(v, "primary", "second") for k, v in sorted(item_pairs.items())}
    disagreements.sort(key=lambda d: (d.task, d.run, d.item))
    return AgreementReport(mergeable=mergeable, items=items), disagreements


def _repeat_agreement(runs: Sequence[GradedRun]) -> RepeatAgreement | None:
    out = RepeatAgreement()
    for r in runs:
        p = r.primary
        if p is None or not p.complete or p.previous is None:
            continue
        now = {**p.blockers, **p.non_blockers}
        compared = [(p.previous[i], now[i]) for i in now if i in p.previous]
        out.pairs += 1
        out.items += len(compared)
        out.agreeing += sum(a == b for a, b in compared)
    return out if out.pairs else None


def _repetition_warnings(runs: Sequence[GradedRun]) -> list[str]:
    arms_per_model: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        arms_per_model[r.model].add(r.arm)
    warnings = []
    for (task, arm, model), group in sorted(_group(runs, lambda r: (r.task, r.arm, r.model)).items()):
        if all(r.status == "not_measured" for r in group):
            continue  # no rubric: not a repetition problem
        needed = MIN_REPETITIONS_COMPARED if len(arms_per_model[model]) > 1 else MIN_REPETITIONS
        measured = sum(r.measured for r in group)
        if measured < needed:
            why = "two arms are compared" if needed == MIN_REPETITIONS_COMPARED else "mergeable rates spread"
            warnings.append(
                f"task {task!r}, arm {arm!r}, model {model!r}: {measured} measured runs; "
                f"use at least {needed} ({why})"
            )
    return warnings


def _judge_uses(runs: Sequence[GradedRun]) -> list[JudgeUse]:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    seen: dict[tuple[str, str], JudgeVerdicts] = {}
    spend: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0, 0, 1])
    for r in runs:
        for role, j in (("primary", r.primary), ("second", r.second)):
            if j is not None:
                counts[(role, j.judge)] += 1
                seen.setdefault((role, j.judge), j)
                s = spend[(role, j.judge)]
                s[0] += j.cost_usd
                s[1] += j.tree_cost_usd
                s[2] += len(j.tree_judged)
                s[3] += bool(j.tree_judged)
                s[4] = s[4] and j.cost_known
    return [
        JudgeUse(role=role, judge=spec, scripted=seen[(role, spec)].scripted,
                 vendor=seen[(role, spec)].vendor(), runs=n,
                 cost_usd=spend[(role, spec)][0], tree_cost_usd=spend[(role, spec)][1],
                 tree_judged=int(spend[(role, spec)][2]), tree_judged_runs=int(spend[(role, spec)][3]),
                 cost_known=bool(spend[(role, spec)][4]))
        for (role, spec), n in sorted(counts.items())
    ]  # fmt: skip


# The warnings that come once per task, arm and model, per judge and model, or per cell, each kind by the
# shape of its sentence (written just above and below): a page may fold each kind into one line with a
# count. The report's own list (the JSON, the CLI's Markdown) keeps every warning as it is.
REPEATED_WARNINGS: dict[str, tuple[re.Pattern[str], str]] = {
    "repetitions": (
        re.compile(r"task .+, arm .+, model .+: \d+ measured runs; use at least \d+ \(.+\)", re.DOTALL),
        "task, arm and model groups with fewer measured runs than they need",
    ),
    "self_preference": (
        re.compile(
            r"self-preference: the \w+ judge .+ judges runs of .+, a model of its own vendor", re.DOTALL
        ),
        "judge and model pairs where the judge is of the model's own vendor (self-preference)",
    ),
    "one_task": (
        re.compile(r"arm .+, model .+: one task only, so no interval \(tasks are resampled\)", re.DOTALL),
        "arm and model cells with one task only, so no interval (tasks are resampled)",
    ),
}


def warning_kind(warning: str) -> str | None:
    """The key of :data:`REPEATED_WARNINGS` whose sentence ``warning`` is, or None for a warning said once."""
    return next((kind for kind, (shape, _) in REPEATED_WARNINGS.items() if shape.fullmatch(warning)), None)


def _warnings(
    runs: Sequence[GradedRun], judges: list[JudgeUse], accuracy: JudgeAccuracy, cells: list[Cell]
) -> list[str]:
    out: list[str] = []
    not_measured = sum(r.status == "not_measured" for r in runs)
    grader = sum(r.status == "grader_failure" for r in runs)
    judge = sum(r.status == "judge_failure" for r in runs)
    if not_measured:
        out.append(
            f"{not_measured} runs not measured (no rubric.json): left out of every rate, "
            "never counted as not mergeable"
        )
    if grader or judge:
        out.append(
            f"{grader} grader failures and {judge} judge failures: left out of every rate "
            "(judge failures are runs that passed the tests, so the rates are over the rest)"
        )
    for role in ("primary", "second"):
        specs = [j.judge for j in judges if j.role == role]
        if len(specs) > 1:
            out.append(
                f"more than one {role} judge in this report ({', '.join(specs)}): "
                "cells mix how runs were scored"
            )
    if any(j.scripted for j in judges):
        out.append(
            "verdicts from the scripted judge (a deterministic stand-in for tests and demos) "
            "are in this report"
        )
    models = sorted({r.model for r in runs})
    for j in judges:
        if j.vendor is None:
            continue
        for model in models:
            if model_family(model) == j.vendor:
                out.append(
                    f"self-preference: the {j.role} judge {j.judge} ({j.vendor}) judges runs of "
                    f"{model} ({j.vendor}), a model of its own vendor"
                )
    out += _integrity_warnings(runs)
    out += _metric_kind_warnings(runs)
    unknown = sum(r.provisional is None for r in runs)
    if any(c.provisional for c in cells):
        out.append("cells marked provisional include runs graded with a rubric that is not admitted")
    if unknown:
        out.append(f"{unknown} runs do not record whether their rubric was admitted: treated as provisional")
    few = [c for c in cells if c.measured and c.tasks < 2]
    for c in few:
        out.append(f"arm {c.arm!r}, model {c.model!r}: one task only, so no interval (tasks are resampled)")
    if accuracy.undefined_reason:
        out.append(f"no judge-error-corrected rate: {accuracy.undefined_reason}")
    out += _repetition_warnings(runs)
    return out


def _integrity_warnings(runs: Sequence[GradedRun]) -> list[str]:
    partial = [r for r in runs if r.measured and r.integrity_not_measured]
    if not partial:
        return []
    parts: dict[str, int] = defaultdict(int)
    for r in partial:
        for part in set(r.integrity_not_measured):
            parts[part] += 1
    which = ", ".join(f"{part} in {n}" for part, n in sorted(parts.items()))
    return [
        f"{len(partial)} measured runs were graded with test-integrity parts not measured ({which}): "
        "their integrity check covered only the other parts (counted per cell)"
    ]


def _metric_kind_warnings(runs: Sequence[GradedRun]) -> list[str]:
    numeric: dict[str, int] = defaultdict(int)
    flags: dict[str, int] = defaultdict(int)
    for r in runs:
        if r.status != "grader_failure":
            for name in r.metrics:
                numeric[name] += 1
            for name in r.flags:
                flags[name] += 1
    return [
        f"grade.json metric {name!r} is true/false in {flags[name]} runs and a number in {numeric[name]}: "
        "shown apart, as a rate and as a mean"
        for name in sorted(set(numeric) & set(flags))
    ]


def build_report(
    runs: Sequence[GradedRun],
    *,
    cutoffs: dict[str, date] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Report:
    """The §7 report over graded runs.

    ``cutoffs`` maps a model id to its training cutoff; without it ``by_contamination`` is empty.
    ``bootstrap`` is the number of bootstrap replicates (0: no intervals), ``seed`` seeds them.
    Human labels travel on the runs (:attr:`GradedRun.human_mergeable`).
    """
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    labelled = [r for r in runs if r.human_mergeable is not None and r.mergeable is not None]
    accuracy, label_sums = judge_accuracy(labelled)
    ctx = _Context(bootstrap, seed, accuracy, label_sums)

    cells = [
        Cell(arm=arm, model=model, prompt_style=None, **_cell_fields(group, ctx, ("cells", arm, model)))
        for (arm, model), group in sorted(_group(runs, lambda r: (r.arm, r.model)).items())
    ]
    styled = _group(runs, lambda r: (r.arm, r.model, r.prompt_style))
    by_prompt_style = [
        Cell(arm=arm, model=model, prompt_style=style,
             **_cell_fields(styled[(arm, model, style)], ctx, ("prompt_style", arm, model, style)))
        for arm, model, style in sorted(styled, key=lambda k: (k[0], k[1], _sort_key(k[2])))
    ]  # fmt: skip
    by_contamination: list[ContaminationCell] = []
    if cutoffs is not None:
        split = _group(runs, lambda r: (r.arm, r.model, contamination_split(r, cutoffs)))
        by_contamination = [
            ContaminationCell(arm=arm, model=model, prompt_style=None, split=s,
                              **_cell_fields(split[(arm, model, s)], ctx, ("contamination", arm, model, s)))
            for arm, model, s in sorted(split, key=lambda k: (k[0], k[1], SPLITS.index(k[2])))
        ]  # fmt: skip
    agreement, disagreements = _agreement(runs)
    judges = _judge_uses(runs)
    return Report(
        contrasts=build_contrasts(runs, replicates=bootstrap, seed=seed, target=TARGET_HALF_WIDTH),
        cells=cells,
        by_prompt_style=by_prompt_style,
        by_contamination=by_contamination,
        tasks=_task_rows(runs),
        agreement=agreement,
        repeat_agreement=_repeat_agreement(runs),
        disagreements=disagreements,
        judge_accuracy=accuracy,
        label_target=label_target(_task_sums(runs), label_sums, minimum=MIN_LABELLED),
        judges=judges,
        bootstrap=bootstrap,
        seed=seed,
        warnings=_warnings(runs, judges, accuracy, cells),
    )
