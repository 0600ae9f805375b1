"""What the report reads of its runs, summed (grading/report/build.py): the report is computed from these
sums, never from the runs one by one, so that a caller holding many runs in a database can sum them there.

- :class:`PartSums`: the runs of one task, arm, model and prompt style (every cell, contrast and warning of
  the report is a union of such parts);
- :class:`VerdictGroup`: runs of one task with the same test-gate and checks outcome and the same verdicts
  of both judges (the judge agreement, the failed-blocker histogram and the judges' use and cost);
- the disagreements between the judges, run by run (:func:`run_disagreements`), and the few runs a human
  labelled, as records.

:func:`summarise` sums :class:`GradedRun` records (``rubric report``); the web app sums its rows with the
same methods (:meth:`PartSums.add`, :meth:`PartSums.add_metrics`), in groups of identical runs.

Means are of exact decimal sums (each value as the shortest decimal that reads back as it, as JSON writes
it): they do not depend on the order the runs are added in, nor on how they are grouped.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Context, Decimal
from functools import lru_cache

from grading.report.models import Disagreement, GradedRun, JudgeVerdicts
from grading.schema import PromptStyle

# Enough digits that a sum of a million values of 17 significant digits each is exact.
_EXACT = Context(prec=60)


@lru_cache(maxsize=4096)  # merge scores and metric values repeat: a few fractions of a rubric's weights
def exact(value: float) -> Decimal:
    """``value`` as the decimal that JSON writes for it (its shortest round-trip form), exactly."""
    return Decimal(repr(float(value)))


def mean(total: Decimal, count: int) -> float:
    """The mean of values whose exact sum is ``total``: the sum rounded once to a float, then divided."""
    return float(total) / count


@dataclass(slots=True)
class PartSums:
    """The runs of one (task, arm, model, prompt style), summed: what the report's cells count of them."""

    task: str
    arm: str
    model: str
    prompt_style: PromptStyle | None
    base_date: date | None = None  # the task's
    runs: int = 0
    statuses: dict[str, int] = field(default_factory=dict)  # OutcomeStatus -> runs
    provisional: int = 0  # runs graded with a rubric that is not admitted
    provisional_unknown: int = 0  # runs whose record does not say (counted as provisional too)
    measured: int = 0  # GradedRun.measured: the runs the rates are over
    passed: int = 0  # measured runs that passed the tests
    merged: int = 0  # measured runs that are mergeable
    # Measured runs the judge decided: they passed the tests, and scope and integrity did not fail (a run
    # stopped before the judge keeps its deterministic outcome; the judge-error correction leaves it alone).
    judged: int = 0
    score_sum: Decimal = Decimal(0)  # merge scores of the mergeable runs that have one
    scored: int = 0
    metrics: dict[str, tuple[Decimal, int]] = field(default_factory=dict)  # name -> (sum, runs)
    flags: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (true, runs)
    unmeasured_runs: int = 0  # measured runs graded with a test-integrity part not measured
    unmeasured_parts: dict[str, int] = field(default_factory=dict)  # part -> such runs

    def add(
        self,
        count: int,
        *,
        status: str,
        test_pass: bool | None,
        mergeable: bool | None,
        provisional: bool | None,
        merge_score: float | None,
        integrity_not_measured: Collection[str] = (),
        checks_passed: bool | None = None,
    ) -> None:
        """Add ``count`` runs that share these values (``checks_passed``: scope and integrity, None when
        not recorded; a run that passed the tests is taken as judged unless they failed)."""
        self.runs += count
        self.statuses[status] = self.statuses.get(status, 0) + count
        if provisional is None:
            self.provisional_unknown += count
        elif provisional:
            self.provisional += count
        if mergeable and merge_score is not None:
            score = exact(merge_score)
            self.score_sum = _EXACT.add(
                self.score_sum, score if count == 1 else _EXACT.multiply(score, count)
            )
            self.scored += count
        if mergeable is not None and test_pass is not None:  # GradedRun.measured
            self.measured += count
            self.passed += count * test_pass
            self.merged += count * mergeable
            self.judged += count * bool(test_pass and (checks_passed is not False or mergeable))
            if integrity_not_measured:
                self.unmeasured_runs += count
                for part in set(integrity_not_measured):
                    self.unmeasured_parts[part] = self.unmeasured_parts.get(part, 0) + count

    def add_metrics(self, count: int, numeric: Mapping[str, float], flags: Mapping[str, bool]) -> None:
        """Add the grade.json metrics of ``count`` runs that reported these (:func:`grade_metrics`'s split);
        only runs that are not grader failures have their metrics counted."""
        for name, value in numeric.items():
            self.add_metric(name, _EXACT.multiply(exact(value), count), count)
        for name, flag in flags.items():
            self.add_flag(name, count * flag, count)

    def absorb(self, other: PartSums) -> None:
        """Add every count and sum of ``other`` (runs of other tasks, arms or styles too: a cell's total)."""
        self.runs += other.runs
        for status, n in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + n
        self.provisional += other.provisional
        self.provisional_unknown += other.provisional_unknown
        self.measured += other.measured
        self.passed += other.passed
        self.merged += other.merged
        self.judged += other.judged
        self.score_sum = _EXACT.add(self.score_sum, other.score_sum)
        self.scored += other.scored
        for name, (total, runs) in other.metrics.items():
            self.add_metric(name, total, runs)
        for name, (true, runs) in other.flags.items():
            self.add_flag(name, true, runs)
        self.unmeasured_runs += other.unmeasured_runs
        for part, n in other.unmeasured_parts.items():
            self.unmeasured_parts[part] = self.unmeasured_parts.get(part, 0) + n

    def add_metric(self, name: str, total: Decimal, runs: int) -> None:
        """Add ``runs`` runs whose numeric metric ``name`` adds up to ``total`` (exactly, as :func:`exact`
        writes each value)."""
        before, counted = self.metrics.get(name, (Decimal(0), 0))
        self.metrics[name] = (_EXACT.add(before, total), counted + runs)

    def add_flag(self, name: str, true: int, runs: int) -> None:
        """Add ``runs`` runs that reported the true/false metric ``name``, ``true`` of them true."""
        before, counted = self.flags.get(name, (0, 0))
        self.flags[name] = (before + true, counted + runs)


