"""Outcomes (spec §1): ``mergeable``, ``merge_score``, grader failure and judge failure.

The decision is a pure function of what the checks found (:func:`decide_outcome`); :func:`grade_run`
reads a run directory, runs scope, integrity and the judge, and writes ``metrics.json``.

Rules, in the order they apply:

1. Grader failure (both null): grade.json holds a key the framework writes (``mergeable``,
   ``merge_score``, and, because metrics.json is flat, ``grader_failure``, ``judge_failure``,
   ``details``); or a gate entry names a metric grade.json does not report, or reports as something
   other than a boolean or a number. A gate the grader cannot be held to is the grader's fault, and
   reporting ``false`` would blame the agent for it. Likewise when the task has a rubric and the
   manifest declares ``tests.list`` but the run has no ``tests_list.txt``: the test-case check would
   otherwise pass unmeasured. (A ``tests_list.error`` with the task's ``tests_base.txt`` is no grader
   failure: the run broke the listing, an integrity violation, ``test_listing_broken``.)
2. No rubric.json: both null (not measured), never false. Likewise a run from the SWE-bench harness whose
   report says its infrastructure failed (``infra_failure``: schema.harness_infra_failure): its ``pass``
   measured nothing of the patch.
3. ``pass`` false, or a gate entry that does not hold (``mergeable`` and ``merge_score`` in the gate are the
   framework's own and are skipped): not mergeable, merge_score 0. The test gate failed, so the judge is
   not called: its verdict cannot change that (and a judge failure must not turn this false into null).
4. Judge failure (a fault of the model API or of the judge's reply): both null.
5. Too large to review: the diff the judge would read (binary patches summarized to one line each) is over
   its limit. The judge is not called and the run is not mergeable, merge_score 0: the run wrote it, and a
   maintainer does not merge what cannot be reviewed. Never a judge failure.
6. Otherwise mergeable when scope and integrity pass and no blocker fails. A blocker the
   judge could not see (``needs_tree``, without a repository checkout for the tree judge) is not measured
   and does not fail; one the tree judge decided counts like any other. merge_score is the weighted
   share of non-blockers that pass, 0 when not mergeable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel

from grading.atomic import write_atomic
from grading.checks.integrity import (
    IntegrityResult,
    integrity_of_run,
    listing_broken,
    missing_run_list,
    unreadable_patch_integrity,
)
from grading.checks.run import LoadedTask, Run, posed_for, read_run, read_task_files
from grading.checks.scope import ScopeResult, scope_of_run
from grading.errors import InputError
from grading.judge.backend import Backend
from grading.judge.cache import VerdictCache, in_regrade_sample
from grading.judge.models import JudgeResult
from grading.judge.runner import JudgeSettings, diff_sha256, judge_run
from grading.judge.specs import check_second_judge, judge_family, make_backend
from grading.judge.tree import base_tree_for
from grading.schema import (
    CONFIG_BLOCKER_ID,
    GradeJson,
    Rubric,
    TaskSpec,
)

# The layout version of metrics.json; bumped when a key changes meaning or goes away.
METRICS_FORMAT = 1
# Keys the framework adds to metrics.json; a grade.json holding one of them is a grader failure.
FRAMEWORK_METRICS = (
    "mergeable",
    "merge_score",
    "grader_failure",
    "judge_failure",
    "details",
    "format",
    "rubric_sha256",
    "provisional",
)
# Gate entries the framework computes itself: never looked up in grade.json.
FRAMEWORK_GATE_ENTRIES = frozenset({"mergeable", "merge_score"})

OutcomeStatus = Literal["mergeable", "not_mergeable", "not_measured", "grader_failure", "judge_failure"]


class RubricAssessment(BaseModel):
    """What the rubric side decides about one diff: scope, integrity and the judge's items.

    Shared by outcomes (§1) and admission (§5), which judges without a grade.json.
    """

    in_scope: bool
    integrity_ok: bool
    listing_broken: str | None = None  # tests.list fails in the workspace: the why goes into the reasons
    judge_failure: str | None = None
    # The judge was not called: what it would read is over its limit (runner's ``too_large_to_review``).
    too_large_to_review: str | None = None
    blockers_failed: list[str] = []
    blockers_passed: list[str] = []
    blockers_not_measured: list[str] = []
    blockers_tree_judged: list[str] = []  # needs_tree blockers decided by the tree judge (counted as any)
    non_blockers_passed: list[str] = []
    non_blockers_failed: list[str] = []
    non_blocker_share: float | None = None  # weighted share of non-blockers that pass

    @property
    def mergeable(self) -> bool | None:
        """Mergeable on the rubric's side alone; None on a judge failure."""
        if self.judge_failure is not None:
            return None
        return (
            self.in_scope
            and self.integrity_ok
            and self.too_large_to_review is None
            and not self.blockers_failed
        )

    def reasons(self) -> list[str]:
        out: list[str] = []
        if not self.in_scope:
            out.append("scope check failed")
        if not self.integrity_ok:
            out.append("test-integrity check failed")
        if self.listing_broken is not None:
            out.append(self.listing_broken)
        if self.too_large_to_review is not None:
            out.append(self.too_large_to_review)
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


