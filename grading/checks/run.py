"""A run and a task, each read once into a model that scope, integrity, the judge and the outcome take.

:func:`read_run` reads a run folder (run.json, grade.json, workspace.diff, ignored_created.txt,
tests_list.txt or tests_list.error, git_dir_changes.txt) and :func:`read_task_files` a task folder
(task.json, rubric.json, the manifest's tests block, oracle_grade.json, tests_base.txt and, for admission,
oracle.diff and the calibration diffs). Both only read bytes and hand them to :func:`make_run` and
:func:`make_task_files`, which the web app calls with its database rows: one parser for each file, so a
run graded from its folder and from the app's rows is checked alike. Errors name ``source/<file>``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from grading.diff_rules import MAX_DIFF_BYTES
from grading.diffs import FileChange, decode_diff, parse_diff, read_diff_bytes
from grading.errors import InputError, InputErrors
from grading.git_quote import path_text
from grading.loaders import (
    MAX_MANIFEST_BYTES,
    check_calibration_files,
    parse_grade,
    parse_manifest,
    parse_rubric,
    parse_run_record,
    parse_task,
)
from grading.path_lists import IgnoredCreated, parse_ignored_created, parse_path_list
from grading.run_files import (
    DIFF_NAME,
    GIT_DIR_CHANGES_NAME,
    GRADE_NAME,
    IGNORED_CREATED_NAME,
    LISTING_ERROR_MAX_BYTES,
    ORACLE_DIFF_NAME,
    ORACLE_GRADE_NAME,
    RUBRIC_NAME,
    RUN_NAME,
    TASK_NAME,
    TESTS_BASE_NAME,
    TESTS_LIST_ERROR_NAME,
    TESTS_LIST_NAME,
    listing_error_text,
    parse_test_list,
    shown_ignored,
)
from grading.schema import (
    GradeJson,
    Rubric,
    RunRecord,
    TaskSpec,
    TestsConfig,
    harness_infra_failure,
    rubric_sha256,
)
from grading.strict_json import parse_json, read_input_bytes


class Run(BaseModel):
    """One run, read once: what every check of ``rubric grade`` needs."""

    model_config = ConfigDict(frozen=True)

    source: str  # the run folder, or how the app names the run: errors name source/<file>
    record: RunRecord | None  # run.json; None without one
    grade: GradeJson
    diff_text: str | None  # workspace.diff as the judge reads it; None when there is none
    changes: list[FileChange] = []
    ignored: IgnoredCreated = IgnoredCreated()  # names shown as the diff parser shows them
    tests_list: list[str] | None = None
    tests_list_error: str | None = None
    git_dir_changes: list[str] | None = None  # None: the capture wrote no record (not measured)
    # Why workspace.diff is not a diff grading can read, for a run from the SWE-bench harness only: there the
    # diff is the agent's own text (model_patch), not what `rubric capture` took from git, so a patch that
    # does not parse is the agent's doing and the run is not mergeable (never a run left ungraded).
    unreadable_patch: str | None = None
    # Why the run's test gate was not measured: the SWE-bench harness's own infrastructure failed on it
    # (schema.harness_infra_failure). Neither a pass nor a fail of the agent's patch.
    not_measured: str | None = None

    def file(self, name: str) -> Path:
        return Path(self.source) / name

    def require_diff(self) -> str:
        """The diff text; InputError naming workspace.diff when the run has none."""
        if self.diff_text is None:
            raise InputError(self.file(DIFF_NAME), "file not found")
        return self.diff_text


def make_run(
    source: str | Path,
    *,
    grade_json: bytes,
    diff: bytes | None,
    run_json: bytes | None = None,
    ignored_created: bytes | None = None,
    tests_list: bytes | None = None,
    tests_list_error: bytes | None = None,
    git_dir_changes: bytes | None = None,
) -> Run:
    """A :class:`Run` from the bytes of its files (None: the file does not exist). InputError naming
    ``source/<file>`` for anything a run folder would be refused for."""
    base = Path(source)
    record = parse_run_record(run_json, base / RUN_NAME) if run_json is not None else None
    grade = parse_grade(grade_json, base / GRADE_NAME)
    changes: list[FileChange] = []
    diff_text: str | None = None
    unreadable_patch: str | None = None
    if diff is not None:
        try:
            changes = parse_diff(diff, str(base / DIFF_NAME))
        except InputError as exc:
            if record is None or not record.from_swe_bench:
                raise
            unreadable_patch = f"{exc.field}: {exc.message}" if exc.field else exc.message
        # Bytes that are not UTF-8 are the agent's: shown to the judge as \xNN, never a reason to stop.
        diff_text = decode_diff(diff)
    ignored = IgnoredCreated()
    if ignored_created is not None:
        ignored = shown_ignored(parse_ignored_created(ignored_created, base / IGNORED_CREATED_NAME))
    error_text: str | None = None
    if tests_list_error is not None:
        if tests_list is not None:
            raise InputError(
                base / TESTS_LIST_ERROR_NAME,
                f"beside {TESTS_LIST_NAME}: a capture writes one of the two, never both",
            )
        error_text = listing_error_text(tests_list_error, base / TESTS_LIST_ERROR_NAME)
    git_dir: list[str] | None = None
    if git_dir_changes is not None:
        paths = parse_path_list(git_dir_changes, base / GIT_DIR_CHANGES_NAME)
        git_dir = [path_text(os.fsencode(p)) for p in paths]
    return Run(
        source=str(source),
        record=record,
        grade=grade,
        diff_text=diff_text,
        changes=changes,
        ignored=ignored,
        tests_list=parse_test_list(tests_list, base / TESTS_LIST_NAME) if tests_list is not None else None,
        tests_list_error=error_text,
        git_dir_changes=git_dir,
        unreadable_patch=unreadable_patch,
        not_measured=harness_infra_failure(record, grade),
    )


def _present(path: Path) -> bool:
    # A dangling symlink is there (read_input_bytes refuses it), not absent.
    return path.exists() or path.is_symlink()


def _optional(path: Path, max_bytes: int | None = None) -> bytes | None:
    if not _present(path):
        return None
    return read_input_bytes(path) if max_bytes is None else read_input_bytes(path, max_bytes)


def read_run(run_dir: Path) -> Run:
    """A run folder as a :class:`Run`, each file read once; grade.json is required, the rest optional.
    InputError naming the file on any problem."""
    if not run_dir.is_dir():
        raise InputError(run_dir, "not a directory")
    diff_path = run_dir / DIFF_NAME
    return make_run(
        run_dir,
        run_json=_optional(run_dir / RUN_NAME),
        grade_json=read_input_bytes(run_dir / GRADE_NAME),
        diff=read_diff_bytes(diff_path) if _present(diff_path) else None,
        ignored_created=_optional(run_dir / IGNORED_CREATED_NAME)
        if (run_dir / IGNORED_CREATED_NAME).exists()
        else None,
        tests_list=_optional(run_dir / TESTS_LIST_NAME),
        tests_list_error=_optional(run_dir / TESTS_LIST_ERROR_NAME, LISTING_ERROR_MAX_BYTES),
        git_dir_changes=_optional(run_dir / GIT_DIR_CHANGES_NAME)
        if (run_dir / GIT_DIR_CHANGES_NAME).exists()
        else None,
    )


def posed_for(task: TaskSpec, run: Run) -> TaskSpec:
    """The task as the run's agent was given it: run.json's ``prompt_style`` picks the prompt (§8); a run
    without run.json, or whose run.json does not say, gets task.json's. InputError naming run.json's
    prompt_style when the task does not carry that variant."""
    if run.record is None:
        return task
    try:
        return task.posed_as(run.record.prompt_style)
    except ValueError as exc:
        raise InputError(run.file(RUN_NAME), str(exc), "prompt_style") from None


class LoadedTask(BaseModel):
    """One task, read once: task.json, its rubric, the manifest's tests block and the task's own files."""

    model_config = ConfigDict(frozen=True)

    task_file: str  # names task.json in errors (the tree judge's base_commit)
    task: TaskSpec
    rubric: Rubric | None  # None: the task has no rubric.json (its runs are not measured)
    rubric_sha256: str | None  # of the rubric.json bytes, as admission keys it
    tests: TestsConfig | None  # the manifest's tests block
    oracle_grade: GradeJson | None = None
    tests_base: list[str] | None = None
    oracle_diff: bytes | None = None  # admission only
    calibration: dict[str, bytes] = {}  # admission only: each calibration diff by its path in rubric.json


def make_task_files(
    source: str | Path,
    *,
    task_json: bytes,
    rubric_json: bytes | None,
    manifest: bytes | None,
    prompt_md: bytes | None = None,
    oracle_grade: bytes | None = None,
    tests_base: bytes | None = None,
    oracle_diff: bytes | None = None,
    calibration: Mapping[str, bytes] | None = None,
    task_file: str | Path | None = None,
    rubric_file: str | Path | None = None,
    manifest_file: str | Path | None = None,
) -> LoadedTask:
    """A :class:`LoadedTask` from the bytes of its files (None: the file does not exist). With
    ``calibration`` (admission), every diff rubric.json's calibration names must be among them.
    InputError naming ``source/<file>`` (or the ``*_file`` given) on any problem."""
    base = Path(source)
    task_path = Path(task_file) if task_file is not None else base / TASK_NAME
    task = parse_task(task_json, task_path)
    if task.prompt is None:
        if prompt_md is None:
            raise InputError(
                task_path,
                f"no {task.prompt_style} prompt: give 'prompt', 'prompts.{task.prompt_style}' or a prompt.md "
                "beside task.json",
                "prompt",
            )
        try:
            task = task.model_copy(update={"prompt": prompt_md.decode("utf-8")})
        except UnicodeDecodeError:
            raise InputError(task_path.parent / "prompt.md", "not UTF-8 text") from None
    rubric: Rubric | None = None
    tests: TestsConfig | None = None
    if rubric_json is not None:
        rubric_path = Path(rubric_file) if rubric_file is not None else base / RUBRIC_NAME
        rubric = parse_rubric(parse_json(rubric_json, rubric_path), rubric_path)
        if calibration is not None:
            missing = [
                (field, f"{rel!r} does not exist")
                for field, rel in rubric.calibration.paths()
                if rel not in calibration
            ]
            if missing:
                raise InputErrors(rubric_path, missing)
        # The manifest matters only to a rubric's checks: a task without one is not measured.
        manifest_path = Path(manifest_file) if manifest_file is not None else base / "repo_manifest.yaml"
        if manifest is None:
            raise InputError(manifest_path, "file not found")
        tests = parse_manifest(manifest, manifest_path).tests
    return LoadedTask(
        task_file=str(task_path),
        task=task,
        rubric=rubric,
        rubric_sha256=rubric_sha256(rubric_json) if rubric_json is not None else None,
        tests=tests,
        oracle_grade=parse_grade(oracle_grade, base / ORACLE_GRADE_NAME)
        if oracle_grade is not None
        else None,
        tests_base=parse_test_list(tests_base, base / TESTS_BASE_NAME) if tests_base is not None else None,
        oracle_diff=oracle_diff,
        calibration=dict(calibration or {}),
    )


def _diff_file(path: Path, name: str) -> bytes:
    try:
        # A regular file of bounded size: an oracle.diff symlinked to /dev/zero is refused, not read forever.
        return read_input_bytes(path, MAX_DIFF_BYTES)
    except InputError as exc:
        raise InputError(name, exc.message) from None


def read_task_files(
    task_dir: Path,
    manifest_path: Path,
    *,
    rubric_path: Path | None = None,
    task_json: Path | None = None,
    admission: bool = False,
) -> LoadedTask:
    """A task folder as :class:`LoadedTask`, each file read once.

    ``rubric_path`` and ``task_json`` replace ``task_dir/rubric.json`` and ``task_dir/task.json`` (held-out
    rubrics, §7); with ``rubric_path`` given, or for ``admission``, the rubric must exist. Without a rubric
    nothing else is read (its runs are not measured). ``admission`` reads ``oracle.diff`` and every
    calibration diff, from the rubric's own folder, which must hold them, instead of ``oracle_grade.json``
    and ``tests_base.txt``."""
    task_path = task_json if task_json is not None else task_dir / TASK_NAME
    task_bytes = read_input_bytes(task_path)
    prompt_path = task_path.parent / "prompt.md"
    # prompt.md is read only when task.json leaves the prompt to it (parse_task's prompt None).
    prompt_md = (
        read_input_bytes(prompt_path)
        if parse_task(task_bytes, task_path).prompt is None and prompt_path.exists()
        else None
    )
    rubric_file = rubric_path if rubric_path is not None else task_dir / RUBRIC_NAME
    rubric_bytes: bytes | None = None
    if rubric_path is not None or admission or rubric_file.exists():
        rubric_bytes = read_input_bytes(rubric_file)
    has_rubric = rubric_bytes is not None
    # Admission judges the oracle's and calibration diffs: the oracle's grade and test list are not read.
    graded = has_rubric and not admission
    files = make_task_files(
        task_dir,
        task_json=task_bytes,
        rubric_json=rubric_bytes,
        manifest=read_input_bytes(manifest_path, MAX_MANIFEST_BYTES) if has_rubric else None,
        prompt_md=prompt_md,
        oracle_grade=_optional(task_dir / ORACLE_GRADE_NAME)
        if graded and (task_dir / ORACLE_GRADE_NAME).exists()
        else None,
        tests_base=_optional(task_dir / TESTS_BASE_NAME) if graded else None,
        task_file=task_path,
        rubric_file=rubric_file,
        manifest_file=manifest_path,
    )
    if not admission or files.rubric is None:
        return files
    check_calibration_files(files.rubric, rubric_file)
    oracle = _diff_file(task_dir / ORACLE_DIFF_NAME, ORACLE_DIFF_NAME)
    calibration = {
        rel: _diff_file(rubric_file.parent / rel, rel) for _, rel in files.rubric.calibration.paths()
    }
    return files.model_copy(update={"oracle_diff": oracle, "calibration": calibration})
