"""Graded runs and reports built in memory: shared by the report and contrast tests."""

from __future__ import annotations

from typing import Any

from grading.report.build import build_report
from grading.report.models import GradedRun, JudgeVerdicts, Report

PRIMARY = "anthropic:claude-sonnet-4-5-20250929"


def run(task: str = "t1", outcome: str = "mergeable", **kw: Any) -> GradedRun:
    """A graded run with the outcome fields as ``rubric grade`` would set them."""
    outcomes: dict[str, dict[str, Any]] = {
        "mergeable": {"status": "mergeable", "test_pass": True, "mergeable": True, "merge_score": 1.0},
        "blocker": {"status": "not_mergeable", "test_pass": True, "mergeable": False, "merge_score": 0.0},
        "tests_fail": {"status": "not_mergeable", "test_pass": False, "mergeable": False, "merge_score": 0.0},
        "not_measured": {"status": "not_measured", "test_pass": None, "mergeable": None},
        "grader_failure": {"status": "grader_failure", "test_pass": None, "mergeable": None},
        "judge_failure": {"status": "judge_failure", "test_pass": True, "mergeable": None},
    }
    fields = outcomes[outcome]
    if outcome in ("mergeable", "blocker") and "primary" not in kw:
        kw["primary"] = judged({"B1": "pass" if outcome == "mergeable" else "fail"})
    kw.setdefault("checks_passed", outcome in ("mergeable", "blocker"))
    kw.setdefault("provisional", False)
    return GradedRun(
        run=kw.pop("run", f"{task}-{id(kw)}"), task=task, **{"arm": "a", "model": "m", **fields, **kw}
    )


def report(runs: list[GradedRun], **kw: Any) -> Report:
    return build_report(runs, **{"bootstrap": 400, **kw})


def judged(blockers: dict[str, str], spec: str = PRIMARY, **kw: Any) -> JudgeVerdicts:
    return JudgeVerdicts(judge=spec, blockers=blockers, non_blockers=kw.pop("non_blockers", {}), **kw)