def settled_before_judging(
    gate: list[str], grade: GradeJson, rubric: Rubric | None, grader_problems: Sequence[str] = ()
) -> Outcome | None:
    """The outcome when no verdict could change it (grader failure, no rubric, ``pass`` false, a gate entry
    that does not hold), else None. ``grader_problems`` are the caller's reasons for a grader failure
    (a missing ``tests_list.txt``).

    :func:`grade_run` calls the judge only when this returns None.
    """
    metrics = grade.metrics()
    problems = [
        f"grade.json holds {k!r}, which the framework writes" for k in FRAMEWORK_METRICS if k in metrics
    ]
    problems += [p for e in gate if e not in FRAMEWORK_GATE_ENTRIES if (p := _gate_problem(e, grade))]
    problems += grader_problems
    if problems:
        return Outcome(
            status="grader_failure", mergeable=None, merge_score=None, grader_failure=True, reasons=problems
        )
    if rubric is None:
        return Outcome(status="not_measured", mergeable=None, merge_score=None, reasons=["no rubric.json"])
    if not grade.passed:
        return Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=["pass is false"])
    if failing := _gate_failures(gate, grade):
        reasons = [f"gate entry {e!r} does not hold" for e in failing]
        return Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=reasons)
    return None


def assess(
    rubric: Rubric, scope: ScopeResult, integrity: IntegrityResult, judge: JudgeResult
) -> RubricAssessment:
    """Combine scope, integrity and the judge's verdicts for one diff.

    A judge result that does not account for every item (a verdict, or not measured for a ``needs_tree``
    blocker), that carries verdicts for unknown ids, or that lacks the fixed test-config blocker when
    the run edited a test config file, is a judge failure: never a pass, never a fail.
    """
    base = {
        "in_scope": scope.in_scope,
        "integrity_ok": integrity.ok,
        "listing_broken": listing_broken(integrity),
    }
    if judge.failure is not None:
        return RubricAssessment(**base, judge_failure=judge.failure)
    if judge.too_large_to_review is not None:
        return RubricAssessment(**base, too_large_to_review=judge.too_large_to_review)
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
        blockers_tree_judged=[b for b in judged_blockers if by_id[b].tree_judged],
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
    reasons = assessment.reasons()
    if reasons:
        return Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=reasons)
    assert assessment.non_blocker_share is not None
    return Outcome(status="mergeable", mergeable=True, merge_score=assessment.non_blocker_share)


# --- a run directory -> metrics.json ----------------------------------------------------------------------


