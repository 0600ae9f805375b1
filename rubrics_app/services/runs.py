"""Import agent run directories (a folder on disk or an uploaded zip) with their grades and judge verdicts.

A run directory holds ``run.json``, ``grade.json``, ``workspace.diff``, ``ignored_created.txt``, optionally
``tests_list.txt`` (or ``tests_list.error``, why the listing failed in the workspace), optionally
``git_dir_changes.txt`` (the paths under ``.git`` the run changed; without it a sweep leaves the git_dir
integrity part not measured), and ``metrics.json`` once ``rubric grade`` has graded it. Every file is read
through grading's own readers (strict JSON, run.json/grade.json models, the path-list reader, metrics.json's
``RunDetails``), so the app accepts exactly what the command line accepts.

All or nothing, as rubric import: every run is read and checked first; only when none has a problem are
rows written, in one transaction. A run is keyed by (task, arm, model, repetition): importing the same
files again changes nothing, while different files under a key already imported are a problem (a run is a
record of what happened; it is never silently replaced).
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.template.defaultfilters import pluralize

from grading import (
    GIT_DIR_CHANGES_NAME,
    MAX_INPUT_BYTES,
    TESTS_LIST_ERROR_NAME,
    TESTS_LIST_NAME,
    GradeJson,
    InputError,
    InputErrors,
    JudgeResult,
    RunRecord,
    StrictMetricsFile,
    listing_error_text,
    make_run,
    parse_grade,
    parse_ignored_created,
    parse_json,
    parse_path_list,
    parse_run_record,
    read_input_bytes,
    read_metrics,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    GradeSource,
    ItemVerdict,
    JudgeGrade,
    JudgeRole,
    Repository,
    Role,
    RubricRevision,
    RunGrade,
    Task,
    lock_current_grades,
    refresh_current_grades,
)
from rubrics_app.services.import_export import (
    ImportFailed,
    ImportProblem,
    _unstorable_text,
    checked_zip_members,
    rubric_json_bytes,
)
from rubrics_app.services.paging import Page, page_of
from rubrics_app.services.report_rows import refresh_report_rows

DIFF_FILE = "workspace.diff"
METRICS_FILE = "metrics.json"
RUN_FILES = (
    "run.json",
    "grade.json",
    "workspace.diff",
    "ignored_created.txt",
    TESTS_LIST_NAME,
    TESTS_LIST_ERROR_NAME,
    GIT_DIR_CHANGES_NAME,
)
REQUIRED_FILES = ("run.json", "grade.json", "workspace.diff", "ignored_created.txt")

MAX_NAME = 200  # AgentRun.arm and .model
MAX_ITEM_ID = 40  # ItemVerdict.item_id, as RubricItem.item_id
MAX_JUDGE_SPEC = 500  # RunGrade.primary_judge, JudgeGrade.judge


def revision_sha256(revision: RubricRevision) -> str:
    """sha256 of the revision's rubric.json as exported: the content a run is graded against.

    ``rubric grade`` run on an exported task directory reads exactly these bytes.
    """
    return hashlib.sha256(rubric_json_bytes(revision)).hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sample_key(*parts: str) -> float:
    """A number in [0, 1) fixed by the pair's identity (not by row ids, which differ between databases)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 2**32


# --- reading ------------------------------------------------------------------------------------------


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


@dataclass
class RunImport:
    """What an import did: runs and grades created, and those already there unchanged."""

    created: list[AgentRun] = field(default_factory=list)
    unchanged: list[AgentRun] = field(default_factory=list)
    grades_created: int = 0
    grades_unchanged: int = 0

    def summary(self) -> str:
        return (
            f"{len(self.created)} run{pluralize(len(self.created))} imported, "
            f"{len(self.unchanged)} already there; "
            f"{self.grades_created} grade{pluralize(self.grades_created)} imported, "
            f"{self.grades_unchanged} already there"
        )


@dataclass(frozen=True)
class RunFiles:
    """One run directory's files, however they arrived (a folder, a zip's members, a SWE-bench prediction):
    the bytes of the small ones by name (metrics.json included), each read once within grading's bound, and
    the diff's sha256 and size (None: no diff), its bytes read again only when the run is stored."""

    label: str  # the run directory as the user named it; every problem names ``label/<file>``
    files: dict[str, bytes]
    diff: tuple[str, int] | None
    read_diff: Callable[[], bytes]


