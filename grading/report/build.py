"""Reports (spec §7, §8, §9): mergeable against test-pass per arm and model, with task-level intervals.

One computation for both faces: ``rubric report`` builds :class:`GradedRun` records from run directories
(:mod:`grading.report.files`), the web app builds them from its rows; both call :func:`build_report`.
The statistics are described in docs/report.md. In short:

- Rates are over *measured* runs: a run with no rubric (not measured), a grader failure or a judge failure
  is counted apart and left out of both the test-pass and the mergeable rate, so that their difference
  compares the same runs.
- Each task counts once: a rate is the mean of its tasks' rates, a contrast the mean of per-task
  differences (grading.report.estimands), with 95% t intervals over tasks.
- Cohen's κ between the primary and the second judge (a task bootstrap interval), Gwet's AC1 beside it;
  null with a reason where it cannot say anything.
- Rogan-Gladen correction of what the judge decided, from human labels (at least :data:`MIN_LABELLED`),
  per arm and model where its labels suffice: a bootstrap over tasks and labels, seeded per cell.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from grading.judge.cache import RepeatAgreement
from grading.report.agreement import PairCounts
from grading.report.contrasts import cell_task_sums, compared_sides, contrasts_from_sums
from grading.report.corrected import CorrectedContrast, corrected_contrast
from grading.report.models import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    SPLITS,
    AgreementReport,
    Cell,
    ContaminationCell,
    GradedRun,
    JudgeUse,
    JudgeVerdicts,
    LabelTarget,
    MetricMean,
    MetricRate,
    Report,
    Split,
    TaskRow,
    group_by,
)
from grading.report.power import TARGET_HALF_WIDTH, label_target
from grading.report.stats import (
    MIN_LABELLED,
    JudgeAccuracy,
    LabelSums,
    TaskSums,
    corrected_task_rate,
    in_parallel,
    resample_sums,
    sensitivity_specificity,
    task_rate_estimates,
)
from grading.report.sums import (
    PartSums,
    ReportSums,
    VerdictGroup,
    judged_by_task,
    mean,
    summarise,
    sums_by_task,
)
from grading.report.warnings import collect_warnings

if TYPE_CHECKING:  # numpy is imported where the bootstrap runs: most commands never need it
    pass

# --- statistics (grading/report/stats.py holds the arithmetic) --------------------------------------------


def judged_labels(labelled: Iterable[GradedRun]) -> list[GradedRun]:
    """The labelled runs the judge decided (passed the tests; scope and integrity not failed): the runs the
    review queue can label, and the only ones whose outcome says anything about the judge."""
    return [r for r in labelled if r.test_pass and (r.checks_passed is not False or r.mergeable)]


def label_weight(run: GradedRun) -> float:
    """A labelled run's weight in the judge's sensitivity and specificity: 1 / its inclusion probability
    (Horvitz-Thompson), 1 where the labels do not give one (uniform sampling assumed)."""
    return 1.0 if run.label_probability is None else 1.0 / run.label_probability


def _weighting(labelled: Sequence[GradedRun]) -> dict[str, Any]:
    """JudgeAccuracy's weighting fields for these labelled runs."""
    if not labelled:
        return {}
    weights = [label_weight(r) for r in labelled]
    effective = math.fsum(weights) ** 2 / math.fsum(w * w for w in weights)
    without = sum(r.label_probability is None for r in labelled)
    if without == len(labelled):
        note = (
            "the labels give no inclusion probability: uniform sampling is assumed (each labelled run weighs "
            "the same); labels drawn as the review queue draws them (every disagreement, a sample of "
            "agreements) would make the judge look worse than it is"
        )
        return {"weighting": "uniform_assumed", "effective_labelled": effective, "weighting_note": note}
    note = (
        f"each labelled run weighs 1 / its inclusion probability (Hájek ratios; {effective:.1f} labelled "
        f"runs' worth of information from {len(labelled)})"
    )
    if without:
        note += f"; {without} labelled runs without one count as drawn with certainty"
    return {"weighting": "inclusion_probability", "effective_labelled": effective, "weighting_note": note}