class RunDetails(BaseModel):
    """What metrics.json records beside the outcome: every input to it, and the second judge."""

    status: OutcomeStatus
    reasons: list[str] = []
    judge_skipped: str | None = None  # why the judge was not called
    scope: ScopeResult | None = None
    integrity: IntegrityResult | None = None
    # the integrity parts not measured (integrity.not_measured's keys), so reports can count those runs
    # apart; empty when every part was measured or when there is no rubric (nothing was checked)
    integrity_not_measured: list[str] = []
    assessment: RubricAssessment | None = None  # blockers failed/passed/not measured, per the primary judge
    judge: JudgeResult | None = None  # the primary judge: only its verdicts count
    second_judge: JudgeResult | None = None  # another model family; never changes the outcome
    second_judge_skipped: str | None = None  # why a second judge that was given was not called
    # The model family of each judge (§4: the second is of another family); always written by grade_run, None
    # only in metrics.json files written before it was recorded.
    judge_families: JudgeFamilies | None = None


class JudgeFamilies(BaseModel):
    primary: str
    second: str | None = None


class AdmissionLookup(Protocol):
    """Where ``rubric check`` results are kept (grading.admission.check.AdmissionStore)."""

    def admits(self, rubric_sha256: str, judge: str) -> bool: ...


class RunMetrics(BaseModel):
    """metrics.json: the grade.json metrics unchanged, plus the framework's outcome keys and details.

    Provenance (§6): ``format`` is the layout version; ``rubric_sha256`` the sha256 of the rubric.json bytes
    (null without a rubric), as admission keys it; ``provisional`` is true unless the admission store holds
    a passing ``rubric check`` of that rubric content with the primary judge.
    """

    format: Literal[1] = 1  # METRICS_FORMAT
    rubric_sha256: str | None
    provisional: bool
    grade_metrics: dict[str, Any]
    mergeable: bool | None
    merge_score: float | None
    grader_failure: bool
    judge_failure: bool
    details: RunDetails

    def to_json_dict(self) -> dict[str, Any]:
        """The flat metrics.json object (the framework's keys win over a grade.json that holds them,
        which is a grader failure anyway)."""
        own = self.model_dump(mode="json", exclude={"grade_metrics"})
        return {**self.grade_metrics, **own}


RunDetails.model_rebuild()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON with :func:`grading.atomic.write_atomic`, so readers never see half a file.

    InputError when ``path`` is a directory; ValueError (nothing written) for NaN or Infinity in ``data``,
    which JSON cannot carry."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    write_atomic(path, (text + "\n").encode("utf-8"))


def in_second_judge_sample(diff_text: str, rate: float) -> bool:
    """Whether the second judge grades a run with this diff when it grades ``rate`` of the runs: a choice
    fixed by the diff's sha256, so grading again (or on another machine) picks the same runs."""
    if not 0.0 <= rate <= 1.0:  # also refuses NaN
        raise InputError(None, "must be between 0 and 1", "--second-judge-sample")
    return in_regrade_sample(diff_sha256(diff_text), rate)


def _backend(judge: Backend | str) -> Backend:
    return make_backend(judge) if isinstance(judge, str) else judge


def grade_run(
    task_dir: Path,
    run_dir: Path,
    manifest_path: Path,
    judge: Backend | str,
    second_judge: Backend | str | None = None,
    *,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    write: bool = True,
    rubric_path: Path | None = None,
    task_json: Path | None = None,
    admissions: AdmissionLookup | None = None,
    allow_same_family: bool = False,
    second_sample: float = 1.0,
    checkout: Path | None = None,
) -> RunMetrics:
    """All of §1 for one run folder: read the task and the run once
    (:func:`grading.checks.run.read_task_files`, :func:`grading.checks.run.read_run`), :func:`grade` them and
    write ``run_dir/metrics.json`` atomically.

    ``rubric_path`` and ``task_json`` replace ``task_dir/rubric.json`` and ``task_dir/task.json`` (held-out
    rubrics, §7); with ``rubric_path`` given the rubric must exist. The other arguments are :func:`grade`'s.
    Raises InputError for bad input; nothing is written then.
    """
    task = read_task_files(task_dir, manifest_path, rubric_path=rubric_path, task_json=task_json)
    run = read_run(run_dir)
    metrics_path = run_dir / "metrics.json"
    if write and metrics_path.is_dir():
        raise InputError(metrics_path, "is a directory; it cannot be replaced by the file")
    metrics = grade(
        task,
        run,
        judge,
        second_judge,
        cache=cache,
        settings=settings,
        admissions=admissions,
        allow_same_family=allow_same_family,
        second_sample=second_sample,
        checkout=checkout,
    )
    if write:
        write_json_atomic(metrics_path, metrics.to_json_dict())
    return metrics


