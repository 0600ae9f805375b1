"""Check a run directory's bytes (:class:`~rubrics_app.services.runs.files.RunFiles`) into a prepared run.

Every file is checked through grading's own readers (strict JSON, run.json/grade.json models, the path-list
reader, metrics.json's ``RunDetails``) and then with ``make_run`` itself, so the app accepts exactly what the
command line accepts and a run it stores is one a sweep reads back. Also checked: what the database columns
can hold (lengths, the run's own path among them, NUL characters), the task named in run.json, and that no
run is given twice. Nothing is written here: :mod:`rubrics_app.services.runs.store` stores what passes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading import (
    GIT_DIR_CHANGES_NAME,
    TESTS_LIST_ERROR_NAME,
    TESTS_LIST_NAME,
    GradeJson,
    InputError,
    RunRecord,
    StrictMetricsFile,
    listing_error_text,
    make_run,
    parse_grade,
    parse_ignored_created,
    parse_json,
    parse_path_list,
    parse_run_record,
    read_metrics,
)
from rubrics_app.models import MAX_RUN_SOURCE, Repository, Task
from rubrics_app.services.rubrics.files import ImportFailed, ImportProblem
from rubrics_app.services.rubrics.imports import unstorable_text
from rubrics_app.services.runs.files import (
    DIFF_FILE,
    METRICS_FILE,
    REQUIRED_FILES,
    RUN_FILES,
    RunFiles,
    input_problems,
    member_label,
)

MAX_NAME = 200  # AgentRun.arm and .model
MAX_ITEM_ID = 40  # ItemVerdict.item_id, as RubricItem.item_id
MAX_JUDGE_SPEC = 500  # RunGrade.primary_judge, JudgeGrade.judge


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class PreparedGrade:
    metrics: StrictMetricsFile
    raw: dict[str, Any]
    sha256: str
    label: str


@dataclass
class PreparedRun:
    label: str  # the run directory as the user named it
    task: Task
    record: RunRecord
    grade: GradeJson
    read_diff: Callable[[], bytes]  # read again only when the run is stored
    diff_size: int
    ignored_created: str
    tests_list: str | None
    tests_list_error: str | None
    git_dir_changes: str | None
    files_sha256: dict[str, str]
    metrics: PreparedGrade | None = None

    @property
    def key(self) -> tuple[int, str, str, int]:
        return (self.task.pk, self.record.arm, self.record.model, self.record.repetition)


def _text(raw: bytes, label: str, problems: list[ImportProblem]) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(ImportProblem(label, f"not UTF-8 text (byte {exc.start})"))
        return None
    if "\x00" in text:
        problems.append(ImportProblem(label, "holds a NUL character"))
        return None
    return text


def _check_json(raw: bytes, label: str, problems: list[ImportProblem]) -> bool:
    """The JSON file's bytes hold only what the database can store (grading's readers check the rest)."""
    try:
        data = parse_json(raw, label)
    except InputError as exc:
        problems.extend(input_problems(exc, label))
        return False
    unstorable = unstorable_text(data)
    problems.extend(ImportProblem(label, message, where) for where, message in unstorable)
    return not unstorable


def _prepare_metrics(
    raw: bytes, label: str, grade: GradeJson, problems: list[ImportProblem]
) -> PreparedGrade | None:
    before = len(problems)
    if not _check_json(raw, label, problems):  # every check below is of these bytes, read once
        return None
    try:
        # The same reader as ``rubric report``, read whole (strict): the format, the outcome consistent with
        # details.status, the details as the grader's RunDetails and the rubric's hash a sha256.
        metrics = read_metrics(raw, label, strict=True)
    except InputError as exc:
        problems.extend(input_problems(exc, label))
        return None
    data = parse_json(raw, label)
    # The grade.json metrics are copied into metrics.json unchanged: a metrics.json of another run differs.
    for key, value in grade.metrics().items():
        if key in data and data[key] != value:
            problems.append(ImportProblem(label, "differs from the run's grade.json", key))
        elif key not in data:
            problems.append(ImportProblem(label, "grade.json reports it; metrics.json does not", key))
    for role, result in (("judge", metrics.details.judge), ("second_judge", metrics.details.second_judge)):
        if result is None:
            continue
        longest = MAX_ITEM_ID
        for index, verdict in enumerate(result.verdicts):
            if len(verdict.item_id) > longest:
                where = f"details.{role}.verdicts[{index}].item_id"
                problems.append(ImportProblem(label, f"an item id is at most {longest} characters", where))
        if len(result.judge) > MAX_JUDGE_SPEC:
            problems.append(
                ImportProblem(label, f"at most {MAX_JUDGE_SPEC} characters", f"details.{role}.judge")
            )
        if len(result.model_id or "") > MAX_NAME or any(
            len(v.model_id or "") > MAX_NAME for v in result.verdicts
        ):
            problems.append(
                ImportProblem(label, f"a model id is at most {MAX_NAME} characters", f"details.{role}")
            )
        if len({v.item_id for v in result.verdicts}) != len(result.verdicts):
            problems.append(ImportProblem(label, "more than one verdict for an item", f"details.{role}"))
    if len(problems) > before:
        return None
    return PreparedGrade(metrics, data, _sha256(raw), label)


def _prepare_run(run: RunFiles, tasks: dict[str, Task], problems: list[ImportProblem]) -> PreparedRun | None:
    """The run's files checked from their bytes, each by grading's own parser for it: a run stored here is
    one a sweep can read back (grading.make_run)."""
    before = len(problems)
    if not _files_present(run, problems) or run.diff is None:
        return None
    label, raw = run.label, run.files
    record = _parsed(run, "run.json", parse_run_record, problems)
    grade = _parsed(run, "grade.json", parse_grade, problems)
    texts = _side_texts(run, problems)
    if len(problems) == before and record is not None and grade is not None:
        _check_whole_run(run, problems)
    task = None
    if record is not None:
        task = _record_task(record, tasks, member_label(label, "run.json"), problems)
    metrics = None
    if grade is not None and METRICS_FILE in raw:
        metrics = _prepare_metrics(raw[METRICS_FILE], member_label(label, METRICS_FILE), grade, problems)
    if len(problems) > before or record is None or grade is None or task is None or texts.ignored is None:
        return None
    return PreparedRun(
        label=label,
        task=task,
        record=record,
        grade=grade,
        read_diff=run.read_diff,
        diff_size=run.diff[1],
        ignored_created=texts.ignored,
        tests_list=texts.tests_list,
        tests_list_error=texts.tests_list_error,
        git_dir_changes=texts.git_dir_changes,
        files_sha256={
            **{f: _sha256(raw[f]) for f in RUN_FILES if f in raw},
            DIFF_FILE: run.diff[0],
        },
        metrics=metrics,
    )


def _files_present(run: RunFiles, problems: list[ImportProblem]) -> bool:
    """The run's path fits its column and every required file is there (a problem for each that is not)."""
    before = len(problems)
    if len(run.label) > MAX_RUN_SOURCE:  # stored as the run's source: checked here, alike on every database
        too_long = f"the run's path is {len(run.label)} characters; at most {MAX_RUN_SOURCE} can be stored"
        problems.append(ImportProblem(run.label, too_long))
    for file in REQUIRED_FILES:
        if (run.diff is None) if file == DIFF_FILE else (file not in run.files):
            problems.append(ImportProblem(member_label(run.label, file), "file not found"))
    return len(problems) == before


