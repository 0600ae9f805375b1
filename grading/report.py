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
from grading.report_stats import CONFIDENCE as CONFIDENCE  # re-exported: the statistics live there
from grading.report_stats import MIN_LABELLED as MIN_LABELLED
from grading.report_stats import Estimate as Estimate
from grading.report_stats import JudgeAccuracy as JudgeAccuracy
from grading.report_stats import LabelSums as LabelSums
from grading.report_stats import TaskSums as TaskSums
from grading.report_stats import bootstrap_rates as bootstrap_rates
from grading.report_stats import corrected_rate as corrected_rate
from grading.report_stats import percentile as percentile
from grading.report_stats import rate_estimates as rate_estimates
from grading.report_stats import resample_sums as resample_sums
from grading.report_stats import resample_tasks as resample_tasks
from grading.report_stats import rogan_gladen as rogan_gladen
from grading.report_stats import sensitivity_specificity as sensitivity_specificity
from grading.report_stats import uniforms as uniforms
from grading.schema import PromptStyle

if TYPE_CHECKING:  # numpy is imported where the bootstrap runs: most commands never need it
    pass

FORMAT = 2  # the report's JSON (metrics.json has its own: grading.outcome.METRICS_FORMAT)
DEFAULT_BOOTSTRAP = 2000
DEFAULT_SEED = 0
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


# --- statistics (grading/report_stats.py holds the arithmetic) --------------------------------------------


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
    accuracy = sensitivity_specificity(total)
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
    test_pass, mergeable, difference = rate_estimates(task_sums, replicates)
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
