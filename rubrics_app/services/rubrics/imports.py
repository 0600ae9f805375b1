"""Import rubric.json files (an uploaded zip or a repository checkout) as draft revisions.

Import is all-or-nothing: every file is read and validated first, and only when none has a problem are the
revisions created, in one transaction. Zip members are checked (names, sizes, duplicates) before any is read.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from grading import (
    InputError,
    InputErrors,
    Rubric,
    TaskSpec,
    load_manifest,
    parse_json,
    parse_rubric,
    validation_messages,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    ITEM_ID_RE,
    TASK_FILES,
    AuditVerb,
    CalibrationDiff,
    Origin,
    Repository,
    ReviewState,
    Role,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    Task,
)
from rubrics_app.services import audit
from rubrics_app.services.rubrics.files import (
    ImportFailed,
    ImportProblem,
    TaskFiles,
    read_checkout,
    read_upload,
    read_zip,
    upload_name,
)
from rubrics_app.services.rubrics.revisions import create_revision


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


def unstorable_text(value: Any) -> list[tuple[str, str]]:
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
    unstorable = unstorable_text(data)
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
        elif spec_data is not None and (unstorable := unstorable_text(spec_data)):
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


# --- zip uploads and checkouts ---------------------------------------------------------------


def import_rubric_zip(
    repository: Repository, uploaded_file: IO[bytes] | Any, user: Actor
) -> list[RubricRevision]:
    """An uploaded zip (tasks/<id>/rubric.json or rubric.json, with calib diffs) or a bare rubric.json,
    as draft revisions. Raises ImportFailed listing every problem; then nothing is imported."""
    user.require(Role.MAINTAINER, repository)
    raw = read_upload(uploaded_file, settings.RUBRIC_UPLOAD_MAX_BYTES)
    label = upload_name(uploaded_file)
    sources = read_zip(raw, label) if raw.startswith(b"PK") else [TaskFiles(directory="", rubric=raw)]
    try:
        return import_task_files(repository, sources, user)
    except ImportFailed as exc:
        if not raw.startswith(b"PK"):
            # A bare rubric.json is named by the upload's own name, not "rubric.json".
            raise ImportFailed([ImportProblem(label, p.message, p.path) for p in exc.problems]) from None
        raise


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