def grade(
    task_files: LoadedTask,
    run: Run,
    judge: Backend | str,
    second_judge: Backend | str | None = None,
    *,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    admissions: AdmissionLookup | None = None,
    allow_same_family: bool = False,
    second_sample: float = 1.0,
    checkout: Path | None = None,
) -> RunMetrics:
    """All of §1 for one run, in memory: scope, integrity and the judge(s) on ``run``, and the outcome.

    ``judge`` and ``second_judge`` are backends or judge specs (``anthropic:<id>``, ``openai:<id>``,
    ``scripted:<file>``); a second judge of the primary's model family is refused unless
    ``allow_same_family``. Neither judge is called when no verdict could change the outcome; the second
    grades ``second_sample`` of the runs (chosen by the diff's sha256). ``admissions`` answers whether the
    rubric content was admitted with the primary judge (``provisional`` is true without it).
    ``checkout`` is the repository (its git objects are read at task.json's ``base_commit``, never its work
    tree): with it the tree judge decides ``needs_tree`` blockers; without it they are not measured.
    Raises InputError for bad input (a rubric but no workspace.diff, a prompt style the task lacks).
    """
    task = posed_for(task_files.task, run)
    base_tree = base_tree_for(task, checkout, Path(task_files.task_file)) if checkout is not None else None
    rubric = task_files.rubric
    judges = _judges(judge, second_judge, allow_same_family, second_sample)

    scope, integrity, grader_problems = _scope_and_integrity(task_files, run)
    settled = _settled(task, run, grader_problems, rubric)
    if settled is not None:
        judged = _Judged(skipped=f"not called: {settled.reasons[0]}")
    else:
        assert rubric is not None and scope is not None and integrity is not None
        judge_args: dict[str, Any] = {
            "config_edited": bool(integrity.config_edits),
            "cache": cache,
            "settings": settings,
            "self_ignoring_dirs": run.ignored.self_ignoring_dirs,
            "git_dir_changes": run.git_dir_changes or [],
            "special_files": run.ignored.special_files,
            "base_tree": base_tree,
        }
        primary_result, second_result, second_skipped = _judge(
            task, rubric, run.require_diff(), judges, second_sample, judge_args
        )
        assessment = assess(rubric, scope, integrity, primary_result)
        judged = _Judged(primary_result, second_result, second_skipped, assessment)
    outcome = settled or decide_outcome(task.gate, run.grade, scope, integrity, judged.primary, rubric)
    content_sha256 = task_files.rubric_sha256
    admitted = (
        content_sha256 is not None
        and admissions is not None
        and admissions.admits(content_sha256, judges[0].spec)
    )
    return _run_metrics(run.grade, content_sha256, admitted, outcome, scope, integrity, judged, judges)


class _Judged(NamedTuple):
    """What the judges said of one run: each one's result, why the second or both were not called, and the
    rubric's assessment by the primary's verdicts."""

    primary: JudgeResult | None = None
    second: JudgeResult | None = None
    second_skipped: str | None = None
    assessment: RubricAssessment | None = None
    skipped: str | None = None


