"""Test-integrity check (§3).

CONTRACT: ``check_integrity(tests: TestsConfig | None, changes: list[FileChange], grade: GradeJson | None,
oracle_grade: GradeJson | None, base_list: list[str] | None, run_list: list[str] | None) -> IntegrityResult``
and ``integrity_for_run(task_dir: Path, run_dir: Path, manifest_path: Path) -> IntegrityResult``.

Four parts, each measured only when its inputs exist; a part that cannot be measured is listed in
``not_measured`` with the reason and never counts as passed (nor, by itself, as failed):

- ``deleted_files``: no file matching ``tests.globs`` or ``tests.config_globs`` is deleted. Diffs are taken
  with ``--no-renames``, so a moved test file is a deletion. Edits to config files (new ones included: a
  root conftest.py can disable tests) are listed in ``config_edits`` for the judge's fixed blocker, and so
  is every ignored file the run created that matches ``tests.config_globs`` (ignored_created.txt,
  self-ignoring directories included): a conftest.py hidden from the diff still runs.
- ``tests_skipped``: grade.json's ``tests_skipped`` is not above the oracle run's.
- ``test_cases``: every test id of the base list (``tests.list`` on the base) is in the run's list. When
  the listing succeeds on the base (``tests_base.txt`` exists) and fails in the workspace
  (``tests_list.error``, written by ``rubric capture``), that is ``test_listing_broken``: a test file that
  does not even import hides every test case in it.
- ``git_dir``: the run changed nothing under ``.git`` (``git_dir_changes.txt``, written by ``rubric
  capture`` from a v4 snapshot; ``git_dir_modified`` per changed path).

Whatever the parts, a FIFO, socket or device the run left in the work tree (``# special file:`` lines of
``ignored_created.txt``: git cannot diff it, so the capture left it out) is a ``special_file`` violation
per path.

A run imported from the SWE-bench harness (run.json ``"source": "swe-bench"``) was never captured: there is
no workspace, so nothing recorded the ignored files it created (``ignored_files``), ran ``tests.list`` in it
(``test_cases``) or watched ``.git`` (``git_dir``), and its report counts no skipped tests
(``tests_skipped``). Those parts are not measured, with a reason naming the harness; a missing test list is
then the harness's nature, not a grader failure. A harness patch that is not a diff leaves every part not
measured (:func:`unreadable_patch_integrity`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from grading.diffs import FileChange, load_diff
from grading.errors import InputError
from grading.git_quote import path_text
from grading.globs import match_any
from grading.loaders import load_grade, load_manifest, load_run
from grading.path_lists import read_path_list
from grading.run_files import (
    DIFF_NAME,
    GIT_DIR_CHANGES_NAME,
    GRADE_NAME,
    IGNORED_CREATED_NAME,
    ORACLE_GRADE_NAME,
    RUN_NAME,
    TESTS_BASE_NAME,
    TESTS_LIST_ERROR_NAME,
    TESTS_LIST_NAME,
    read_ignored_created_shown,
    read_listing_error,
    read_test_list,
)
from grading.schema import GradeJson, TestsConfig
from grading.words import counted

if TYPE_CHECKING:
    from grading.checks.run import LoadedTask, Run

IntegrityRule = Literal[
    "test_file_deleted",
    "config_file_deleted",
    "more_tests_skipped",
    "test_case_removed",
    "test_listing_broken",
    "git_dir_modified",
    "special_file",
]
IntegrityPart = Literal["deleted_files", "tests_skipped", "test_cases", "git_dir"]
GIT_DIR_VIOLATIONS_MAX = 20  # one violation per changed path up to this many, then one that counts the rest
SPECIAL_FILE_VIOLATIONS_MAX = 20  # the same for FIFOs, sockets and devices left in the work tree

GIT_DIR_NOT_MEASURED = (
    f"no {GIT_DIR_CHANGES_NAME}: the run was captured from a snapshot without a private record"
)
# Why each part a capture records is not measured for a run from the SWE-bench harness. "ignored_files" is
# named only here: for a captured run, ignored_created.txt is part of deleted_files (config edits).
HARNESS_NOT_MEASURED = {
    "ignored_files": "the SWE-bench harness records no ignored files the run created (it keeps no "
    "workspace): an ignored test config file, or one under denied_globs, would not be seen",
    "test_cases": "the SWE-bench harness lists no test ids (tests.list never ran in the run's workspace)",
    "git_dir": "the SWE-bench harness keeps no record of what the run changed under .git",
    "tests_skipped": "the SWE-bench harness's report.json does not count skipped tests",
}


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


def deleted_paths(changes: list[FileChange]) -> list[str]:
    """Paths that no longer exist after the change: deletions and the old side of renames.

    A path deleted and added again in the same diff (git shows a type change, file to symlink, that way)
    still exists, so it is not deleted.
    """
    still_there = {c.new_path for c in changes if c.new_path is not None}
    # A dict keeps the diff's order and is a set for membership: a diff deleting 50,000 files stays linear.
    out: dict[str, None] = {}
    for change in changes:
        old = change.old_path
        if old is not None and old != change.new_path and old not in still_there:
            out[old] = None
    return list(out)


def _check_files(
    tests: TestsConfig, changes: list[FileChange], ignored_created: Sequence[str]
) -> tuple[list[IntegrityViolation], list[str]]:
    violations: list[IntegrityViolation] = []
    for path in deleted_paths(changes):
        if match_any(tests.globs, path):
            violations.append(
                IntegrityViolation(rule="test_file_deleted", path=path, detail="matches tests.globs")
            )
        elif match_any(tests.config_globs, path):
            violations.append(
                IntegrityViolation(rule="config_file_deleted", path=path, detail="matches tests.config_globs")
            )
    # A new config file counts too: a root conftest.py can disable tests without touching one.
    new_paths = dict.fromkeys([*(c.new_path for c in changes if c.new_path is not None), *ignored_created])
    config_edits = [p for p in new_paths if match_any(tests.config_globs, p)]
    return violations, config_edits


def check_integrity(
    tests: TestsConfig | None,
    changes: list[FileChange],
    grade: GradeJson | None,
    oracle_grade: GradeJson | None,
    base_list: list[str] | None,
    run_list: list[str] | None,
    ignored_created: Sequence[str] = (),
    git_dir_changes: Sequence[str] | None = None,
    run_list_error: str | None = None,
    special_files: Sequence[str] = (),
) -> IntegrityResult:
    """Test integrity of one diff; an input given as None does not exist, and its part is not measured.

    ``run_list_error`` is why ``tests.list`` failed in the workspace (``tests_list.error``): with a base
    list, a ``test_listing_broken`` violation.

    ``ignored_created`` are the ignored files the run created (every one, inside self-ignoring directories
    too): those matching ``tests.config_globs`` count as config edits. ``git_dir_changes`` are the paths
    under ``.git`` the run changed; None leaves that part out (no capture record: a diff given directly).
    ``special_files`` are the FIFOs, sockets and devices the capture found in the work tree: one
    ``special_file`` violation each (no diff carries them, and the run put them there).
    """
    violations: list[IntegrityViolation] = []
    config_edits: list[str] = []
    measured: list[IntegrityPart] = []
    not_measured: dict[str, str] = {}

    if tests is None:
        not_measured["deleted_files"] = "the manifest has no tests block"
    elif not tests.globs and not tests.config_globs:
        not_measured["deleted_files"] = "the manifest's tests block has neither globs nor config_globs"
    else:
        measured.append("deleted_files")
        file_violations, config_edits = _check_files(tests, changes, ignored_created)
        violations += file_violations

    parts: list[tuple[IntegrityPart, str | list[IntegrityViolation]]] = [
        ("tests_skipped", _skipped_tests(grade, oracle_grade)),
        ("test_cases", _removed_test_cases(tests, base_list, run_list, run_list_error)),
    ]
    for part, found in parts:
        if isinstance(found, str):
            not_measured[part] = found
        else:
            measured.append(part)
            violations += found

    if git_dir_changes is not None:
        measured.append("git_dir")
        violations += _git_dir_violations(git_dir_changes)
    violations += _special_file_violations(special_files)

    return IntegrityResult(
        ok=not violations,
        violations=violations,
        config_edits=config_edits,
        measured=measured,
        not_measured=not_measured,
    )


def _skipped_tests(grade: GradeJson | None, oracle_grade: GradeJson | None) -> str | list[IntegrityViolation]:
    """More tests skipped than in the oracle's run: the violations, or why the part is not measured."""
    if grade is None:
        return f"no {GRADE_NAME} for the run"
    if grade.tests_skipped is None:
        return f"{GRADE_NAME} does not report tests_skipped"
    if oracle_grade is None:
        return f"no {ORACLE_GRADE_NAME} for the task"
    if oracle_grade.tests_skipped is None:
        return f"{ORACLE_GRADE_NAME} does not report tests_skipped"
    if grade.tests_skipped > oracle_grade.tests_skipped:
        detail = f"{counted(grade.tests_skipped, 'test')} skipped, oracle run {oracle_grade.tests_skipped}"
        return [IntegrityViolation(rule="more_tests_skipped", detail=detail)]
    return []


