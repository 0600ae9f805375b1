"""The report's records (grading/report/build.py): the graded runs it reads and the report it writes."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grading.checks.outcome import OutcomeStatus
from grading.judge.cache import RepeatAgreement
from grading.judge.specs import model_family
from grading.report.agreement import Agreement
from grading.report.corrected import CorrectedContrast
from grading.report.stats import (
    Estimate,
    JudgeAccuracy,
)
from grading.schema import PromptStyle

FORMAT = 4  # the report's JSON (metrics.json has its own: grading.checks.outcome.METRICS_FORMAT)
DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 0
MIN_REPETITIONS = 3  # runs per (task, arm, model) (§7)
MIN_REPETITIONS_COMPARED = 5  # ... when two arms are compared

Verdict = Literal["pass", "fail"]
Split = Literal["before_cutoff", "after_cutoff", "unknown"]
SPLITS: tuple[Split, ...] = ("before_cutoff", "after_cutoff", "unknown")


# --- input: one graded run --------------------------------------------------------------------------------


ContrastKind = Literal["arm", "model"]

ContrastMetric = Literal["test_pass_rate", "mergeable_rate", "difference"]

# Per shared task: (measured, test-pass, mergeable) runs of side a, then the same of side b.
PairSums = tuple[int, int, int, int, int, int]


class Precision(BaseModel):
    """How precise a contrast is now and what would bring its interval to ±``target`` (see
    grading.report.power)."""

    target: float  # the half-width aimed at (0.05: ±5 points)
    half_width: float | None  # half the interval's width now
    predicted_half_width: float | None  # the variance model's, at the current tasks and repetitions
    between_task_variance: float | None  # of the per-task b − a, beyond what the runs' own noise explains
    within_task_variance: float | None  # of one run's outcome around its task's rate, pooled over sides
    repetitions: float  # measured runs per task and side now (harmonic mean)
    more_tasks: int | None  # shared tasks to add, at the current repetitions
    repetitions_needed: int | None  # runs per task and side, at the current tasks
    reason: str | None = None  # why a figure above is null
    # The smallest true b − a a t test at 5% (two-sided) detects with 80% power over these tasks, and the
    # shared tasks (in all) that would detect a difference of ``target``; None without a spread to go by.
    minimum_detectable_effect: float | None = None
    tasks_to_detect: int | None = None


class Contrast(BaseModel):
    kind: ContrastKind  # "arm": two arms of one model; "model": two models in one arm
    fixed: str  # the model (kind "arm") or the arm (kind "model") both sides share
    a: str
    b: str
    metric: ContrastMetric
    value: float | None  # mean over shared tasks of the per-task b − a; None without a shared task
    ci: tuple[float, float] | None
    tasks: int  # tasks with measured runs on both sides
    runs: int  # measured runs of those tasks, both sides together
    few_tasks: bool  # fewer than FEW_TASKS shared tasks
    interval_reason: str | None = None  # why ci is null, or what a "no_spread" interval bounds
    precision: Precision | None = None
    se: float | None = None  # standard error of value (sd of the per-task differences / sqrt(tasks))
    method: str | None = None  # "t", or "no_spread" (every shared task gave the same difference)
    p_value: float | None = None  # two-sided, against b − a = 0 (t test on the per-task differences)
    p_holm: float | None = None  # Holm-adjusted within the family (same kind and metric)
    family_size: int = 0  # the contrasts with a p-value in that family: the comparisons made
    tasks_a: int = 0  # tasks with measured runs on side a (the shared ones and the rest)
    tasks_b: int = 0


class LabelTarget(BaseModel):
    """How many more human-labelled runs would bring the judge-error-corrected mergeable rate (over every
    measured run of the report) to ±``target``."""

    target: float
    labelled: int
    corrected_rate: float | None
    half_width: float | None  # predicted now
    more_labels: int | None  # labelled runs to add (each run needs every blocker the judge decided)
    reason: str | None = None


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
    provisional). ``human_mergeable`` is a human's verdict on the run, where one exists;
    ``label_probability`` the chance the run had of being labelled (its inclusion probability, from how its
    labels were drawn: grading.report.label_rows.run_inclusion_probability), None where the labels do not
    say (uniform sampling is then assumed, and the report says so).
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
    label_probability: float | None = Field(default=None, gt=0, le=1)

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
    # Rogan-Gladen on the runs the judge decided (their share kept); None without enough human labels
    corrected_mergeable_rate: Estimate | None = None
    corrected_basis: str | None = None  # whose sensitivity and specificity: the cell's labels, or pooled
    judged: int = 0  # measured runs the judge decided (passed the tests, scope and integrity not failed)
    # The mergeable rate had every run left out of it (failures, not measured) been not mergeable, or
    # mergeable: how far the runs left out could move it. None when none was left out.
    mergeable_bounds: tuple[float, float] | None = None
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
    contrasts: list[Contrast] = []  # grading.report.contrasts: arm against arm, model against model
    # grading.report.corrected: the same pairs on the judge-error-corrected mergeable rate (with labels)
    corrected_contrasts: list[CorrectedContrast] = []
    cells: list[Cell]
    by_prompt_style: list[Cell]
    by_contamination: list[ContaminationCell]
    tasks: list[TaskRow]
    agreement: AgreementReport
    repeat_agreement: RepeatAgreement | None
    disagreements: list[Disagreement]
    judge_accuracy: JudgeAccuracy
    # grading.report.power: human-labelled runs that would bring the corrected rate (all runs) to ±5 points
    label_target: LabelTarget | None = None
    judges: list[JudgeUse]
    bootstrap: int
    seed: int
    warnings: list[str]

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def group_by[T, K: tuple[Any, ...]](runs: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    groups: dict[K, list[T]] = defaultdict(list)
    for r in runs:
        groups[key(r)].append(r)
    return groups