def _run_metrics(
    grade_json: GradeJson,
    content_sha256: str | None,
    admitted: bool,
    outcome: Outcome,
    scope: ScopeResult | None,
    integrity: IntegrityResult | None,
    judged: _Judged,
    judges: tuple[Backend, Backend | None],
) -> RunMetrics:
    """metrics.json's content for one graded run."""
    primary, second = judges
    return RunMetrics(
        rubric_sha256=content_sha256,
        provisional=not admitted,
        grade_metrics=grade_json.metrics(),
        mergeable=outcome.mergeable,
        merge_score=outcome.merge_score,
        grader_failure=outcome.grader_failure,
        judge_failure=outcome.judge_failure,
        details=RunDetails(
            status=outcome.status,
            reasons=outcome.reasons,
            judge_skipped=judged.skipped,
            scope=scope,
            integrity=integrity,
            integrity_not_measured=sorted(integrity.not_measured) if integrity is not None else [],
            assessment=judged.assessment,
            judge=judged.primary,
            second_judge=judged.second,
            second_judge_skipped=judged.second_skipped,
            judge_families=JudgeFamilies(
                primary=judge_family(primary.spec),
                second=judge_family(second.spec) if second is not None else None,
            ),
        ),
    )


def _scope_and_integrity(
    task_files: LoadedTask, run: Run
) -> tuple[ScopeResult | None, IntegrityResult | None, list[str]]:
    """The scope and integrity checks on the run (none without a rubric; integrity alone for a patch that
    is not a diff), and the grader's own problems found on the way."""
    rubric = task_files.rubric
    if rubric is None:
        return None, None, []
    run.require_diff()
    if run.unreadable_patch is not None:
        return None, unreadable_patch_integrity(run.unreadable_patch), []
    scope = scope_of_run(rubric, run)
    integrity = integrity_of_run(task_files, run)
    problem = missing_run_list(task_files, run)
    return scope, integrity, [problem] if problem else []


def _settled(task: TaskSpec, run: Run, grader_problems: list[str], rubric: Rubric | None) -> Outcome | None:
    """The outcome when no judge's verdict could change it, before any judge is called; None otherwise."""
    settled = settled_before_judging(task.gate, run.grade, rubric, grader_problems)
    if run.not_measured is not None and (settled is None or not settled.grader_failure):
        # The harness's report could not say whether the patch passed (its own environment broke): the
        # run is neither failing nor mergeable, and no verdict could make it either.
        settled = Outcome(status="not_measured", mergeable=None, merge_score=None, reasons=[run.not_measured])
    if settled is None and rubric is not None and run.unreadable_patch is not None:
        # The agent's patch (SWE-bench's model_patch) is not a diff: no reviewer could read it, so no
        # verdict could make it mergeable. Its own doing, so not mergeable, never a grader failure.
        reason = f"the patch is not a diff that can be reviewed ({run.unreadable_patch})"
        settled = Outcome(status="not_mergeable", mergeable=False, merge_score=0.0, reasons=[reason])
    return settled


def _judge(
    task: TaskSpec,
    rubric: Rubric,
    diff_text: str,
    judges: tuple[Backend, Backend | None],
    second_sample: float,
    judge_args: dict[str, Any],
) -> tuple[JudgeResult, JudgeResult | None, str | None]:
    """The primary judge's result, the second judge's when it is called, and why it was not."""
    primary, second = judges
    # Over the judge's limit, the runner makes no call and says the change is too large to review.
    primary_result = judge_run(task, rubric, diff_text, primary, **judge_args)
    if second is None:
        return primary_result, None, None
    if primary_result.too_large_to_review is not None:
        return primary_result, None, f"not called: {primary_result.too_large_to_review}"
    if in_second_judge_sample(diff_text, second_sample):
        return primary_result, judge_run(task, rubric, diff_text, second, **judge_args), None
    return primary_result, None, f"not in the second judge's sample ({second_sample:g} of runs)"


def _judges(
    judge: Backend | str, second_judge: Backend | str | None, allow_same_family: bool, second_sample: float
) -> tuple[Backend, Backend | None]:
    """The primary and second judge's backends; InputError for a refused pair or sample rate."""
    primary = _backend(judge)
    second = _backend(second_judge) if second_judge is not None else None
    if second is not None:
        check_second_judge(primary.spec, second.spec, allow_same_family=allow_same_family)
    if not 0.0 <= second_sample <= 1.0:  # also refuses NaN
        raise InputError(None, "must be between 0 and 1", "--second-judge-sample")
    return primary, second