def _removed_test_cases(
    tests: TestsConfig | None,
    base_list: list[str] | None,
    run_list: list[str] | None,
    run_list_error: str | None,
) -> str | list[IntegrityViolation]:
    """Test ids the base lists and the run does not (or the run's listing broken): the violations, or why the
    part is not measured."""
    if tests is None or tests.list_command is None:
        return "the manifest's tests block has no list command"
    if base_list is None:
        return f"no {TESTS_BASE_NAME} (tests.list on the base) for the task"
    if run_list is None and run_list_error is not None:
        return [
            IntegrityViolation(
                rule="test_listing_broken",
                detail=f"tests.list succeeds on the base and fails in the workspace: {run_list_error}",
            )
        ]
    if not base_list:
        return f"{TESTS_BASE_NAME} lists no test ids"
    if run_list is None:
        return f"no {TESTS_LIST_NAME} (tests.list in the workspace) for the run"
    present = set(run_list)
    removed = list(dict.fromkeys(t for t in base_list if t not in present))
    return [
        IntegrityViolation(
            rule="test_case_removed", path=test_id, detail=f"in {TESTS_BASE_NAME}, not in the run"
        )
        for test_id in removed
    ]


def _capped_violations(
    rule: str, paths: Sequence[str], detail: str, cap: int, noun: str, where: str
) -> list[IntegrityViolation]:
    """One violation per path up to ``cap``, then one that counts the rest as ``noun`` (``where`` says where
    they are all named): a run cannot bury its grade under a million paths."""
    shown = [IntegrityViolation(rule=rule, path=path, detail=detail) for path in paths[:cap]]
    if len(paths) > cap:
        shown.append(IntegrityViolation(rule=rule, detail=f"and {counted(len(paths) - cap, noun)} {where}"))
    return shown


