"""Test-integrity check (§3).

CONTRACT: ``check_integrity(tests: TestsConfig | None, changes: list[FileChange], grade: GradeJson | None,
oracle_grade: GradeJson | None, base_list: list[str] | None, run_list: list[str] | None) -> IntegrityResult``
and ``integrity_for_run(task_dir: Path, run_dir: Path, manifest_path: Path) -> IntegrityResult``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

IntegrityRule = Literal["test_file_deleted", "config_file_deleted", "more_tests_skipped", "test_case_removed"]
IntegrityPart = Literal["deleted_files", "tests_skipped", "test_cases"]


class IntegrityViolation(BaseModel):
    rule: IntegrityRule
    path: str | None = None  # the deleted file, or the removed test id
    detail: str = ""


class IntegrityResult(BaseModel):
    ok: bool
    violations: list[IntegrityViolation] = []
    config_edits: list[str] = []  # edited (not deleted) test config files: the judge gets the fixed blocker
    measured: list[IntegrityPart] = []
    not_measured: dict[str, str] = {}  # part -> why it could not be measured (never reported as passed)