def _parses(
    run: RunFiles, file: str, parse: Callable[[bytes, Path], object], problems: list[ImportProblem]
) -> bool:
    """Whether grading's parser reads ``file``; its problems where it does not."""
    name = member_label(run.label, file)
    try:
        parse(run.files[file], Path(name))
    except InputError as exc:
        problems.extend(input_problems(exc, name))
        return False
    return True


def _parsed[T](
    run: RunFiles, file: str, parse: Callable[[bytes, Path], T], problems: list[ImportProblem]
) -> T | None:
    """The JSON ``file`` (run.json, grade.json) as its model, or None with its problems."""
    name = member_label(run.label, file)
    if not _check_json(run.files[file], name, problems):
        return None
    try:
        return parse(run.files[file], Path(name))
    except InputError as exc:
        problems.extend(input_problems(exc, name))
        return None


@dataclass(frozen=True)
class _SideTexts:
    ignored: str | None
    tests_list: str | None
    tests_list_error: str | None
    git_dir_changes: str | None


def _side_texts(run: RunFiles, problems: list[ImportProblem]) -> _SideTexts:
    """The run's text files (ignored_created.txt, and the test listing and .git changes where given), each
    checked by its parser and decoded; None for one that is absent or does not decode."""
    raw = run.files

    def text(file: str) -> str | None:
        return _text(raw[file], member_label(run.label, file), problems)

    _parses(run, "ignored_created.txt", parse_ignored_created, problems)
    ignored = text("ignored_created.txt")
    tests_list = tests_list_error = git_dir_changes = None
    if TESTS_LIST_NAME in raw:
        tests_list = text(TESTS_LIST_NAME)
    if TESTS_LIST_ERROR_NAME in raw:
        _parses(run, TESTS_LIST_ERROR_NAME, listing_error_text, problems)  # capped at 32 KiB
        tests_list_error = text(TESTS_LIST_ERROR_NAME)
    if GIT_DIR_CHANGES_NAME in raw and _parses(run, GIT_DIR_CHANGES_NAME, parse_path_list, problems):
        git_dir_changes = text(GIT_DIR_CHANGES_NAME)
    return _SideTexts(ignored, tests_list, tests_list_error, git_dir_changes)


