"""Scope check (§3): changed paths within allowed_globs, outside denied_globs, within the size limits.

CONTRACT: ``check_scope(scope: Scope, changes: list[FileChange], ignored_created: list[str],
self_ignoring_dirs: Sequence[SelfIgnoringDir] = ()) -> ScopeResult`` and
``scope_for_run(task_dir: Path, run_dir: Path) -> ScopeResult`` (reads rubric.json, workspace.diff,
ignored_created.txt).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from grading.diffs import FileChange, load_diff
from grading.errors import InputError
from grading.globs import match_any
from grading.loaders import load_rubric
from grading.path_lists import SelfIgnoringDir
from grading.run_files import DIFF_NAME, IGNORED_CREATED_NAME, RUBRIC_NAME, read_ignored_created_shown
from grading.schema import Rubric, Scope

if TYPE_CHECKING:
    from grading.checks.run import Run

ScopeRule = Literal["outside_allowed", "denied", "ignored_in_denied", "too_many_files", "too_many_lines"]


class ScopeViolation(BaseModel):
    path: str | None
    rule: ScopeRule


class ScopeResult(BaseModel):
    in_scope: bool
    changed_files: int
    changed_lines: int
    violations: list[ScopeViolation] = []


def changed_files(changes: list[FileChange]) -> int:
    """Distinct files the diff touches; a type change (deletion + addition of one path) is one file."""
    return len({c.new_path if c.new_path is not None else c.old_path for c in changes})


def changed_lines(changes: list[FileChange]) -> int:
    """Added plus removed lines over text files (a binary file has no lines to count)."""
    return sum(c.added + c.removed for c in changes if not c.binary)


def check_scope(
    scope: Scope,
    changes: list[FileChange],
    ignored_created: list[str],
    self_ignoring_dirs: Sequence[SelfIgnoringDir] = (),
) -> ScopeResult:
    """Check the old and new path of every change against the globs, ignored files against denied_globs,
    and the size limits. Globs are the rubric dialect (``grading.globs``), never fnmatch.

    A self-ignoring directory the run created is checked against denied_globs as a path (``.ci/cache``
    under ``.ci/**``, reported as ``.ci/cache/``) and file by file.
    """
    violations: list[ScopeViolation] = []
    seen: set[tuple[str | None, str]] = set()

    def add(path: str | None, rule: ScopeRule) -> None:
        if (path, rule) not in seen:
            seen.add((path, rule))
            violations.append(ScopeViolation(path=path, rule=rule))

    for change in changes:
        for path in change.paths():
            if not match_any(scope.allowed_globs, path):
                add(path, "outside_allowed")
            if match_any(scope.denied_globs, path):
                add(path, "denied")
    # Ignored build output is fine anywhere allowed or not; only a denied path is a violation, so that
    # .gitignore cannot hide a write to one.
    for path in ignored_created:
        if match_any(scope.denied_globs, path):
            add(path, "ignored_in_denied")
    for directory in self_ignoring_dirs:
        if match_any(scope.denied_globs, directory.path):
            add(directory.path + "/", "ignored_in_denied")
        for path in directory.files:
            if match_any(scope.denied_globs, path):
                add(path, "ignored_in_denied")
    files = changed_files(changes)
    lines = changed_lines(changes)
    if scope.max_files is not None and files > scope.max_files:
        add(None, "too_many_files")
    if scope.max_changed_lines is not None and lines > scope.max_changed_lines:
        add(None, "too_many_lines")
    return ScopeResult(
        in_scope=not violations, changed_files=files, changed_lines=lines, violations=violations
    )


def scope_of_run(rubric: Rubric, run: Run) -> ScopeResult:
    """Scope of a run read once (:class:`grading.checks.run.Run`): its file changes and the ignored files it
    created against the rubric's scope."""
    return check_scope(rubric.scope, run.changes, run.ignored.files, run.ignored.self_ignoring_dirs)


def scope_for_run(task_dir: Path, run_dir: Path, rubric_path: Path | None = None) -> ScopeResult:
    """Scope of one run: ``task_dir/rubric.json`` (or ``rubric_path``, a rubric kept elsewhere) against
    ``run_dir/workspace.diff`` and ``run_dir/ignored_created.txt`` (absent means no ignored file was
    created). InputError on bad input.
    """
    for directory in (task_dir, run_dir):
        if not directory.is_dir():
            raise InputError(directory, "not a directory")
    rubric = load_rubric(rubric_path or task_dir / RUBRIC_NAME, check_files=False)
    changes = load_diff(run_dir / DIFF_NAME)
    ignored = read_ignored_created_shown(run_dir / IGNORED_CREATED_NAME)
    return check_scope(rubric.scope, changes, ignored.files, ignored.self_ignoring_dirs)