# What is read of a run directory: its files and, once graded, metrics.json; all but the diff kept as bytes.
READ_FILES = (*RUN_FILES, METRICS_FILE)


def _name(label: str, file: str) -> str:
    return posixpath.join(label, file) if label else file


def find_run_dirs(root: Path) -> list[Path]:
    """``root`` itself when it holds a run.json, else every directory below it that does (sorted)."""
    if (root / "run.json").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("run.json") if p.is_file())


def _problem(exc: InputError, label: str) -> list[ImportProblem]:
    if isinstance(exc, InputErrors):
        return [ImportProblem(label, message, path) for path, message in exc.errors]
    return [ImportProblem(label, exc.message, exc.field or "")]


def _inside(path: Path, run_dir: Path) -> bool:
    return path.resolve().is_relative_to(run_dir.resolve())


def _present(path: Path, label: str, problems: list[ImportProblem], required: bool) -> bool:
    if not path.exists() and not path.is_symlink():
        if required:
            problems.append(ImportProblem(label, "file not found"))
        return False
    if not _inside(path, path.parent) or not path.is_file():
        problems.append(ImportProblem(label, "not a regular file inside the run directory (symbolic link?)"))
        return False
    return True


def _chunks_sha256(handle: IO[bytes]) -> tuple[str, int]:
    """sha256 and size of a stream read in chunks: a diff of tens of MB is not held while runs are checked."""
    digest, size = hashlib.sha256(), 0
    while chunk := handle.read(1 << 20):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def read_run_dir(run_dir: Path, label: str, problems: list[ImportProblem]) -> RunFiles | None:
    """A run folder's files as :class:`RunFiles`; None when one could not be read (``problems`` says why)."""
    before = len(problems)
    files: dict[str, bytes] = {}
    diff = None
    for file in READ_FILES:
        path = run_dir / file
        if not _present(path, _name(label, file), problems, required=file in REQUIRED_FILES):
            continue
        try:
            if file == DIFF_FILE:
                with path.open("rb") as handle:
                    diff = _chunks_sha256(handle)
            else:
                files[file] = read_input_bytes(path)
        except OSError as exc:
            problems.append(ImportProblem(_name(label, file), f"cannot read: {exc.strerror}"))
        except InputError as exc:
            problems.extend(_problem(exc, _name(label, file)))
    if len(problems) > before:
        return None
    return RunFiles(label, files, diff, (run_dir / DIFF_FILE).read_bytes)


def read_run_dirs(root: Path, label_root: str, problems: list[ImportProblem]) -> Iterator[RunFiles]:
    """Every run folder under ``root`` (or ``root`` itself), read one at a time; ImportFailed if none."""
    run_dirs = find_run_dirs(root)
    if not run_dirs:
        raise ImportFailed([ImportProblem(label_root, "no run.json found")])
    for run_dir in run_dirs:
        rel = run_dir.relative_to(root).as_posix()
        run = read_run_dir(run_dir, posixpath.join(label_root, rel) if rel != "." else label_root, problems)
        if run is not None:
            yield run


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
        problems.extend(_problem(exc, label))
        return False
    unstorable = _unstorable_text(data)
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
        problems.extend(_problem(exc, label))
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
        return _name(label, file)

    for file in REQUIRED_FILES:
        if (run.diff is None) if file == DIFF_FILE else (file not in raw):
            problems.append(ImportProblem(name(file), "file not found"))
    if len(problems) > before or run.diff is None:
        return None

    def check(file: str, parse: Callable[[bytes, Path], object]) -> bool:
        try:
            parse(raw[file], Path(name(file)))
        except InputError as exc:
            problems.extend(_problem(exc, name(file)))
            return False
        return True

    record = grade = None
    if _check_json(raw["run.json"], name("run.json"), problems):
        try:
            record = parse_run_record(raw["run.json"], Path(name("run.json")))
        except InputError as exc:
            problems.extend(_problem(exc, name("run.json")))
    if _check_json(raw["grade.json"], name("grade.json"), problems):
        try:
            grade = parse_grade(raw["grade.json"], Path(name("grade.json")))
        except InputError as exc:
            problems.extend(_problem(exc, name("grade.json")))
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
            problems.extend(_problem(exc, name(Path(exc.file or "run.json").name)))
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