def judge_accuracy(labelled: Sequence[GradedRun]) -> tuple[JudgeAccuracy, list[LabelSums]]:
    """Sensitivity and specificity of the judge's mergeable outcome against human labels, on the labelled
    runs it decided (:func:`judged_labels`), as inverse-probability-weighted (Hájek) ratios: each run
    weighs :func:`label_weight`. Also the per-task weighted sums the corrected rate's bootstrap
    resamples."""
    labelled = judged_labels(labelled)
    by_task: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for r in labelled:
        sums, weight = by_task[r.task], label_weight(r)
        if r.human_mergeable:
            sums[0] += weight * bool(r.mergeable)
            sums[1] += weight
        else:
            sums[2] += weight * (not r.mergeable)
            sums[3] += weight
    per_task: list[LabelSums] = [tuple(s) for _, s in sorted(by_task.items())]  # type: ignore[misc]
    n = len(labelled)
    weighting = _weighting(labelled)
    if n < MIN_LABELLED:
        needed = f"{n} labelled runs; at least {MIN_LABELLED} are needed ({MIN_LABELLED - n} more)"
        return JudgeAccuracy(labelled=n, undefined_reason=needed, **weighting), per_task
    total: LabelSums = tuple(math.fsum(s[i] for s in per_task) for i in range(4))  # type: ignore[assignment]
    accuracy = sensitivity_specificity(total)
    if accuracy is None:
        side = "mergeable" if total[1] == 0 else "not mergeable"
        one_sided = f"no labelled run is {side} by the human verdict: sensitivity and specificity need both"
        return JudgeAccuracy(labelled=n, undefined_reason=one_sided, **weighting), per_task
    sensitivity, specificity = accuracy
    reason: str | None = None
    if sensitivity + specificity <= 1:
        reason = "sensitivity + specificity <= 1: the judge is no better than chance, nothing to correct"
    return (
        JudgeAccuracy(
            labelled=n, sensitivity=sensitivity, specificity=specificity, undefined_reason=reason, **weighting
        ),
        per_task,
    )


# --- the report ------------------------------------------------------------------------------------------


def contamination_split(run: GradedRun | PartSums, cutoffs: dict[str, date]) -> Split:
    """before_cutoff when the task's base date is on or before the model's training cutoff (its fix may
    have been seen: the merge comes after the base), after_cutoff when later, unknown otherwise."""
    cutoff = cutoffs.get(run.model)
    if cutoff is None or run.base_date is None:
        return "unknown"
    return "after_cutoff" if run.base_date > cutoff else "before_cutoff"


def report_label_target(tasks: Sequence[TaskSums], runs: Iterable[GradedRun]) -> LabelTarget:
    """The report's label target (:func:`grading.report.power.label_target`), for a caller that sums the runs
    itself: ``tasks``, per task in the order of the tasks' ids, the (measured, test-pass, mergeable) counts
    of its measured runs (:attr:`GradedRun.measured`); ``runs``, at least every run with a human verdict
    on mergeable (the others are left out). What :func:`build_report` gives over all the runs."""
    labelled = [r for r in runs if r.human_mergeable is not None and r.mergeable is not None]
    accuracy, sums = judge_accuracy(labelled)
    # The weighted sums scaled to Kish's effective number of labels: their ratios are the weighted Se and
    # Sp, their total what unequal weights leave of the labels for the variance.
    total = math.fsum(s[1] + s[3] for s in sums)
    scale = (accuracy.effective_labelled or 0.0) / total if total else 0.0
    scaled: list[LabelSums] = [(s[0] * scale, s[1] * scale, s[2] * scale, s[3] * scale) for s in sums]
    return label_target(tasks, scaled, minimum=MIN_LABELLED, labelled=accuracy.labelled)


def _task_sums(parts: Iterable[PartSums]) -> list[TaskSums]:
    return [sums for _, sums in sorted(sums_by_task(parts).items())]


class _Context:
    def __init__(
        self,
        replicates: int,
        seed: int,
        accuracy: JudgeAccuracy,
        labels: list[LabelSums],
        strata: dict[tuple[str, str], tuple[JudgeAccuracy, list[LabelSums]]],
    ) -> None:
        self.replicates = replicates
        self.seed = seed
        self.accuracy = accuracy
        self.labels = labels
        self.strata = strata  # per (arm, model): the judge's accuracy on that cell's own labels

    def accuracy_for(self, arm: str, model: str) -> tuple[JudgeAccuracy, list[LabelSums], str]:
        """The cell's own sensitivity and specificity when its labels suffice, else the pooled ones; and
        which, in words."""
        own = self.strata.get((arm, model))
        if own is not None and own[0].undefined_reason is None:
            return own[0], own[1], f"this arm and model's {own[0].labelled} labelled runs"
        have = own[0].labelled if own else 0
        return (
            self.accuracy,
            self.labels,
            f"all {self.accuracy.labelled} labelled runs pooled (this arm and model has {have}; "
            f"its own need at least {MIN_LABELLED}, with both verdicts)",
        )

    def rng(self, *key: str | None) -> random.Random:
        # Seeded per cell, from its key: a cell's interval does not depend on which other cells exist.
        return random.Random("\x1f".join([str(self.seed), *(k or "" for k in key)]))


