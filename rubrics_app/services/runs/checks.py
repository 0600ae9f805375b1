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
    label, raw = run.label, run.files

    def name(file: str) -> str:
        return member_label(label, file)

    if len(label) > MAX_RUN_SOURCE:  # stored as the run's source: checked here, alike on every database
        too_long = f"the run's path is {len(label)} characters; at most {MAX_RUN_SOURCE} can be stored"
        problems.append(ImportProblem(label, too_long))
    for file in REQUIRED_FILES:
        if (run.diff is None) if file == DIFF_FILE else (file not in raw):
            problems.append(ImportProblem(name(file), "file not found"))
    if len(problems) > before or run.diff is None:
        return None

    def check(file: str, parse: Callable[[bytes, Path], object]) -> bool:
        try:
            parse(raw[file], Path(name(file)))
        except InputError as exc:
            problems.extend(input_problems(exc, name(file)))
            return False
        return True

    record = grade = None
    if _check_json(raw["run.json"], name("run.json"), problems):
        try:
            record = parse_run_record(raw["run.json"], Path(name("run.json")))
        except InputError as exc:
            problems.extend(input_problems(exc, name("run.json")))
    if _check_json(raw["grade.json"], name("grade.json"), problems):
        try:
            grade = parse_grade(raw["grade.json"], Path(name("grade.json")))
        except InputError as exc:
            problems.extend(input_problems(exc, name("grade.json")))
    check("ignored_created.txt", parse_ignored_created)
    ignored = _text(raw["ignored_created.txt"], name("ignored_created.txt"), problems)
    tests_list = tests_list_error = None
    if TESTS_LIST_NAME in raw:
        tests_list = _text(raw[TESTS_LIST_NAME], name(TESTS_LIST_NAME), problems)
    if TESTS_LIST_ERROR_NAME in raw:
        check(TESTS_LIST_ERROR_NAME, listing_error_text)  # capped at 32 KiB
        tests_list_error = _text(raw[TESTS_LIST_ERROR_NAME], name(TESTS_LIST_ERROR_NAME), problems)
    git_dir_changes = None
    if GIT_DIR_CHANGES_NAME in raw and check(GIT_DIR_CHANGES_NAME, parse_path_list):
        git_dir_changes = _text(raw[GIT_DIR_CHANGES_NAME], name(GIT_DIR_CHANGES_NAME), problems)
    if len(problems) == before and record is not None and grade is not None:
        # What no one file says (tests_list.error beside tests_list.txt), as a sweep reads the stored run.
        try:
            make_run(
                label,
                run_json=raw["run.json"],
                grade_json=raw["grade.json"],
                diff=None,
                ignored_created=raw["ignored_created.txt"],
                tests_list=raw.get(TESTS_LIST_NAME),
                tests_list_error=raw.get(TESTS_LIST_ERROR_NAME),
                git_dir_changes=raw.get(GIT_DIR_CHANGES_NAME),
            )
        except InputError as exc:
            problems.extend(input_problems(exc, name(Path(exc.file or "run.json").name)))
    task = None
    if record is not None:
        task = tasks.get(record.task)
        if task is None:
            problems.append(
                ImportProblem(name("run.json"), f"no task {record.task!r} in this repository", "task")
            )
        for key in ("arm", "model"):
            if len(getattr(record, key)) > MAX_NAME:
                problems.append(ImportProblem(name("run.json"), f"at most {MAX_NAME} characters", key))
    metrics = None
    if grade is not None and METRICS_FILE in raw:
        metrics = _prepare_metrics(raw[METRICS_FILE], name(METRICS_FILE), grade, problems)
    if len(problems) > before or record is None or grade is None or task is None or ignored is None:
        return None
    return PreparedRun(
        label=label,
        task=task,
        record=record,
        grade=grade,
        read_diff=run.read_diff,
        diff_size=run.diff[1],
        ignored_created=ignored,
        tests_list=tests_list,
        tests_list_error=tests_list_error,
        git_dir_changes=git_dir_changes,
        files_sha256={
            **{f: _sha256(raw[f]) for f in RUN_FILES if f in raw},
            DIFF_FILE: run.diff[0],
        },
        metrics=metrics,
    )


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
