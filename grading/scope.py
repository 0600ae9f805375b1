"""Scope check (§3): changed paths within allowed_globs, outside denied_globs, within the size limits.

CONTRACT: ``check_scope(scope: Scope, changes: list[FileChange], ignored_created: list[str]) -> ScopeResult``
and ``scope_for_run(task_dir: Path, run_dir: Path) -> ScopeResult`` (reads rubric.json, workspace.diff,
ignored_created.txt).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

ScopeRule = Literal["outside_allowed", "denied", "ignored_in_denied", "too_many_files", "too_many_lines"]


class ScopeViolation(BaseModel):
    path: str | None
    rule: ScopeRule


class ScopeResult(BaseModel):
    in_scope: bool
    changed_files: int
    changed_lines: int
    violations: list[ScopeViolation] = []