def _cell_fields(parts: list[PartSums], ctx: _Context, key: tuple[str | None, ...]) -> dict[str, Any]:
    total = PartSums("", "", "", None)
    for p in parts:
        total.absorb(p)
    task_sums = _task_sums(parts)
    rng = ctx.rng(*key)
    # The rates' t intervals draw nothing; the corrected rate resamples the per-task shares.
    test_pass, mergeable, difference = task_rate_estimates(task_sums, intervals=ctx.replicates > 0)
    judged = judged_by_task(parts)
    shares = [(merged / n, judged[task] / n) for task, (n, _, merged) in sorted(sums_by_task(parts).items())]
    accuracy, labels, basis = ctx.accuracy_for(str(key[1] or ""), str(key[2] or ""))
    bounds = _mergeable_bounds(parts)
    corrected = corrected_task_rate(shares, accuracy, labels, ctx.replicates, rng)
    return {
        "runs": total.runs,
        "tasks": len({p.task for p in parts}),
        "measured": sum(t[0] for t in task_sums),
        "test_pass_rate": test_pass,
        "mergeable_rate": mergeable,
        "difference": difference,
        "mean_merge_score": mean(total.score_sum, total.scored) if total.scored else None,
        "grader_failures": total.statuses.get("grader_failure", 0),
        "judge_failures": total.statuses.get("judge_failure", 0),
        "not_measured": total.statuses.get("not_measured", 0),
        "provisional": bool(total.provisional or total.provisional_unknown),
        "corrected_mergeable_rate": corrected,
        "corrected_basis": basis if corrected is not None else None,
        "mergeable_bounds": bounds,
        "judged": sum(judged.values()),
        "metrics": {
            name: MetricMean(mean=mean(sum_, n), runs=n) for name, (sum_, n) in sorted(total.metrics.items())
        },
        "metric_rates": {
            name: MetricRate(rate=true / n, true=true, runs=n)
            for name, (true, n) in sorted(total.flags.items())
        },
        "integrity_not_measured_runs": total.unmeasured_runs,
        "integrity_not_measured": dict(sorted(total.unmeasured_parts.items())),
    }


_LEFT_OUT = ("grader_failure", "judge_failure", "not_measured")


def _mergeable_bounds(parts: Sequence[PartSums]) -> tuple[float, float] | None:
    """The cell's mergeable rate had every run left out of it (grader failures, judge failures, runs not
    measured) been mergeable, or none: per task over all its runs, then the mean over tasks. None when no
    run was left out."""
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # measured, mergeable, left out
    for p in parts:
        sums = per_task[p.task]
        sums[0] += p.measured
        sums[1] += p.merged
        sums[2] += sum(p.statuses.get(s, 0) for s in _LEFT_OUT)
    if not any(s[2] for s in per_task.values()):
        return None
    rows = [s for s in per_task.values() if s[0] + s[2]]
    low = sum(m / (n + e) for n, m, e in rows) / len(rows)
    high = sum((m + e) / (n + e) for n, m, e in rows) / len(rows)
    return (low, high)


def _sort_key(value: str | None) -> tuple[int, str]:
    return (value is None, value or "")


def _task_rows(parts: Sequence[PartSums], groups: Sequence[VerdictGroup]) -> list[TaskRow]:
    runs: dict[str, int] = defaultdict(int)
    for p in parts:
        runs[p.task] += p.runs
    failed: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    judged: dict[str, int] = defaultdict(int)
    for g in groups:
        # Only runs the primary judge decided: the blockers agents fail when the tests pass.
        if g.primary is not None and g.primary.complete and g.test_pass:
            judged[g.task] += g.runs
            for item, verdict in g.primary.blockers.items():
                if verdict == "fail":
                    failed[g.task][item] += g.runs
    return [
        TaskRow(task=task, runs=n, judged=judged[task], failed_blockers=dict(sorted(failed[task].items())))
        for task, n in sorted(runs.items())
    ]


def _kappa_interval(per_task: dict[str, PairCounts], replicates: int, rng: random.Random) -> Any:
    """κ's 95% percentile interval from a bootstrap over tasks (None below two tasks or without a κ in
    enough replicates: a replicate where a judge gave one verdict throughout has none)."""
    if len(per_task) < 2 or replicates == 0:
        return None
    import numpy as np

    from grading.report.stats import percentile_interval

    rows = [(c.n, c.agreeing, c.first_yes, c.second_yes) for _, c in sorted(per_task.items())]
    n, agreeing, first, second = resample_sums(rows, replicates, rng).T.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = first / n, second / n
        chance = a * b + (1 - a) * (1 - b)
        kappa = (agreeing / n - chance) / (1 - chance)
    kept = (a > 0) & (a < 1) & (b > 0) & (b < 1)
    if kept.sum() < 0.975 * replicates:
        return None
    total = PairCounts(*(sum(column) for column in zip(*rows, strict=True)))
    point = total.kappa().kappa
    return percentile_interval(np.sort(kappa[kept]).tolist(), point) if point is not None else None