def _check_whole_run(run: RunFiles, problems: list[ImportProblem]) -> None:
    """What no one file says (tests_list.error beside tests_list.txt), as a sweep reads the stored run."""
    raw = run.files
    try:
        make_run(
            run.label,
            run_json=raw["run.json"],
            grade_json=raw["grade.json"],
            diff=None,
            ignored_created=raw["ignored_created.txt"],
            tests_list=raw.get(TESTS_LIST_NAME),
            tests_list_error=raw.get(TESTS_LIST_ERROR_NAME),
            git_dir_changes=raw.get(GIT_DIR_CHANGES_NAME),
        )
    except InputError as exc:
        problems.extend(input_problems(exc, member_label(run.label, Path(exc.file or "run.json").name)))


def _record_task(
    record: RunRecord, tasks: dict[str, Task], name: str, problems: list[ImportProblem]
) -> Task | None:
    """The task run.json (``name``) names, and its arm and model checked against their columns."""
    task = tasks.get(record.task)
    if task is None:
        problems.append(ImportProblem(name, f"no task {record.task!r} in this repository", "task"))
    for key in ("arm", "model"):
        if len(getattr(record, key)) > MAX_NAME:
            problems.append(ImportProblem(name, f"at most {MAX_NAME} characters", key))
    return task


def prepare_runs(
    repository: Repository, runs: Iterable[RunFiles], problems: list[ImportProblem]
) -> list[PreparedRun]:
    """Check every run of ``runs`` (read one at a time); ImportFailed lists every problem, those ``problems``
    (where ``runs`` reports what it could not read) included."""
    tasks = {t.task_id: t for t in Task.objects.filter(repository=repository)}
    prepared: list[PreparedRun] = []
    seen: dict[tuple[int, str, str, int], str] = {}
    for files in runs:
        run = _prepare_run(files, tasks, problems)
        if run is None:
            continue
        if run.key in seen:
            problems.append(
                ImportProblem(member_label(run.label, "run.json"), f"the same run as {seen[run.key]}")
            )
            continue
        seen[run.key] = run.label
        prepared.append(run)
    if problems:
        raise ImportFailed(problems)
    return prepared