def _git_dir_violations(changes: Sequence[str]) -> list[IntegrityViolation]:
    return _capped_violations(
        "git_dir_modified",
        changes,
        "changed under .git during the run",
        GIT_DIR_VIOLATIONS_MAX,
        "more path",
        f"under .git ({GIT_DIR_CHANGES_NAME})",
    )


def _special_file_violations(paths: Sequence[str]) -> list[IntegrityViolation]:
    return _capped_violations(
        "special_file",
        paths,
        "a FIFO, socket or device in the work tree: git cannot diff it, so it is absent from the diff",
        SPECIAL_FILE_VIOLATIONS_MAX,
        "more such path",
        f"({IGNORED_CREATED_NAME})",
    )


def read_git_dir_changes(run_dir: Path) -> list[str] | None:
    """The paths under ``.git`` the run changed (``git_dir_changes.txt``), shown as the diff parser shows
    names; None when the capture wrote none (a snapshot without a private record)."""
    path = run_dir / GIT_DIR_CHANGES_NAME
    if not path.exists():
        return None
    return [path_text(os.fsencode(p)) for p in read_path_list(path)]


def listing_broken(result: IntegrityResult) -> str | None:
    """The detail of a ``test_listing_broken`` violation (with the listing's last stderr lines), or None."""
    return next((v.detail for v in result.violations if v.rule == "test_listing_broken"), None)


def _optional_grade(path: Path) -> GradeJson | None:
    return load_grade(path) if path.exists() else None


def integrity_of_run(task: LoadedTask, run: Run) -> IntegrityResult:
    """Integrity of a run read once (:class:`grading.checks.run.Run`) against a task read once: the manifest's
    tests block, the oracle's grade.json and the base test list (each part not measured without its input)."""
    result = check_integrity(
        task.tests,
        run.changes,
        run.grade,
        task.oracle_grade,
        task.tests_base,
        run.tests_list,
        run.ignored.all_files(),
        git_dir_changes=run.git_dir_changes,
        run_list_error=run.tests_list_error,
        special_files=run.ignored.special_files,
    )
    if run.git_dir_changes is None:
        result.not_measured["git_dir"] = GIT_DIR_NOT_MEASURED
    if run.record is not None and run.record.from_swe_bench:
        has_list = run.tests_list is not None or run.tests_list_error is not None
        _harness_not_measured(result, task.tests, run.grade, has_list)
    return result


