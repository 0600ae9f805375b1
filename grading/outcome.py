"""Outcomes (spec §1): ``mergeable``, ``merge_score``, grader failure and judge failure.

The decision is a pure function of what the checks found (:func:`decide_outcome`); :func:`grade_run`
reads a run directory, runs scope, integrity and the judge, and writes ``metrics.json``.

Rules, in the order they apply:

1. Grader failure (both null): grade.json holds a key the framework writes (``mergeable``,
   ``merge_score``, and, because metrics.json is flat, ``grader_failure``, ``judge_failure``,
   ``details``); or a gate entry names a metric grade.json does not report, or reports as something
   other than a boolean or a number. A gate the grader cannot be held to is the grader's fault, and
   reporting ``false`` would blame the agent for it.
2. No rubric.json: both null (not measured), never false.
3. ``pass`` false: not mergeable, merge_score 0; the judge is not called, its verdict cannot change that.
4. Judge failure: both null.
5. Otherwise mergeable when every gate entry holds (``mergeable`` and ``merge_score`` in the gate are
   the framework's own and are skipped), scope and integrity pass and no blocker fails. A blocker the
   judge could not see (``needs_tree``) is not measured and does not fail. merge_score is the weighted
   share of non-blockers that pass, 0 when not mergeable.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

from grading.integrity import IntegrityResult
from grading.judge.models import CONFIG_BLOCKER_ID, JudgeResult
from grading.schema import GradeJson, Rubric
from grading.scope import ScopeResult

# Keys the framework adds to metrics.json; a grade.json holding one of them is a grader failure.
FRAMEWORK_METRICS = ("mergeable", "merge_score", "grader_failure", "judge_failure", "details")
# Gate entries the framework computes itself: never looked up in grade.json.
FRAMEWORK_GATE_ENTRIES = frozenset({"mergeable", "merge_score"})

OutcomeStatus = Literal["mergeable", "not_mergeable", "not_measured", "grader_failure", "judge_failure"]


class RubricAssessment(BaseModel):
    """What the rubric side decides about one diff: scope, integrity and the judge's items.

    Shared by outcomes (§1) and admission (§5), which judges without a grade.json.
    """

    in_scope: bool
    integrity_ok: bool
    judge_failure: str | None = None
    blockers_failed: list[str] = []
    blockers_passed: list[str] = []
    blockers_not_measured: list[str] = []
    non_blockers_passed: list[str] = []
    non_blockers_failed: list[str] = []
    non_blocker_share: float | None = None  # weighted share of non-blockers that pass

    @property
    def mergeable(self) -> bool | None:
        """Mergeable on the rubric's side alone; None on a judge failure."""
        if self.judge_failure is not None:
            return None
        return self.in_scope and self.integrity_ok and not self.blockers_failed

    def reasons(self) -> list[str]:
        out: list[str] = []
        if not self.in_scope:
            out.append("scope check failed")
        if not self.integrity_ok:
            out.append("test-integrity check failed")
        out += [f"blocker {b} fails" for b in self.blockers_failed]
        return out


class Outcome(BaseModel):
    """The §1 outcome of one run."""

    status: OutcomeStatus
    mergeable: bool | None
    merge_score: float | None
    grader_failure: bool = False
    judge_failure: bool = False
    reasons: list[str] = []  # why not mergeable, or why not measured


def _gate_problem(entry: str, grade: GradeJson) -> str | None:
    metrics = grade.metrics()
    if entry not in metrics:
        return f"gate entry {entry!r} names a metric grade.json does not report"
    value = metrics[entry]
    if isinstance(value, bool) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return None
    return f"gate entry {entry!r}: grade.json reports {json.dumps(value)}, not a boolean or a number"


def _gate_failures(gate: list[str], grade: GradeJson) -> list[str]:
    metrics = grade.metrics()
    return [e for e in gate if e not in FRAMEWORK_GATE_ENTRIES and not metrics[e]]