def _agreement(groups: Sequence[VerdictGroup], replicates: int = 0, seed: int = 0) -> AgreementReport:
    # Mergeable pairs only where the judges decide it: a run that failed scope or integrity is not
    # mergeable by either, and counting it would inflate κ with agreement that is not the judges'.
    mergeable = PairCounts()
    mergeable_by_task: dict[str, PairCounts] = defaultdict(PairCounts)
    items: dict[str, PairCounts] = defaultdict(PairCounts)
    for g in groups:
        if not g.both_judged():
            continue
        p, s = g.primary, g.second
        assert p is not None and s is not None
        if g.checks_passed:
            mergeable.add(p.mergeable(), s.mergeable(), g.runs)
            mergeable_by_task[g.task].add(p.mergeable(), s.mergeable(), g.runs)
        for item, verdict in p.blockers.items():
            other = s.blockers.get(item)
            if other is not None:
                items[f"{g.task}/{item}"].add(verdict == "pass", other == "pass", g.runs)
    overall = mergeable.kappa("primary", "second")
    if overall.kappa is not None:
        rng = random.Random("\x1f".join([str(seed), "agreement"]))
        overall.kappa_ci = _kappa_interval(mergeable_by_task, replicates, rng)
    return AgreementReport(
        mergeable=overall,
        items={k: v.kappa("primary", "second") for k, v in sorted(items.items())},
    )


def _repeat_agreement(groups: Sequence[VerdictGroup]) -> RepeatAgreement | None:
    out = RepeatAgreement()
    for g in groups:
        p = g.primary
        if p is None or not p.complete or p.previous is None:
            continue
        now = {**p.blockers, **p.non_blockers}
        compared = [(p.previous[i], now[i]) for i in now if i in p.previous]
        out.pairs += g.runs
        out.items += len(compared) * g.runs
        out.agreeing += sum(a == b for a, b in compared) * g.runs
    return out if out.pairs else None


def _judge_uses(groups: Sequence[VerdictGroup]) -> list[JudgeUse]:
    counts: dict[tuple[str, str], int] = defaultdict(int)
    seen: dict[tuple[str, str], JudgeVerdicts] = {}
    spend: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0, 0, 1])
    for g in groups:
        for role, j, cost in (("primary", g.primary, g.primary_cost), ("second", g.second, g.second_cost)):
            if j is not None:
                counts[(role, j.judge)] += g.runs
                seen.setdefault((role, j.judge), j)
                s = spend[(role, j.judge)]
                s[0] += cost.cost_usd
                s[1] += cost.tree_cost_usd
                s[2] += len(j.tree_judged) * g.runs
                s[3] += bool(j.tree_judged) * g.runs
                s[4] = s[4] and j.cost_known
    return [
        JudgeUse(role=role, judge=spec, scripted=seen[(role, spec)].scripted,
                 vendor=seen[(role, spec)].vendor(), runs=n,
                 cost_usd=spend[(role, spec)][0], tree_cost_usd=spend[(role, spec)][1],
                 tree_judged=int(spend[(role, spec)][2]), tree_judged_runs=int(spend[(role, spec)][3]),
                 cost_known=bool(spend[(role, spec)][4]))
        for (role, spec), n in sorted(counts.items())
    ]  # fmt: skip


def _corrected_contrasts(parts: Sequence[PartSums], ctx: _Context) -> list[CorrectedContrast]:
    """Each pair of arms (per model) and of models (per arm) compared on the judge-error-corrected mergeable
    rate (grading.report.corrected), in the order of the raw contrasts."""
    if ctx.accuracy.sensitivity is None:
        return []
    cells = group_by(parts, lambda p: (p.arm, p.model))
    per_cell: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = {}
    for cell, group in cells.items():
        judged = judged_by_task(group)
        per_cell[cell] = {
            task: (n, merged, judged[task]) for task, (n, _, merged) in sums_by_task(group).items()
        }
    jobs: list[tuple[str, str, str, str, tuple[str, str], tuple[str, str]]] = []
    for kind in ("arm", "model"):
        for fixed, values in compared_sides(per_cell, kind).items():
            for a, b in itertools.combinations(values, 2):
                side_a, side_b = ((a, fixed), (b, fixed)) if kind == "arm" else ((fixed, a), (fixed, b))
                jobs.append((kind, fixed, a, b, side_a, side_b))

    def one(job: tuple[str, str, str, str, tuple[str, str], tuple[str, str]]) -> CorrectedContrast:
        kind, fixed, a, b, side_a, side_b = job
        rng = ctx.rng("corrected contrast", kind, fixed, a, b)  # its own generator: any thread, same draws
        return corrected_contrast(
            (kind, fixed, a, b), per_cell[side_a], per_cell[side_b], ctx.accuracy_for(*side_a),
            ctx.accuracy_for(*side_b), ctx.replicates, rng,
        )  # fmt: skip

    return in_parallel(one, jobs)


