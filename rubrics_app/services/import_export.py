"""Import rubric.json files (an uploaded zip or a repository checkout) as draft revisions, and export admitted
revisions as rubric.json, as a zip, or into a checkout.

Import is all-or-nothing: every file is read and validated first, and only when none has a problem are the
revisions created, in one transaction. Export reads only admitted revisions and writes each file atomically
(temp file + os.replace) under ``tasks/<task-id>/``, touching no other file.
"""

from __future__ import annotations

import io
import posixpath
import re
import stat
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from grading import (
    NO_COMMANDS_CONFIG,
    Git,
    GitError,
    InputError,
    InputErrors,
    Rubric,
    TaskSpec,
    commit_on_new_branch,
    load_manifest,
    parse_json,
    parse_rubric,
    validation_messages,
    write_atomic,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    ITEM_ID_RE,
    TASK_FILES,
    AuditVerb,
    CalibrationDiff,
    ExportResult,
    Job,
    JobKind,
    Origin,
    Repository,
    ReviewState,
    RevisionStatus,
    Role,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services import audit
from rubrics_app.services.jobs import JobFailed, job_task, run
from rubrics_app.services.revisions import create_revision

# --- problems -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportProblem:
    file: str  # the file inside the zip or checkout, e.g. "tasks/fix_x/rubric.json"
    message: str
    path: str = ""  # JSON path inside it, e.g. "blockers[1].evidence"

    def __str__(self) -> str:
        return ": ".join(p for p in (self.file, self.path, self.message) if p)


class ImportFailed(Exception):
    """Nothing was imported; ``problems`` lists every file with its errors."""

    def __init__(self, problems: list[ImportProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


class ExportError(JobFailed):
    pass


# --- reading task directories ---------------------------------------------------------------------


@dataclass
class TaskFiles:
    """The files of one task directory as bytes, wherever they came from (zip or checkout)."""

    directory: str  # "tasks/fix_x" or "" for a zip with rubric.json at its root
    rubric: bytes
    task_json: bytes | None = None
    prompt_md: bytes | None = None
    files: dict[str, bytes] = field(default_factory=dict)  # every other file, by path relative to `directory`

    def label(self, name: str) -> str:
        return posixpath.join(self.directory, name) if self.directory else name


@dataclass
class PreparedTask:
    files: TaskFiles
    rubric: Rubric
    spec: TaskSpec | None
    calibration: dict[str, bytes]
    task_files: dict[str, bytes] = field(default_factory=dict)  # by name in TASK_FILES


def _decode_json(raw: bytes, label: str, problems: list[ImportProblem]) -> Any:
    # grading's strict reader, as `rubric validate` reads files: no duplicate keys, NaN or 1e400.
    try:
        return parse_json(raw, label)
    except InputError as exc:
        problems.append(ImportProblem(label, exc.message, exc.field or ""))
    return None


# SQLite's JSON functions (a JSONField's CHECK constraint) refuse nesting deeper than 1000 levels; a
# task.json or rubric.json needs a handful.
MAX_JSON_DEPTH = 100


def _unstorable_text(value: Any) -> list[tuple[str, str]]:
    """(JSON path, problem) for every string the database cannot store (PostgreSQL text refuses NUL, and a
    lone surrogate, which JSON's \\uD800 escapes can produce, is not UTF-8 for either database) and for
    nesting deeper than MAX_JSON_DEPTH."""
    out: list[tuple[str, str]] = []
    # A loop, not recursion: json.loads accepts nesting far deeper than Python's recursion limit. Children
    # go on the stack last-first, so problems come out in the order of the document.
    stack: list[tuple[str, Any, str | None, int]] = [("", value, None, 0)]  # (path, value, its key, depth)
    while stack:
        path, current, key, depth = stack.pop()
        if key is not None:
            out.extend((path, f"key {problem}") for problem in _string_problems(key))
        if isinstance(current, str):
            out.extend((path, problem) for problem in _string_problems(current))
        elif isinstance(current, (dict, list)) and depth >= MAX_JSON_DEPTH:
            where = path if len(path) < 80 else f"{path[:40]}..."
            out.append((where, f"nested more than {MAX_JSON_DEPTH} levels deep"))
        elif isinstance(current, dict):
            for name, item in reversed(current.items()):
                # The path is shown in a page: a bad key is spelled with escapes, never sent as it is.
                shown = str(name).encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")
                stack.append((f"{path}.{shown}" if path else shown, item, str(name), depth + 1))
        elif isinstance(current, list):
            stack.extend(
                (f"{path}[{index}]", item, None, depth + 1)
                for index, item in reversed(list(enumerate(current)))
            )
    return out


def _string_problems(text: str) -> list[str]:
    problems = []
    if "\x00" in text:
        problems.append("holds a NUL character (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        problems.append("holds a lone surrogate (a \\uD800-\\uDFFF escape): not UTF-8 text")
    return problems


def _limit_problems(rubric: Rubric, label: str) -> list[ImportProblem]:
    """What grading.schema accepts but a column of this app cannot hold."""
    problems: list[ImportProblem] = []
    _, high = connection.ops.integer_field_range("PositiveIntegerField")
    for name in ("max_changed_lines", "max_files"):
        value = getattr(rubric.scope, name)
        if value is not None and high is not None and value > high:
            message = f"{value} is more than this app stores ({high})"
            problems.append(ImportProblem(label, message, f"scope.{name}"))
    longest = CalibrationDiff._meta.get_field("path").max_length or 0
    for json_path, rel in rubric.calibration.paths():
        if len(rel) > longest:
            message = f"a calibration path is at most {longest} characters"
            problems.append(ImportProblem(label, message, json_path))
    return problems


def _task_problems(fields: dict[str, Any], task_id: str, label: str) -> list[ImportProblem]:
    """task.json values the Task row refuses (too long, not a URL...), as problems rather than a crash."""
    try:
        Task(task_id=task_id, **fields).full_clean(exclude=["repository"], validate_unique=False)
    except ValidationError as exc:
        return [
            ImportProblem(label, message, "" if name == NON_FIELD_ERRORS else name)
            for name, messages in exc.message_dict.items()
            for message in messages
        ]
    return []


def _prepare(task_files: TaskFiles, problems: list[ImportProblem]) -> PreparedTask | None:
    label = task_files.label("rubric.json")
    data = _decode_json(task_files.rubric, label, problems)
    if data is None:
        return None
    unstorable = _unstorable_text(data)
    if unstorable:
        problems.extend(ImportProblem(label, message, path) for path, message in unstorable)
        return None
    try:
        rubric = parse_rubric(data, label)
    except InputErrors as exc:
        problems.extend(ImportProblem(label, message, path) for path, message in exc.errors)
        return None
    except InputError as exc:
        problems.append(ImportProblem(label, exc.message, exc.field or ""))
        return None
    if not re.fullmatch(ITEM_ID_RE, rubric.task) or len(rubric.task) > 200:
        # The task id becomes a directory name on export: no '/', no '..'.
        problems.append(ImportProblem(label, "a task id is letters, digits, '.', '_' and '-'", "task"))
        return None
    expected = PurePosixPath(task_files.directory).name if task_files.directory.startswith("tasks/") else None
    problems.extend(_limit_problems(rubric, label))
    if expected is not None and rubric.task != expected:
        problems.append(
            ImportProblem(label, f"task {rubric.task!r} is not the directory's name {expected!r}", "task")
        )
    calibration: dict[str, bytes] = {}
    seen_paths: set[tuple[str, str]] = set()
    for json_path, rel in rubric.calibration.paths():
        kind = json_path.split("[")[0]
        if (kind, posixpath.normpath(rel)) in seen_paths:
            problems.append(ImportProblem(label, f"{rel!r} is listed twice", json_path))
        seen_paths.add((kind, posixpath.normpath(rel)))
        key = posixpath.normpath(rel)
        if key not in task_files.files:
            problems.append(ImportProblem(label, f"{rel!r} is not in the upload", json_path))
        else:
            calibration[rel] = task_files.files[key]
    spec = None
    if task_files.task_json is not None:
        spec_label = task_files.label("task.json")
        spec_data = _decode_json(task_files.task_json, spec_label, problems)
        if spec_data is not None and not isinstance(spec_data, dict):
            problems.append(ImportProblem(spec_label, "task.json is a JSON object"))
        elif spec_data is not None and (unstorable := _unstorable_text(spec_data)):
            problems.extend(ImportProblem(spec_label, message, path) for path, message in unstorable)
        elif spec_data is not None:
            try:
                spec = TaskSpec.model_validate(spec_data)
            except PydanticValidationError as exc:
                # As `rubric` reports task.json: each problem with its JSON path (prompts.spec, ...).
                problems.extend(
                    ImportProblem(spec_label, p.message, p.path) for p in validation_messages(exc)
                )
            else:
                if spec.id != rubric.task:
                    problems.append(
                        ImportProblem(spec_label, f"id {spec.id!r} is not the rubric's task", "id")
                    )
                if spec.prompt is None and task_files.prompt_md is not None:
                    try:
                        prompt = task_files.prompt_md.decode("utf-8")
                    except UnicodeDecodeError:
                        problems.append(ImportProblem(task_files.label("prompt.md"), "not UTF-8 text"))
                    else:
                        if "\x00" in prompt:
                            problems.append(
                                ImportProblem(task_files.label("prompt.md"), "holds a NUL character")
                            )
                        spec = spec.model_copy(update={"prompt": prompt})
                problems.extend(_task_problems(_task_fields(spec), rubric.task, spec_label))
    own_files = {name: task_files.files[name] for name in TASK_FILES if name in task_files.files}
    problems.extend(task_file_problems(own_files, task_files.label))
    return PreparedTask(task_files, rubric, spec, calibration, own_files)


def task_file_problems(files: dict[str, bytes], label: Any = str) -> list[ImportProblem]:
    """What is wrong with a task's own files: oracle_grade.json is a JSON object, tests_base.txt UTF-8 text
    without NUL (a diff may hold any bytes)."""
    problems: list[ImportProblem] = []
    if "oracle_grade.json" in files:
        name = label("oracle_grade.json")
        data = _decode_json(files["oracle_grade.json"], name, problems)
        if data is not None and not isinstance(data, dict):
            problems.append(ImportProblem(name, "grade.json is a JSON object"))
    if "tests_base.txt" in files:
        name = label("tests_base.txt")
        try:
            text = files["tests_base.txt"].decode("utf-8")
        except UnicodeDecodeError:
            problems.append(ImportProblem(name, "not UTF-8 text"))
        else:
            if "\x00" in text:
                problems.append(ImportProblem(name, "holds a NUL character"))
    return problems


def _task_fields(spec: TaskSpec) -> dict[str, Any]:
    extra = dict(spec.model_extra or {})
    out: dict[str, Any] = {"gate": list(spec.gate)}
    # With `prompts`, the file states the task's whole statement (§8): every variant it carries, and none it
    # does not. A task.json with only `prompt` (every file written before §8 variants) says nothing of the
    # other variant, so that one is left as stored: re-importing an exported task.json changes nothing.
    variants = spec.prompt_variants()
    if spec.prompts is not None:
        out["spec_prompt"] = variants.get("spec", "")
        out["issue_prompt"] = variants.get("issue", "")
    else:
        out.update({f"{style}_prompt": text for style, text in variants.items()})
    if spec.base_commit:
        out["base_commit"] = spec.base_commit
    if spec.base_date:
        out["base_date"] = spec.base_date
    for key in ("source_pr_url", "source_pr", "pr_url"):
        value = extra.get(key)
        if isinstance(value, str) and value.startswith(("https://", "http://")):
            out["source_pr_url"] = value
            break
    out["extra"] = extra
    return out


def import_task_files(
    repository: Repository,
    sources: list[TaskFiles],
    user: Actor,
    *,
    approved_by: Actor | None = None,
) -> list[RubricRevision]:
    """Validate every task first; then create one draft revision per task in one transaction.

    ``approved_by`` (a maintainer): the rubrics were already reviewed in the repository itself (merged
    through its own PR review), so they come in approved, recorded as imported approved by that maintainer.
    """
    user.require(Role.MAINTAINER, repository)
    if approved_by is not None:
        approved_by.require(Role.MAINTAINER, repository)
    problems: list[ImportProblem] = []
    if not sources:
        problems.append(ImportProblem("", "no rubric.json found"))
    prepared = [p for p in (_prepare(s, problems) for s in sources) if p is not None]
    seen: dict[str, str] = {}
    for p in prepared:
        label = p.files.label("rubric.json")
        if p.rubric.task in seen:
            problems.append(
                ImportProblem(label, f"task {p.rubric.task!r} is also in {seen[p.rubric.task]}", "task")
            )
        seen[p.rubric.task] = label
        problems.extend(_frozen_task_problems(repository, p))
    if problems:
        raise ImportFailed(problems)
    created: list[RubricRevision] = []
    try:
        with transaction.atomic():
            for p in prepared:
                task, _ = Task.objects.select_for_update().get_or_create(
                    repository=repository, task_id=p.rubric.task
                )
                if p.spec is not None:
                    for name, value in _task_fields(p.spec).items():
                        setattr(task, name, value)
                    task.full_clean(exclude=["repository"], validate_unique=False)
                    task.save()
                if p.task_files:
                    for name, data in p.task_files.items():
                        setattr(task, TASK_FILES[name], data)
                    task.save(update_fields=[TASK_FILES[name] for name in p.task_files])
                revision = create_revision(task, p.rubric, p.calibration, by=user, origin=Origin.IMPORTED)
                if approved_by is not None:
                    _approve_imported(revision, approved_by.user)
                created.append(revision)
    except IntegrityError as exc:
        # A revision of the task was approved between the check above and the write (the trigger refused).
        raise ImportFailed([ImportProblem("", str(exc).splitlines()[0])]) from None
    return created


def _approve_imported(revision: RubricRevision, approver: Any) -> None:
    """Every item and the revision approved by ``approver`` (import_task_files checked their role)."""
    RubricItem.objects.filter(revision=revision).update(
        review_state=ReviewState.APPROVED, reviewed_by=approver, reviewed_at=timezone.now()
    )
    try:
        revision.approve(by=approver)
    except RubricInvalid as exc:  # validated on import already; kept as a problem, never half-approved
        raise ImportFailed(
            [
                ImportProblem(f"tasks/{revision.task.task_id}/rubric.json", e.message, e.path)
                for e in exc.errors
            ]
        ) from None
    audit.record(
        AuditVerb.IMPORTED_APPROVED, actor=approver, revision=revision, detail={"approved_by": str(approver)}
    )


def _frozen_task_problems(repository: Repository, prepared: PreparedTask) -> list[ImportProblem]:
    """task.json may not change what a stored task's approved, admitted or retired rubrics mean."""
    if prepared.spec is None:
        return []
    task = Task.objects.filter(repository=repository, task_id=prepared.rubric.task).first()
    if task is None or not task.holds_frozen_revision():
        return []
    label = prepared.files.label("task.json")
    return [
        ImportProblem(
            label,
            f"differs from the stored task's {name}, which is frozen: the task holds an approved, admitted "
            "or retired revision (import the change under a new task id)",
            name,
        )
        for name, value in _task_fields(prepared.spec).items()
        if name in Task.FROZEN_FIELDS and getattr(task, name) != value
    ]


# --- zip uploads ----------------------------------------------------------------------------------

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if name.startswith(("/", "\\")) or _WINDOWS_DRIVE.match(name):
        return "absolute path"
    if "\\" in name:
        return "backslash in path"
    if ".." in PurePosixPath(name).parts:
        return "path leaves the archive ('..')"
    if "\x00" in name:
        return "NUL in path"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "symbolic link"
    if info.flag_bits & 0x1:
        return "encrypted member"
    return None


def _read_upload(uploaded: IO[bytes] | Any, limit: int) -> bytes:
    size = getattr(uploaded, "size", None)
    if isinstance(size, int) and size > limit:
        raise ImportFailed([ImportProblem(_name(uploaded), f"upload is {size} bytes; the limit is {limit}")])
    if hasattr(uploaded, "seek"):
        uploaded.seek(0)
    raw = uploaded.read(limit + 1)
    if len(raw) > limit:
        raise ImportFailed([ImportProblem(_name(uploaded), f"upload is over the limit of {limit} bytes")])
    return bytes(raw)


def _name(uploaded: Any) -> str:
    return PurePosixPath(str(getattr(uploaded, "name", "") or "upload")).name


def checked_zip_members(
    archive: zipfile.ZipFile, label: str, *, max_members: int, max_total: int
) -> list[zipfile.ZipInfo]:
    """The archive's members, once none is unsafe (absolute, '..', link, encrypted, duplicate) and the
    declared sizes are within the limits (each member's, ``settings.ZIP_MAX_MEMBER_BYTES``, and the
    total); ImportFailed listing every problem otherwise. The members are counted from the central
    directory before any is read, and every check is linear in their number. Shared by rubric and
    agent-run uploads."""
    infos = archive.infolist()
    if len(infos) > max_members:
        raise ImportFailed([ImportProblem(label, f"{len(infos)} members; the limit is {max_members}")])
    problems = [ImportProblem(f"{label}: {i.filename}", p) for i in infos if (p := _member_problem(i))]
    max_member = settings.ZIP_MAX_MEMBER_BYTES
    problems.extend(
        ImportProblem(
            f"{label}: {i.filename}", f"{i.file_size} bytes uncompressed; the limit is {max_member}"
        )
        for i in infos
        if i.file_size > max_member
    )
    total = sum(i.file_size for i in infos)
    if total > max_total:
        problems.append(ImportProblem(label, f"{total} bytes uncompressed; the limit is {max_total}"))
    counts = Counter(i.filename for i in infos if not i.is_dir())
    duplicates = sorted(name for name, count in counts.items() if count > 1)
    problems.extend(ImportProblem(f"{label}: {n}", "appears twice in the archive") for n in duplicates)
    if problems:
        raise ImportFailed(problems)
    return infos


def read_zip(raw: bytes, label: str = "upload.zip") -> list[TaskFiles]:
    """The task directories of a zip: every directory holding a rubric.json. Raises ImportFailed on an unsafe
    or oversized archive."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, OSError):
        raise ImportFailed([ImportProblem(label, "not a zip file")]) from None
    with archive:
        infos = checked_zip_members(
            archive,
            label,
            max_members=settings.RUBRIC_ZIP_MAX_MEMBERS,
            max_total=settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES,
        )
        max_total = settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES
        contents: dict[str, bytes] = {}
        read_total = 0
        for info in infos:
            if info.is_dir():
                continue
            try:
                # ZipExtFile stops at the declared size and checks the CRC, so a lying header cannot inflate.
                data = archive.read(info)
            except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
                raise ImportFailed(
                    [ImportProblem(f"{label}: {info.filename}", f"cannot read: {exc}")]
                ) from None
            read_total += len(data)
            if read_total > max_total:
                raise ImportFailed([ImportProblem(label, f"over {max_total} bytes uncompressed")])
            contents[posixpath.normpath(info.filename)] = data
    return _group_task_dirs(contents)


def _group_task_dirs(contents: dict[str, bytes]) -> list[TaskFiles]:
    rubric_dirs = sorted(posixpath.dirname(n) for n in contents if posixpath.basename(n) == "rubric.json")
    out: list[TaskFiles] = []
    for directory in rubric_dirs:
        prefix = f"{directory}/" if directory else ""
        files = {n[len(prefix) :]: data for n, data in contents.items() if n.startswith(prefix)}
        out.append(
            TaskFiles(
                directory=directory,
                rubric=files["rubric.json"],
                task_json=files.get("task.json"),
                prompt_md=files.get("prompt.md"),
                files=files,
            )
        )
    return out


def import_rubric_zip(
    repository: Repository, uploaded_file: IO[bytes] | Any, user: Actor
) -> list[RubricRevision]:
    """An uploaded zip (tasks/<id>/rubric.json or rubric.json, with calib diffs) or a bare rubric.json,
    as draft revisions. Raises ImportFailed listing every problem; then nothing is imported."""
    user.require(Role.MAINTAINER, repository)
    raw = _read_upload(uploaded_file, settings.RUBRIC_UPLOAD_MAX_BYTES)
    label = _name(uploaded_file)
    sources = read_zip(raw, label) if raw.startswith(b"PK") else [TaskFiles(directory="", rubric=raw)]
    try:
        return import_task_files(repository, sources, user)
    except ImportFailed as exc:
        if not raw.startswith(b"PK"):
            # A bare rubric.json is named by the upload's own name, not "rubric.json".
            raise ImportFailed([ImportProblem(label, p.message, p.path) for p in exc.problems]) from None
        raise


# --- checkouts ------------------------------------------------------------------------------------


def read_checkout(root: Path) -> list[TaskFiles]:
    """Every tasks/*/ directory of a checkout that holds a rubric.json, with the files its rubric names."""
    problems: list[ImportProblem] = []
    out: list[TaskFiles] = []
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise ImportFailed([ImportProblem(str(root), "no tasks/ directory")])
    max_bytes = settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES
    for task_dir in sorted(p for p in tasks_dir.iterdir() if p.is_dir()):
        rubric_path = task_dir / "rubric.json"
        if not rubric_path.is_file():
            continue
        directory = f"tasks/{task_dir.name}"
        base = task_dir.resolve()

        def read(
            rel: str, directory: str = directory, task_dir: Path = task_dir, base: Path = base
        ) -> bytes | None:
            path = task_dir / rel
            label = posixpath.join(directory, rel)
            if not path.exists():
                return None
            if not path.resolve().is_relative_to(base):
                problems.append(ImportProblem(label, "leaves the task directory (symbolic link?)"))
                return None
            if path.stat().st_size > max_bytes:
                problems.append(ImportProblem(label, f"larger than {max_bytes} bytes"))
                return None
            return path.read_bytes()

        rubric = read("rubric.json")
        if rubric is None:
            continue
        files: dict[str, bytes] = {}
        # Only the diffs the rubric names are read: a task directory may hold large unrelated files.
        try:
            parsed = parse_rubric(parse_json(rubric, rubric_path), rubric_path)
            names = [rel for _, rel in parsed.calibration.paths()]
        except InputError:
            names = []  # the rubric's own problems are reported by import_task_files
        # The task's own files that calibration reads (oracle.diff, oracle_grade.json, tests_base.txt).
        for rel in [*names, *TASK_FILES]:
            data = read(posixpath.normpath(rel))
            if data is not None:
                files[posixpath.normpath(rel)] = data
        out.append(
            TaskFiles(
                directory, rubric, task_json=read("task.json"), prompt_md=read("prompt.md"), files=files
            )
        )
    if problems:
        raise ImportFailed(problems)
    return out


def import_checkout(
    repository: Repository, root: Path, user: Actor, *, approved_by: Actor | None = None
) -> list[RubricRevision]:
    """Every tasks/*/rubric.json (+ task.json and the task's own files) under ``root`` as a draft revision
    (approved, with ``approved_by``), all or nothing."""
    user.require(Role.MAINTAINER, repository)
    return import_task_files(repository, read_checkout(root), user, approved_by=approved_by)


def repository_for_checkout(root: Path, name: str | None = None) -> Repository:
    """The repository a checkout belongs to, created on first import; its manifest's tests block is read."""
    repository, _ = Repository.objects.get_or_create(
        name=name or root.resolve().name, defaults={"checkout_path": str(root.resolve())}
    )
    manifest = root / "repo_manifest.yaml"
    if manifest.is_file():
        try:
            tests = load_manifest(manifest).tests
        except InputError as exc:
            raise ImportFailed([ImportProblem(str(manifest), exc.message, exc.field or "")]) from None
        if tests is not None:
            repository.tests_config = tests.model_dump(mode="json", by_alias=True, exclude_unset=True)
            repository.save(update_fields=["tests_config"])
    return repository


# --- export ---------------------------------------------------------------------------------------


def _require_admitted(revision: RubricRevision) -> Rubric:
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError(
            f"only an admitted revision is exported (revision {revision.number} is {revision.status})"
        )
    return revision.to_rubric()


def rubric_json_bytes(revision: RubricRevision) -> bytes:
    return revision.rubric_json_bytes()


def export_rubric_json(revision: RubricRevision, *, by: Actor) -> bytes:
    """rubric.json of an admitted revision, exactly what `rubric validate` accepts."""
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_admitted(revision)
    audit.record(AuditVerb.EXPORTED, actor=by.user, revision=revision, detail={"as": "rubric.json"})
    return rubric_json_bytes(revision)


def _task_files_out(revision: RubricRevision, private: bool = False) -> dict[str, bytes]:
    """The files of tasks/<task-id>/: rubric.json and its calib diffs; ``private`` (the held-out set, which
    no public checkout holds) adds what `rubric check` reads besides: task.json, oracle.diff,
    oracle_grade.json and tests_base.txt, as calibration writes them (the ones the task has)."""
    files = {"rubric.json": rubric_json_bytes(revision)}
    for diff in revision.ordered_diffs():
        files[posixpath.normpath(diff.path)] = bytes(diff.content)
    if private:
        from rubrics_app.services.calibration import calibration_files

        for path, data in calibration_files(revision).items():
            name = path.removeprefix("task/")
            if name in ("task.json", *TASK_FILES) and data:
                files[name] = data
    return files


def export_zip(revision: RubricRevision, *, by: Actor, private: bool = False) -> bytes:
    """A zip of tasks/<task-id>/rubric.json and its calib diffs (unzips into a checkout; imports back);
    ``private`` adds the task's own files (see _task_files_out)."""
    by.require(Role.MAINTAINER, revision.task.repository)
    _require_admitted(revision)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel, data in _task_files_out(revision, private).items():
            # A fixed timestamp: the same revision always gives the same bytes.
            info = zipfile.ZipInfo(f"tasks/{revision.task.task_id}/{rel}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    audit.record(
        AuditVerb.EXPORTED,
        actor=by.user,
        revision=revision,
        detail={"as": "private zip" if private else "zip"},
    )
    return buffer.getvalue()


@dataclass
class CheckoutExport:
    root: Path
    paths: list[str]  # relative to root, e.g. tasks/fix_x/rubric.json
    branch: str | None = None
    commit: str | None = None


def _atomic_write(target: Path, data: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{target.parent}: cannot create: {exc.strerror or exc}") from None
    try:
        write_atomic(target, data)
    except InputError as exc:
        raise ExportError(str(exc)) from None


def _git_env(by: Any) -> dict[str, str]:
    name = (
        getattr(by, "get_full_name", lambda: "")() or getattr(by, "username", "") or "Rubrics app"
    ).strip()
    email = getattr(by, "email", "") or "rubrics@localhost"
    # The maintainer's own git config (hooks, signing, aliases) plays no part in an export: grading's Git
    # switches it off; these only name the commit's author.
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


EXPORT_GIT_TIMEOUT = 120.0  # seconds for one git call of an export


def _export_root(repository: Repository, private: bool) -> Path:
    raw = repository.private_path if private else repository.checkout_path
    what = "private path" if private else "checkout path"
    if not raw:
        raise ExportError(f"repository {repository.name} has no {what}")
    root = Path(raw)
    if not root.is_dir():
        raise ExportError(f"{what} {raw} is not a directory")
    return root.resolve()


def write_many_to_checkout(
    revisions: list[RubricRevision],
    private: bool = False,
    branch: str | None = None,
    *,
    by: Actor,
    root: Path | None = None,
) -> CheckoutExport:
    """Write tasks/<task-id>/rubric.json and calib diffs of admitted revisions (one repository), each file
    atomically; with ``branch``, commit exactly those files on a new branch of the checkout instead, leaving
    its work tree, index and HEAD as they were."""
    if not revisions:
        raise ExportError("nothing to export")
    repository = revisions[0].task.repository
    if any(r.task.repository_id != repository.pk for r in revisions):
        raise ExportError("revisions of several repositories")
    by.require(Role.MAINTAINER, repository)
    for revision in revisions:
        _require_admitted(revision)
    target_root = root.resolve() if root is not None else _export_root(repository, private)
    writes: list[tuple[str, bytes]] = []
    for revision in revisions:
        for rel, data in _task_files_out(revision, private).items():
            writes.append((posixpath.join("tasks", revision.task.task_id, rel), data))
    paths = [p for p, _ in writes]
    commit = None
    if branch is None:
        for path, _ in writes:  # checked before any file is written
            if not (target_root / path).parent.resolve().is_relative_to(target_root):
                raise ExportError(f"{path} leaves {target_root} (symbolic link?)")
        for path, data in writes:
            final = target_root / path
            if final.is_symlink():
                raise ExportError(f"{path} is a symbolic link; not overwriting it")
            _atomic_write(final, data)
    else:
        # The maintainer's checkout is left alone: no file, no index entry and no HEAD of theirs moves. The
        # commit is built from git's objects only, and the new branch waits for them to look at it.
        tasks = ", ".join(r.task.task_id for r in revisions)
        git = Git(
            target_root,
            _git_env(by.user),
            (*NO_COMMANDS_CONFIG, ("commit.gpgsign", "false")),
            timeout=EXPORT_GIT_TIMEOUT,
        )
        try:
            commit = commit_on_new_branch(
                git, branch, writes, f"Rubrics: export admitted revisions of {tasks}\n"
            )
        except GitError as exc:
            raise ExportError(exc.message) from exc
    for revision in revisions:
        audit.record(
            AuditVerb.EXPORTED,
            actor=by.user,
            revision=revision,
            detail={
                "as": "private" if private else "checkout",
                "root": str(target_root),
                "paths": [p for p in paths if p.startswith(f"tasks/{revision.task.task_id}/")],
                "branch": branch,
                "commit": commit,
            },
        )
    return CheckoutExport(target_root, paths, branch, commit)


def write_to_checkout(
    revision: RubricRevision, private: bool = False, branch: str | None = None, *, by: Actor
) -> CheckoutExport:
    """tasks/<task-id>/rubric.json and its calib diffs into the checkout (or the private path), atomically."""
    return write_many_to_checkout([revision], private, branch, by=by)


# --- the export job -----------------------------------------------------------------------------------------


@transaction.atomic
def start_export(
    revision: RubricRevision, by: Actor, *, private: bool = False, branch: str | None = None
) -> Job:
    by.require(Role.MAINTAINER, revision.task.repository)
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError("only an admitted revision is exported")
    job = Job.objects.create(
        kind=JobKind.EXPORT_REVISION,
        repository=revision.task.repository,
        revision=revision,
        created_by=by.recorded_user,
        params={"private": private, "branch": branch},
    )
    export_revision_to_checkout.delay_on_commit(job.pk)
    return job


def _export(job: Job) -> ExportResult:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    private = bool(job.params.get("private", False))
    branch = job.params.get("branch") or None
    exported = write_to_checkout(
        revision, private=private, branch=branch, by=Actor.command_line(job.created_by)
    )
    return ExportResult(
        root=str(exported.root), paths=exported.paths, branch=exported.branch, commit=exported.commit
    )


@job_task(JobKind.EXPORT_REVISION)
def export_revision_to_checkout(job_id: int) -> None:
    """Write an admitted revision into its repository's checkout (or private path), optionally on a branch."""
    run(job_id, _export)