def sums_by_task(parts: Iterable[PartSums]) -> dict[str, tuple[int, int, int]]:
    """Per task, the (measured, test-pass, mergeable) runs of ``parts`` (grading.report.stats.TaskSums: what
    every rate is a ratio of), in the order the tasks first come; a task without a measured run is left
    out."""
    by_task: dict[str, list[int]] = {}
    for p in parts:
        if p.measured:
            sums = by_task.setdefault(p.task, [0, 0, 0])
            sums[0] += p.measured
            sums[1] += p.passed
            sums[2] += p.merged
    return {task: (s[0], s[1], s[2]) for task, s in by_task.items()}


def judged_by_task(parts: Iterable[PartSums]) -> dict[str, int]:
    """Per task with a measured run, its measured runs the judge decided (:attr:`PartSums.judged`)."""
    out: dict[str, int] = {}
    for p in parts:
        if p.measured:
            out[p.task] = out.get(p.task, 0) + p.judged
    return out


@dataclass(slots=True)
class JudgeCost:
    """The summed cost of one judge's calls over a group's runs (JudgeVerdicts' cost_usd, tree_cost_usd)."""

    cost_usd: float = 0.0
    tree_cost_usd: float = 0.0


@dataclass(slots=True)
class VerdictGroup:
    """Runs of one task with the same test-gate and checks outcome and the same verdicts by both judges
    (None: that judge did not run). The verdicts' own costs are not read: the group's are."""

    task: str
    test_pass: bool | None
    checks_passed: bool | None
    primary: JudgeVerdicts | None
    second: JudgeVerdicts | None
    runs: int = 1
    primary_cost: JudgeCost = field(default_factory=JudgeCost)
    second_cost: JudgeCost = field(default_factory=JudgeCost)

    def both_judged(self) -> bool:
        """Both judges decided every item and the run passed the tests: the runs their agreement is over."""
        p, s = self.primary, self.second
        return bool(p and s and p.complete and s.complete and self.test_pass)


def run_disagreements(
    run: str, task: str, test_pass: bool | None, primary: JudgeVerdicts | None, second: JudgeVerdicts | None
) -> list[Disagreement]:
    """The items of one run on which the two judges disagree, where both decided every item and the run
    passed the tests (the runs the agreement is over), by item id: blockers, then non-blockers."""
    if not (primary and second and primary.complete and second.complete and test_pass):
        return []
    out = []
    for mine, theirs in ((primary.blockers, second.blockers), (primary.non_blockers, second.non_blockers)):
        if mine == theirs:  # most pairs agree throughout: nothing to look for item by item
            continue
        for item in sorted(mine):
            if item in theirs and mine[item] != theirs[item]:
                out.append(
                    Disagreement(run=run, task=task, item=item, primary=mine[item], second=theirs[item])
                )
    return out


@dataclass
class ReportSums:
    """Everything :func:`grading.report.build.report_from_sums` reads. ``disagreements`` in any order (the
    report sorts them); ``labelled``: at least every run with a human verdict on mergeable (others are left
    out)."""

    parts: list[PartSums]
    verdicts: list[VerdictGroup]
    disagreements: list[Disagreement]
    labelled: list[GradedRun]


def _part_key(run: GradedRun) -> tuple[str, str, str, PromptStyle | None]:
    return (run.task, run.arm, run.model, run.prompt_style)


def summarise(runs: Sequence[GradedRun]) -> ReportSums:
    """The sums of graded runs: a part per (task, arm, model, prompt style), a verdict group per run."""
    parts: dict[tuple[str, str, str, PromptStyle | None], PartSums] = {}
    verdicts: list[VerdictGroup] = []
    disagreements: list[Disagreement] = []
    for r in runs:
        key = _part_key(r)
        part = parts.get(key)
        if part is None:
            part = parts[key] = PartSums(*key, base_date=r.base_date)
        part.add(
            1,
            status=r.status,
            test_pass=r.test_pass,
            mergeable=r.mergeable,
            provisional=r.provisional,
            merge_score=r.merge_score,
            integrity_not_measured=r.integrity_not_measured,
            checks_passed=r.checks_passed,
        )
        if r.status != "grader_failure":
            part.add_metrics(1, r.metrics, r.flags)
        verdicts.append(
            VerdictGroup(
                task=r.task,
                test_pass=r.test_pass,
                checks_passed=r.checks_passed,
                primary=r.primary,
                second=r.second,
                primary_cost=_cost(r.primary),
                second_cost=_cost(r.second),
            )
        )
        disagreements += run_disagreements(r.run, r.task, r.test_pass, r.primary, r.second)
    labelled = [r for r in runs if r.human_mergeable is not None and r.mergeable is not None]
    return ReportSums(list(parts.values()), verdicts, disagreements, labelled)


def _cost(verdicts: JudgeVerdicts | None) -> JudgeCost:
    if verdicts is None:
        return JudgeCost()
    return JudgeCost(verdicts.cost_usd, verdicts.tree_cost_usd)