def settled_before_judging(gate: list[str], grade: GradeJson, rubric: Rubric | None) -> Outcome | None:
    """The outcome when no verdict could change it (grader failure, no rubric, ``pass`` false), else None.

    :func:`grade_run` calls the judge only when this returns None.
    """
    metrics = grade.metrics()
    problems = [
        f"grade.json holds {k!r}, which the framework writes" for k in FRAMEWORK_METRICS if k in metrics
    ]
    problems += [p for e in gate if e not in FRAMEWORK_GATE_ENTRIES if (p := _gate_problem(e, grade))]
    if problems:
        return Outcome(
            status="grader_failure", mergeable=None, merge_score=None, grader_failure=True, reasons=problems
        )
    if rubric is None:
        return Outcome(status="not_measured", mergeable=None, merge_score=None, reasons=["no rubric.json"])
    if not grade.passed:
        return Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=["pass is false"])
    return None


def assess(
    rubric: Rubric, scope: ScopeResult, integrity: IntegrityResult, judge: JudgeResult
) -> RubricAssessment:
    """Combine scope, integrity and the judge's verdicts for one diff.

    A judge result that does not account for every item (a verdict, or not measured for a ``needs_tree``
    blocker), that carries verdicts for unknown ids, or that lacks the fixed test-config blocker when
    the run edited a test config file, is a judge failure: never a pass, never a fail.
    """
    base = {"in_scope": scope.in_scope, "integrity_ok": integrity.ok}
    if judge.failure is not None:
        return RubricAssessment(**base, judge_failure=judge.failure)
    blocker_ids = [b.id for b in rubric.blockers]
    if integrity.config_edits:
        blocker_ids.append(CONFIG_BLOCKER_ID)
    weights = {n.id: float(n.weight) for n in rubric.non_blockers}
    not_measured = [b for b in blocker_ids if b in judge.not_measured]
    needs_tree = {b.id for b in rubric.blockers if b.needs_tree}
    problems: list[str] = []
    if wrongly_skipped := [b for b in not_measured if b not in needs_tree]:
        problems.append(f"blockers reported as not measured without needs_tree: {', '.join(wrongly_skipped)}")
    expected = [b for b in blocker_ids if b not in not_measured] + list(weights)
    by_id = {v.item_id: v for v in judge.verdicts}
    if missing := [i for i in expected if i not in by_id]:
        problems.append(f"no verdict for {', '.join(missing)}")
    if extra := sorted(set(by_id) - set(expected)):
        problems.append(f"verdicts for items not asked: {', '.join(extra)}")
    if len(by_id) != len(judge.verdicts):
        problems.append("more than one verdict for an item")
    if problems:
        return RubricAssessment(**base, judge_failure="; ".join(problems))
    judged_blockers = [b for b in blocker_ids if b not in not_measured]
    passed_nb = [n for n in weights if by_id[n].verdict == "pass"]
    return RubricAssessment(
        **base,
        blockers_failed=[b for b in judged_blockers if by_id[b].verdict == "fail"],
        blockers_passed=[b for b in judged_blockers if by_id[b].verdict == "pass"],
        blockers_not_measured=not_measured,
        non_blockers_passed=passed_nb,
        non_blockers_failed=[n for n in weights if by_id[n].verdict == "fail"],
        non_blocker_share=sum(weights[n] for n in passed_nb) / sum(weights.values()),
    )


def decide_outcome(
    gate: list[str],
    grade: GradeJson,
    scope: ScopeResult | None,
    integrity: IntegrityResult | None,
    judge: JudgeResult | None,
    rubric: Rubric | None,
) -> Outcome:
    """The §1 outcome from the task's gate, grade.json, scope, integrity, the primary judge and the rubric.

    ``scope``, ``integrity`` and ``judge`` may be None only when the outcome is settled without them
    (see :func:`settled_before_judging`); otherwise that is a caller error (ValueError).
    """
    settled = settled_before_judging(gate, grade, rubric)
    if settled is not None:
        return settled
    if rubric is None or scope is None or integrity is None or judge is None:
        raise ValueError("scope, integrity and the judge are needed once pass is true and a rubric exists")
    assessment = assess(rubric, scope, integrity, judge)
    if assessment.judge_failure is not None:
        return Outcome(
            status="judge_failure",
            mergeable=None,
            merge_score=None,
            judge_failure=True,
            reasons=[f"judge failure: {assessment.judge_failure}"],
        )
    reasons = [f"gate entry {e!r} does not hold" for e in _gate_failures(gate, grade)]
    reasons += assessment.reasons()
    if reasons:
        return Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=reasons)
    assert assessment.non_blocker_share is not None
    return Outcome(status="mergeable", mergeable=True, merge_score=assessment.non_blocker_share)