def _grade_key(run: PreparedRun) -> tuple[str, str]:
    assert run.metrics is not None
    judge = run.metrics.metrics.details.judge
    return (run.metrics.metrics.rubric_sha256 or "", judge.judge if judge is not None else "")


def _check_against_stored(runs: list[PreparedRun], problems: list[ImportProblem]) -> dict[int, AgentRun]:
    """Runs already stored under the same key must be the same files. Returns them by prepared index."""
    stored: dict[int, AgentRun] = {}
    for index, run in enumerate(runs):
        existing = AgentRun.objects.filter(
            task=run.task, arm=run.record.arm, model=run.record.model, repetition=run.record.repetition
        ).first()
        if existing is None:
            continue
        changed = [f for f in RUN_FILES if existing.files_sha256.get(f) != run.files_sha256.get(f)]
        if changed:
            problems.append(
                ImportProblem(
                    posixpath.join(run.label, "run.json") if run.label else "run.json",
                    "a run with this task, arm, model and repetition is already imported with a "
                    f"different {', '.join(changed)}",
                )
            )
            continue
        stored[index] = existing
        if run.metrics is not None:
            rubric_sha, judge = _grade_key(run)
            grade = existing.grades.filter(rubric_sha256=rubric_sha, primary_judge=judge).first()
            if grade is not None and grade.metrics_sha256 != run.metrics.sha256:
                problems.append(
                    ImportProblem(
                        run.metrics.label,
                        "this run already has a different metrics.json for the same rubric and primary judge",
                    )
                )
    return stored


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
            problems.append(ImportProblem(_name(run.label, "run.json"), f"the same run as {seen[run.key]}"))
            continue
        seen[run.key] = run.label
        prepared.append(run)
    if problems:
        raise ImportFailed(problems)
    return prepared


# --- writing ------------------------------------------------------------------------------------------


def _revision_for(task: Task, rubric_sha: str) -> RubricRevision | None:
    if not rubric_sha:
        return None
    for revision in RubricRevision.objects.filter(task=task).order_by("-number"):
        if revision_sha256(revision) == rubric_sha:
            return revision
    return None


def _store_judge(grade: RunGrade, role: str, result: JudgeResult, identity: tuple[str, ...]) -> None:
    judge = JudgeGrade.objects.create(
        grade=grade,
        role=role,
        judge=result.judge,
        scripted=result.scripted,
        model_id=result.model_id or "",
        failure=result.failure or "",
        cost_usd=result.usage.cost_usd,
        cost_known=result.usage.cost_known,
        calls=result.calls,
        cache_hit=result.cache_hit,
        cache_bypass=result.cache_bypass or "",
    )
    previous = result.previous_verdicts or {}
    ItemVerdict.objects.bulk_create(
        ItemVerdict(
            judge=judge,
            item_id=v.item_id,
            kind=v.kind,
            verdict=v.verdict,
            reason=v.reason,
            locations=[loc.model_dump(mode="json") for loc in v.locations],
            model_id=v.model_id or result.model_id or "",
            flagged_inconsistent=v.flagged_inconsistent,
            previous_verdict=previous.get(v.item_id, "") if result.cache_bypass else "",
            sample_key=sample_key(*identity, v.item_id),
        )
        for v in result.verdicts
    )


