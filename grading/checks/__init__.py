"""The checks that grade one run (§1): a run and its task read once (run), scope and integrity against the
rubric and the task's tests, and the outcome that joins them with the judge's verdicts (outcome)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grading.lazy import lazy_interface

# module -> the public names it defines
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.checks.integrity": (
        "IntegrityResult",
        "check_integrity",
        "integrity_for_run",
        "integrity_of_run",
        "read_git_dir_changes",
    ),
    "grading.checks.outcome": (
        "FRAMEWORK_METRICS",
        "METRICS_FORMAT",
        "OutcomeStatus",
        "RubricAssessment",
        "RunDetails",
        "RunMetrics",
        "assess",
        "grade",
        "grade_run",
    ),
    "grading.checks.run": ("Run", "LoadedTask", "make_run", "make_task_files", "read_run", "read_task_files"),
    "grading.checks.scope": ("ScopeResult", "check_scope", "scope_for_run", "scope_of_run"),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.checks.integrity import IntegrityResult as IntegrityResult
    from grading.checks.integrity import check_integrity as check_integrity
    from grading.checks.integrity import integrity_for_run as integrity_for_run
    from grading.checks.integrity import integrity_of_run as integrity_of_run
    from grading.checks.integrity import read_git_dir_changes as read_git_dir_changes
    from grading.checks.outcome import FRAMEWORK_METRICS as FRAMEWORK_METRICS
    from grading.checks.outcome import METRICS_FORMAT as METRICS_FORMAT
    from grading.checks.outcome import OutcomeStatus as OutcomeStatus
    from grading.checks.outcome import RubricAssessment as RubricAssessment
    from grading.checks.outcome import RunDetails as RunDetails
    from grading.checks.outcome import RunMetrics as RunMetrics
    from grading.checks.outcome import assess as assess
    from grading.checks.outcome import grade as grade
    from grading.checks.outcome import grade_run as grade_run
    from grading.checks.run import LoadedTask as LoadedTask
    from grading.checks.run import Run as Run
    from grading.checks.run import make_run as make_run
    from grading.checks.run import make_task_files as make_task_files
    from grading.checks.run import read_run as read_run
    from grading.checks.run import read_task_files as read_task_files
    from grading.checks.scope import ScopeResult as ScopeResult
    from grading.checks.scope import check_scope as check_scope
    from grading.checks.scope import scope_for_run as scope_for_run
    from grading.checks.scope import scope_of_run as scope_of_run