def _harness_not_measured(
    result: IntegrityResult, tests: TestsConfig | None, grade: GradeJson | None, has_list: bool
) -> None:
    """The parts of a run from the SWE-bench harness that only a capture records, marked not measured with
    the harness as the reason (a part measured from an input the run does have stays measured)."""
    result.not_measured["ignored_files"] = HARNESS_NOT_MEASURED["ignored_files"]
    if "git_dir" not in result.measured:
        result.not_measured["git_dir"] = HARNESS_NOT_MEASURED["git_dir"]
    if tests is not None and tests.list_command is not None and not has_list:
        result.not_measured["test_cases"] = HARNESS_NOT_MEASURED["test_cases"]
    if grade is not None and grade.tests_skipped is None:
        result.not_measured["tests_skipped"] = HARNESS_NOT_MEASURED["tests_skipped"]


def unreadable_patch_integrity(problem: str) -> IntegrityResult:
    """Integrity of a run whose patch is not a diff (a SWE-bench ``model_patch`` that does not parse: see
    :attr:`grading.checks.run.Run.unreadable_patch`): nothing can be measured, and no part counts as
    passed."""
    why = f"the patch is not a diff ({problem})"
    parts = ("deleted_files", "tests_skipped", "test_cases", "git_dir", "ignored_files")
    return IntegrityResult(ok=True, not_measured=dict.fromkeys(parts, why))


def missing_run_list(task: LoadedTask, run: Run) -> str | None:
    """Why the run cannot be graded for want of its test list, or None.

    When the manifest declares ``tests.list``, ``rubric capture --manifest`` writes ``tests_list.txt``, or
    ``tests_list.error`` when the listing ran in the workspace and failed. The latter is the run's doing
    (``test_listing_broken``) only when the task's ``tests_base.txt`` shows the listing works on the base.
    A run with neither was captured without its list, or the listing could not run at all: a grader
    failure, never a check that silently passes. A run from the SWE-bench harness (run.json) was never
    captured: its test cases are not measured instead (:data:`HARNESS_NOT_MEASURED`).
    """
    return _missing_list(
        task.tests,
        run.tests_list is not None,
        run.tests_list_error is not None,
        task.tests_base is not None,
        from_harness=run.record is not None and run.record.from_swe_bench,
    )


def _from_harness(run_dir: Path) -> bool:
    """run_dir/run.json (when there is one) says the run came from the SWE-bench harness."""
    path = run_dir / RUN_NAME
    return (path.exists() or path.is_symlink()) and load_run(path).from_swe_bench


def integrity_for_run(task_dir: Path, run_dir: Path, manifest_path: Path) -> IntegrityResult:
    """Integrity of one run from the manifest's tests block, ``run_dir/workspace.diff``, grade.json and
    tests_list.txt, and the task's oracle_grade.json and tests_base.txt. Missing optional files make their
    part not measured; a missing diff or manifest, or any malformed file, is an InputError.
    """
    for directory in (task_dir, run_dir):
        if not directory.is_dir():
            raise InputError(directory, "not a directory")
    tests = load_manifest(manifest_path).tests
    changes = load_diff(run_dir / DIFF_NAME)
    git_dir_changes = read_git_dir_changes(run_dir)
    grade = _optional_grade(run_dir / GRADE_NAME)
    run_list = read_test_list(run_dir / TESTS_LIST_NAME)
    run_list_error = read_listing_error(run_dir)
    ignored = read_ignored_created_shown(run_dir / IGNORED_CREATED_NAME)
    result = check_integrity(
        tests,
        changes,
        grade,
        _optional_grade(task_dir / ORACLE_GRADE_NAME),
        read_test_list(task_dir / TESTS_BASE_NAME),
        run_list,
        ignored.all_files(),
        git_dir_changes=git_dir_changes,
        run_list_error=run_list_error,
        special_files=ignored.special_files,
    )
    if git_dir_changes is None:
        result.not_measured["git_dir"] = GIT_DIR_NOT_MEASURED
    if _from_harness(run_dir):
        _harness_not_measured(result, tests, grade, run_list is not None or run_list_error is not None)
    return result


def _missing_list(
    tests: TestsConfig | None, has_list: bool, has_error: bool, has_base: bool, *, from_harness: bool
) -> str | None:
    if tests is None or tests.list_command is None or has_list or (from_harness and not has_error):
        return None
    if has_error:
        if has_base:
            return None
        return (
            f"tests.list failed in the workspace ({TESTS_LIST_ERROR_NAME}) and the task has no "
            f"{TESTS_BASE_NAME} to show it works on the base (`rubric list-tests` writes it)"
        )
    return (
        f"the manifest declares tests.list but the run has no {TESTS_LIST_NAME} "
        "(`rubric capture --manifest` writes it; see its output for why it did not)"
    )