def store_grade(
    run: AgentRun,
    metrics: StrictMetricsFile,
    raw: dict[str, Any],
    sha256: str,
    source: str,
    *,
    revision: RubricRevision | None = None,
    provisional: bool | None = None,
) -> tuple[RunGrade, bool]:
    """The grade and its verdict rows, or the one already stored under the same key (created: False).

    ``revision`` is the revision graded against when the caller knows it (a sweep), else looked up by the
    rubric content; ``provisional`` the caller's decision, else taken from metrics.json and the revision."""
    details = metrics.details
    rubric_sha = metrics.rubric_sha256 or ""
    primary = details.judge.judge if details.judge is not None else ""
    existing = RunGrade.objects.filter(run=run, rubric_sha256=rubric_sha, primary_judge=primary).first()
    if existing is not None:
        return existing, False
    if revision is None:
        revision = _revision_for(run.task, rubric_sha)
    if provisional is None:
        # metrics.json says provisional: false when the grader's admission store held a passing check of
        # this content with this judge; true only means that store held none. A revision of the same content
        # that this app approved or admitted counts as well, so only then does the revision decide.
        provisional = False if metrics.provisional is False else (revision is None or revision.is_provisional)
    grade = RunGrade.objects.create(
        run=run,
        rubric_sha256=rubric_sha,
        revision=revision,
        primary_judge=primary,
        source=source,
        status=details.status,
        mergeable=metrics.mergeable,
        merge_score=metrics.merge_score,
        grader_failure=metrics.grader_failure,
        judge_failure=metrics.judge_failure,
        provisional=provisional,
        reasons=list(details.reasons),
        metrics=raw,
        metrics_sha256=sha256,
    )
    identity = (run.task.task_id, run.arm, run.model, str(run.repetition), rubric_sha, primary)
    for role, result in ((JudgeRole.PRIMARY, details.judge), (JudgeRole.SECOND, details.second_judge)):
        if result is not None:
            _store_judge(grade, role, result, identity)
    return grade, True


def import_run_dirs(repository: Repository, root: Path, label_root: str, user: Actor) -> RunImport:
    """Every run directory under ``root`` (or ``root`` itself), all or nothing."""
    return _import_runs(
        repository, lambda problems: read_run_dirs(root, label_root, problems), label_root, user
    )


def _import_runs(
    repository: Repository,
    read: Callable[[list[ImportProblem]], Iterable[RunFiles]],
    label_root: str,
    user: Actor,
) -> RunImport:
    """The runs ``read`` gives, one at a time (it adds what it could not read to the problems it is handed),
    all or nothing: a folder (:func:`read_run_dirs`), a zip's members (:func:`read_zip_runs`) or runs built
    in memory (SWE-bench predictions). Nothing is written to disk on the way."""
    user.require(Role.MAINTAINER, repository)
    try:
        return _import_runs_atomic(repository, read, user)
    except IntegrityError:
        # Another import stored one of these runs between our check and our insert: nothing of this one
        # was kept (one transaction), and trying again finds those runs stored.
        message = "another import stored some of these runs at the same time; nothing imported, try again"
        raise ImportFailed([ImportProblem(label_root or "upload", message)]) from None


def _import_runs_atomic(
    repository: Repository, read: Callable[[list[ImportProblem]], Iterable[RunFiles]], user: Actor
) -> RunImport:
    with transaction.atomic():
        lock_current_grades(repository=repository)  # before any grade row: models.lock_current_grades
        problems: list[ImportProblem] = []
        prepared = prepare_runs(repository, read(problems), problems)
        stored = _check_against_stored(prepared, problems)
        if problems:
            raise ImportFailed(problems)
        outcome = RunImport()
        new_grades: list[int] = []
        for index, run in enumerate(prepared):
            agent_run = stored.get(index)
            if agent_run is None:
                agent_run = AgentRun.objects.create(
                    task=run.task,
                    arm=run.record.arm,
                    model=run.record.model,
                    repetition=run.record.repetition,
                    prompt_style=run.record.prompt_style or "",
                    run_json=run.record.model_dump(mode="json", exclude_unset=True),
                    grade_json=run.grade.metrics(),
                    passed=run.grade.passed,
                    ignored_created=run.ignored_created,
                    tests_list=run.tests_list,
                    tests_list_error=run.tests_list_error,
                    git_dir_changes=run.git_dir_changes,
                    diff_sha256=run.files_sha256["workspace.diff"],
                    diff_bytes=run.diff_size,
                    files_sha256=run.files_sha256,
                    source=run.label,
                    imported_by=user.user if getattr(user.user, "is_authenticated", False) else None,
                )
                content = run.read_diff()
                if _sha256(content) != run.files_sha256[DIFF_FILE]:
                    label = _name(run.label, DIFF_FILE)
                    raise ImportFailed([ImportProblem(label, "changed while it was being imported")])
                AgentRunDiff.objects.create(run=agent_run, content=content)
                outcome.created.append(agent_run)
            else:
                outcome.unchanged.append(agent_run)
            if run.metrics is not None:
                grade, created = store_grade(
                    agent_run, run.metrics.metrics, run.metrics.raw, run.metrics.sha256, GradeSource.IMPORTED
                )
                if created:
                    outcome.grades_created += 1
                    new_grades.append(grade.pk)
                else:
                    outcome.grades_unchanged += 1
        # The report's rows of the new grades, in the same transaction: a report never sees a grade
        # without its row; and which grade of each of their runs is current now.
        refresh_report_rows(new_grades)
        if new_grades:
            refresh_current_grades(runs=RunGrade.objects.filter(pk__in=new_grades).values("run_id"))
    return outcome


