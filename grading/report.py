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

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from grading.agreement import Agreement as Agreement  # re-exported: the report's public name
from grading.agreement import cohen_kappa as cohen_kappa  # re-exported
from grading.contrasts import build_contrasts
from grading.judge.cache import RepeatAgreement
from grading.power import TARGET_HALF_WIDTH, LabelTarget, label_target
from grading.report_models import DEFAULT_BOOTSTRAP as DEFAULT_BOOTSTRAP
from grading.report_models import DEFAULT_SEED as DEFAULT_SEED
from grading.report_models import FORMAT as FORMAT
from grading.report_models import MIN_REPETITIONS as MIN_REPETITIONS
from grading.report_models import MIN_REPETITIONS_COMPARED as MIN_REPETITIONS_COMPARED
from grading.report_models import SPLITS as SPLITS
from grading.report_models import AgreementReport as AgreementReport
from grading.report_models import Cell as Cell
from grading.report_models import ContaminationCell as ContaminationCell
from grading.report_models import Disagreement as Disagreement
from grading.report_models import GradedRun as GradedRun
from grading.report_models import JudgeUse as JudgeUse
from grading.report_models import JudgeVerdicts as JudgeVerdicts
from grading.report_models import MetricMean as MetricMean
from grading.report_models import MetricRate as MetricRate
from grading.report_models import Report as Report
from grading.report_models import Split as Split
from grading.report_models import TaskRow as TaskRow
from grading.report_models import Verdict as Verdict
from grading.report_models import _group
from grading.report_models import grade_metrics as grade_metrics
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
from grading.report_warnings import REPEATED_WARNINGS as REPEATED_WARNINGS
from grading.report_warnings import _warnings
from grading.report_warnings import warning_kind as warning_kind

if TYPE_CHECKING:  # numpy is imported where the bootstrap runs: most commands never need it
    pass

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


def report_label_target(tasks: Sequence[TaskSums], runs: Iterable[GradedRun]) -> LabelTarget:
    """The report's label target (:func:`grading.power.label_target`), for a caller that sums the runs
    itself: ``tasks``, per task in the order of the tasks' ids, the (measured, test-pass, mergeable) counts
    of its measured runs (:attr:`GradedRun.measured`); ``runs``, at least every run with a human verdict
    on mergeable (the others are left out). What :func:`build_report` gives over all the runs."""
    labelled = [r for r in runs if r.human_mergeable is not None and r.mergeable is not None]
    return label_target(tasks, judge_accuracy(labelled)[1], minimum=MIN_LABELLED)


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
        label_target=report_label_target(_task_sums(runs), labelled),
        judges=judges,
        bootstrap=bootstrap,
        seed=seed,
        warnings=_warnings(runs, judges, accuracy, cells),
    )