def build_report(
    runs: Sequence[GradedRun],
    *,
    cutoffs: dict[str, date] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Report:
    """The §7 report over graded runs (:func:`report_from_sums` of their :func:`summarise`).

    ``cutoffs`` maps a model id to its training cutoff; without it ``by_contamination`` is empty.
    ``bootstrap`` is the number of bootstrap replicates (0: no intervals), ``seed`` seeds them.
    Human labels travel on the runs (:attr:`GradedRun.human_mergeable`).
    """
    return report_from_sums(summarise(runs), cutoffs=cutoffs, bootstrap=bootstrap, seed=seed)


def report_from_sums(
    sums: ReportSums,
    *,
    cutoffs: dict[str, date] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> Report:
    """The §7 report from the sums of its runs (grading.report.sums), as :func:`build_report` describes."""
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    parts = sorted(sums.parts, key=lambda p: (p.task, p.arm, p.model, _sort_key(p.prompt_style)))
    accuracy, label_sums = judge_accuracy(sums.labelled)
    strata = {
        cell: judge_accuracy(group)
        for cell, group in group_by(sums.labelled, lambda r: (r.arm, r.model)).items()
    }
    ctx = _Context(bootstrap, seed, accuracy, label_sums, strata)

    # Every cell's fields at once (their bootstraps run side by side: grading.report.stats.in_parallel).
    plain = sorted(group_by(parts, lambda p: (p.arm, p.model)).items())
    styled = group_by(parts, lambda p: (p.arm, p.model, p.prompt_style))
    styles = sorted(styled, key=lambda k: (k[0], k[1], _sort_key(k[2])))
    split: dict[tuple[str, str, Split], list[PartSums]] = {}
    if cutoffs is not None:
        split = group_by(parts, lambda p: (p.arm, p.model, contamination_split(p, cutoffs)))
    splits = sorted(split, key=lambda k: (k[0], k[1], SPLITS.index(k[2])))
    jobs: list[tuple[list[PartSums], tuple[str | None, ...]]] = [
        *((group, ("cells", arm, model)) for (arm, model), group in plain),
        *((styled[(arm, model, style)], ("prompt_style", arm, model, style)) for arm, model, style in styles),
        *((split[(arm, model, s)], ("contamination", arm, model, s)) for arm, model, s in splits),
    ]
    fields = iter(in_parallel(lambda job: _cell_fields(job[0], ctx, job[1]), jobs))
    cells = [Cell(arm=arm, model=model, prompt_style=None, **next(fields)) for (arm, model), _ in plain]
    by_prompt_style = [
        Cell(arm=arm, model=model, prompt_style=style, **next(fields)) for arm, model, style in styles
    ]
    by_contamination = [
        ContaminationCell(arm=arm, model=model, prompt_style=None, split=s, **next(fields))
        for arm, model, s in splits
    ]
    judges = _judge_uses(sums.verdicts)
    corrected_contrasts = _corrected_contrasts(parts, ctx)
    contrasts = contrasts_from_sums(
        cell_task_sums(parts), replicates=bootstrap, seed=seed, target=TARGET_HALF_WIDTH
    )
    return Report(
        contrasts=contrasts,
        corrected_contrasts=corrected_contrasts,
        cells=cells,
        by_prompt_style=by_prompt_style,
        by_contamination=by_contamination,
        tasks=_task_rows(parts, sums.verdicts),
        agreement=_agreement(sums.verdicts, bootstrap, seed),
        repeat_agreement=_repeat_agreement(sums.verdicts),
        disagreements=sorted(sums.disagreements, key=lambda d: (d.task, d.run, d.item)),
        judge_accuracy=accuracy,
        label_target=report_label_target(_task_sums(parts), sums.labelled),
        judges=judges,
        bootstrap=bootstrap,
        seed=seed,
        warnings=collect_warnings(parts, judges, accuracy, cells, contrasts),
    )