# --- zip uploads --------------------------------------------------------------------------------------

ZIP_READ_ERRORS = (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError, EOFError)


def zip_member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int, where: str) -> bytes:
    """A member's bytes, read straight from the archive: InputError naming ``where`` when it is larger
    than ``max_bytes`` (as grading's read_input_bytes words it) or cannot be read. ZipExtFile stops at the
    declared size (checked_zip_members bounds each and their total) and checks the CRC, so a lying header
    cannot inflate."""
    if info.file_size > max_bytes:
        raise InputError(where, f"larger than {max_bytes} bytes; refused")
    try:
        with archive.open(info) as handle:
            return handle.read(max_bytes + 1)
    except ZIP_READ_ERRORS as exc:
        raise InputError(where, f"cannot read: {exc}") from None


def zip_files(members: list[zipfile.ZipInfo], label: str) -> dict[str, zipfile.ZipInfo]:
    """The archive's files (not its folders) by their normalised path in the zip, read as a folder would
    be: ImportFailed naming every member under a path that is a file (``run.json/x`` beside ``run.json``)."""
    files = {posixpath.normpath(i.filename): i for i in members if not i.is_dir()}
    problems = [
        ImportProblem(f"{label}: {name}", f"under {parent}, a file of the archive, not a folder")
        for name in files
        for parent in _parents(name)
        if parent in files
    ]
    if problems:
        raise ImportFailed(problems)
    return files


def _parents(path: str) -> Iterator[str]:
    while (path := posixpath.dirname(path)) not in ("", "/"):
        yield path


def read_zip_runs(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], label: str, problems: list[ImportProblem]
) -> Iterator[RunFiles]:
    """The run directories among a zip's members (as :func:`find_run_dirs`: the top when it holds a
    run.json, else every directory that does), read from the archive one at a time; every file is named by
    its path in the zip. The diff is hashed in chunks here and read again only when its run is stored."""
    files = zip_files(members, label)
    if "run.json" in files:
        run_dirs = [""]
    else:
        run_dirs = sorted(posixpath.dirname(n) for n in files if posixpath.basename(n) == "run.json")
    if not run_dirs:
        raise ImportFailed([ImportProblem(label, "no run.json found")])
    for run_dir in run_dirs:
        before = len(problems)
        raw: dict[str, bytes] = {}
        diff = None
        diff_info = files.get(_name(run_dir, DIFF_FILE))
        for file in READ_FILES:
            info = files.get(_name(run_dir, file))
            if info is None:
                continue
            where = _name(run_dir, file)
            try:
                if file == DIFF_FILE:
                    with archive.open(info) as handle:
                        diff = _chunks_sha256(handle)
                else:
                    raw[file] = zip_member_bytes(archive, info, MAX_INPUT_BYTES, where)
            except ZIP_READ_ERRORS as exc:
                problems.append(ImportProblem(where, f"cannot read: {exc}"))
            except InputError as exc:
                problems.extend(_problem(exc, where))
        if len(problems) == before:
            read_diff = functools.partial(archive.read, diff_info) if diff_info is not None else bytes
            yield RunFiles(run_dir, raw, diff, read_diff)


def import_runs_zip(repository: Repository, uploaded: IO[bytes] | Any, user: Actor) -> RunImport:
    """A zip of run directories (any layout: every directory holding a run.json is a run), read from the
    archive as it is: nothing is unpacked to disk."""
    user.require(Role.MAINTAINER, repository)
    label = Path(str(getattr(uploaded, "name", "") or "upload.zip")).name
    limit = settings.RUNS_UPLOAD_MAX_BYTES
    size = getattr(uploaded, "size", None)
    if isinstance(size, int) and size > limit:
        raise ImportFailed([ImportProblem(label, f"upload is {size} bytes; the limit is {limit}")])
    if hasattr(uploaded, "seek"):
        uploaded.seek(0)
    try:
        archive = zipfile.ZipFile(uploaded)
    except (zipfile.BadZipFile, OSError):
        raise ImportFailed([ImportProblem(label, "not a zip file")]) from None
    with archive:
        members = checked_zip_members(
            archive,
            label,
            max_members=settings.RUNS_ZIP_MAX_MEMBERS,
            max_total=settings.RUNS_ZIP_MAX_UNCOMPRESSED_BYTES,
        )
        return _import_runs(
            repository, lambda problems: read_zip_runs(archive, members, label, problems), "", user
        )


# --- what the repository page shows ---------------------------------------------------------------------


def repository_runs_summary(repository: Repository) -> dict[str, Any]:
    """Runs per task (counted, never loading a diff), queue sizes, and the tasks whose admitted revision
    needs re-review. Runs are counted once each, however many grades they have; graded: the runs with a
    grade, so with a current one (``RunGrade.objects.current()``: a run with any grade has one)."""
    from django.db.models import Count, Q

    from rubrics_app.models import RevisionStatus
    from rubrics_app.services.queue import disagreement_counts
    from rubrics_app.services.rereview import needs_re_review

    per_task = list(
        AgentRun.objects.filter(task__repository=repository)
        .values("task_id", "task__task_id")
        .annotate(
            runs=Count("pk", distinct=True),
            graded=Count("pk", distinct=True, filter=Q(grades__isnull=False)),
        )
        .order_by("task__task_id")
    )
    admitted = dict(
        RubricRevision.objects.filter(
            task__repository=repository, status=RevisionStatus.ADMITTED
        ).values_list("pk", "task_id")
    )
    flagged = needs_re_review(admitted)
    return {
        "runs_per_task": per_task,
        "runs_total": sum(row["runs"] for row in per_task),
        "queue_counts": disagreement_counts(repository) if per_task else {},
        "re_review_task_ids": {admitted[pk] for pk in flagged},
    }


def task_runs(task: Task, number: int, size: int) -> Page[AgentRun]:
    """Page ``number`` of the task's runs for a list (services.paging, as the review queue pages), each once
    with its current grade (``current_grades``, a list of none or one) and how many grades it has
    (``grade_count``; the others are on the run's page). Only the page's runs are read, the diff table
    never, and each grade's metrics.json copy is left unloaded."""
    from django.db.models import Count, Prefetch

    current = RunGrade.objects.current().defer("metrics").select_related("revision")
    runs = AgentRun.objects.filter(task=task)
    rows = (
        runs.defer(
            "run_json", "grade_json", "ignored_created", "tests_list", "tests_list_error", "git_dir_changes"
        )
        .annotate(grade_count=Count("grades"))
        .prefetch_related(Prefetch("grades", queryset=current, to_attr="current_grades"))
        .order_by("arm", "model", "repetition", "pk")
    )
    return page_of(rows, number, size, runs.count())


def run_grades(run: AgentRun) -> list[RunGrade]:
    """The run's grades for its page: the current one first, then the older ones newest first, each with
    the revision it was graded against (its items' text) and its judges' verdicts."""
    current = RunGrade.objects.filter(run=run).current().values_list("pk", flat=True).first()
    grades = list(
        RunGrade.objects.filter(run=run)
        .select_related("revision")
        .prefetch_related("judges__verdicts", "revision__items")
        .order_by("-pk")
    )
    return sorted(grades, key=lambda grade: grade.pk != current)
