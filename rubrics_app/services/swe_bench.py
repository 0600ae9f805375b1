"""Runs from the SWE-bench harness: ``predictions.jsonl`` and the harness's per-instance ``report.json``.

Each prediction (``instance_id``, ``model_name_or_path``, ``model_patch``) becomes the files of a run
directory as ``rubric capture`` would leave one, built in memory (never written to disk), which the run
import (:mod:`rubrics_app.services.runs`) then checks as any other run, all or nothing:

- ``run.json``: task = ``instance_id`` (a task of the repository), model = ``model_name_or_path``, the arm
  and repetition the caller gives, and ``"source": "swe-bench"``, the marker grading reads: the integrity
  parts only a capture records (the ignored files created, the test ids, ``.git``) are then not measured,
  with the harness named as the reason, instead of a missing test list being a grader failure;
- ``workspace.diff``: ``model_patch`` as it came (null or empty: the agent changed nothing; text that is
  not a diff leaves the run not mergeable when it is graded);
- ``grade.json``: ``pass`` = the report's ``resolved``, with ``patch_successfully_applied`` and the
  ``tests_status`` lists kept beside it. Reports are matched by instance and by the model's folder the
  harness writes them under (``RUN_ID/MODEL/INSTANCE/report.json``). A prediction with an empty patch has no
  report (the harness does not run it), nor has one whose patch did not apply (its ``run_instance.log``
  says so): neither passed. Any other prediction without a report is a problem.
- ``ignored_created.txt`` empty (the run import needs one; the marker says it means "unknown") and no
  ``tests_list.txt``.

Every input is bounded: the predictions file's size and line count, each report's size and their count.
Problems name the file and the line (``predictions.jsonl: line 3: instance_id: ...``); when any line or
report has one, nothing is imported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings

from grading import MAX_RUN_INT, SWE_BENCH_SOURCE, InputError, parse_json, read_input_bytes
from rubrics_app.access import Actor
from rubrics_app.models import Repository, Role, Task
from rubrics_app.services.import_export import ImportFailed, ImportProblem, checked_zip_members
from rubrics_app.services.run_checks import MAX_NAME
from rubrics_app.services.run_files import ZIP_READ_ERRORS, RunFiles, zip_files, zip_member_bytes
from rubrics_app.services.runs import RunImport, _import_runs

REPORT_NAME = "report.json"
MAX_REPORT_BYTES = 5 * 1024 * 1024  # one instance's report: test names, a few MB at the very most
# The harness's log beside report.json, and the line it writes there when no way of applying the patch
# worked (swebench.harness.constants.APPLY_PATCH_FAIL). It then writes no report.json at all.
INSTANCE_LOG_NAME = "run_instance.log"
APPLY_PATCH_FAIL = b">>>>> Patch Apply Failed"
TEST_STATUS_KEYS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")


@dataclass(frozen=True)
class Prediction:
    line: int
    instance_id: str
    model: str
    patch: str


@dataclass(frozen=True)
class Report:
    label: str
    resolved: bool
    applied: bool | None
    tests_status: dict[str, dict[str, list[str]]]
    folder: str | None = None  # MODEL of RUN_ID/MODEL/INSTANCE/report.json; None when not that deep


@dataclass
class Reports:
    """Every report under the reports folder by instance id, and the instances whose log says the patch
    did not apply (by instance id, the model folders), each told apart by its model's folder."""

    by_instance: dict[str, list[Report]]
    apply_failed: dict[str, list[str | None]]

    def report_for(self, prediction: Prediction) -> list[Report]:
        return _of_model(self.by_instance.get(prediction.instance_id, []), lambda r: r.folder, prediction)

    def did_not_apply(self, prediction: Prediction) -> bool:
        return bool(_of_model(self.apply_failed.get(prediction.instance_id, []), lambda f: f, prediction))


def model_folder(model: str) -> str:
    """The folder the harness writes a model's logs under (model_name_or_path with / as __)."""
    return model.replace("/", "__")


def _of_model[T](found: list[T], folder: Callable[[T], str | None], prediction: Prediction) -> list[T]:
    """Those of ``found`` under the prediction's model folder, else those under no model folder (the
    reports folder given was the model's own): never another model's."""
    named = [f for f in found if folder(f) == model_folder(prediction.model)]
    return named or [f for f in found if folder(f) is None]


def _folder(path: str) -> str | None:
    parts = path.split("/")  # (..., MODEL, INSTANCE, report.json)
    return parts[-3] if len(parts) >= 3 else None


@dataclass(frozen=True)
class ReportsFile:
    """A report.json or run_instance.log of the reports folder, on disk or in a zip."""

    path: str  # under the reports folder, with /
    read: Callable[[int], bytes]  # its bytes, InputError past the bound given
    open: Callable[[], IO[bytes]]


def _str_field(
    data: dict[str, Any], key: str, where: str, problems: list[ImportProblem], *, limit: int
) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(ImportProblem(where, "required: a non-empty string", key))
        return ""
    if len(value) > limit:
        problems.append(ImportProblem(where, f"at most {limit} characters", key))
    elif "\x00" in value or value != value.strip():
        problems.append(ImportProblem(where, "no NUL character and no leading or trailing space", key))
    return value


def read_predictions(path: Path, label: str) -> list[Prediction]:
    """Every line of ``predictions.jsonl`` (blank lines skipped); ImportFailed listing every bad line."""
    try:
        raw = read_input_bytes(path, int(settings.RUNS_UPLOAD_MAX_BYTES))
    except InputError as exc:
        raise ImportFailed([ImportProblem(label, exc.message)]) from None
    return parse_predictions(raw, label)


def parse_predictions(raw: bytes, label: str) -> list[Prediction]:
    """:func:`read_predictions` of the file's bytes."""
    lines = raw.split(b"\n")
    max_lines = int(settings.RUNS_ZIP_MAX_MEMBERS)
    if sum(1 for line in lines if line.strip()) > max_lines:
        raise ImportFailed([ImportProblem(label, f"more than {max_lines} predictions")])
    problems: list[ImportProblem] = []
    predictions: list[Prediction] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{label}: line {number}"
        try:
            data = parse_json(line, where)
        except InputError as exc:
            column = f" ({exc.field.removeprefix('line 1 ')})" if exc.field else ""  # within this line
            problems.append(ImportProblem(where, exc.message + column))
            continue
        if not isinstance(data, dict):
            problems.append(ImportProblem(where, "a prediction is a JSON object"))
            continue
        before = len(problems)
        instance_id = _str_field(data, "instance_id", where, problems, limit=200)
        model = _str_field(data, "model_name_or_path", where, problems, limit=MAX_NAME)
        patch = data.get("model_patch")
        # Any text is taken, NUL or prose included: the patch is the agent's output, and one the grader
        # cannot read as a diff leaves that run not mergeable (grading's Run.unreadable_patch). Refusing it
        # here would let one agent's output keep every run of the file out.
        if patch is not None and not isinstance(patch, str):
            problems.append(ImportProblem(where, "a string (the diff) or null", "model_patch"))
        if len(problems) > before:
            continue
        key = (instance_id, model)
        if key in seen:
            problems.append(ImportProblem(where, f"the same instance and model as line {seen[key]}"))
            continue
        seen[key] = number
        predictions.append(Prediction(number, instance_id, model, patch or ""))
    if problems:
        raise ImportFailed(problems)
    if not predictions:
        raise ImportFailed([ImportProblem(label, "no predictions")])
    return predictions


def _read_report(
    file: ReportsFile, label: str, folder: str | None, problems: list[ImportProblem]
) -> dict[str, Report]:
    try:
        data = parse_json(file.read(MAX_REPORT_BYTES), label)
    except InputError as exc:
        problems.append(ImportProblem(label, exc.message, exc.field or ""))
        return {}
    if not isinstance(data, dict) or not data:
        problems.append(ImportProblem(label, "a report is a JSON object keyed by instance_id"))
        return {}
    reports: dict[str, Report] = {}
    for instance_id, entry in data.items():
        where = instance_id
        if not isinstance(entry, dict):
            problems.append(ImportProblem(label, "a JSON object", where))
            continue
        resolved = entry.get("resolved")
        if not isinstance(resolved, bool):
            problems.append(ImportProblem(label, "required: true or false", f"{where}.resolved"))
            continue
        applied = entry.get("patch_successfully_applied")
        if applied is not None and not isinstance(applied, bool):
            problems.append(ImportProblem(label, "true or false", f"{where}.patch_successfully_applied"))
            continue
        status = entry.get("tests_status", {})
        checked: dict[str, dict[str, list[str]]] = {}
        if not isinstance(status, dict):
            problems.append(ImportProblem(label, "a JSON object", f"{where}.tests_status"))
            continue
        for kind, lists in status.items():
            field = f"{where}.tests_status.{kind}"
            if kind not in TEST_STATUS_KEYS:
                problems.append(ImportProblem(label, f"one of {', '.join(TEST_STATUS_KEYS)}", field))
                continue
            if not isinstance(lists, dict) or set(lists) - {"success", "failure"}:
                problems.append(ImportProblem(label, "an object of success and failure lists", field))
                continue
            if not all(
                isinstance(names, list) and all(isinstance(n, str) and "\x00" not in n for n in names)
                for names in lists.values()
            ):
                problems.append(ImportProblem(label, "success and failure are lists of test names", field))
                continue
            checked[kind] = {k: list(v) for k, v in lists.items()}
        reports[instance_id] = Report(label, resolved, applied, checked, folder)
    return reports


def read_reports(root: Path, label: str) -> Reports:
    """Every ``report.json`` under ``root`` (any layout, as the harness's logs/run_evaluation/...), by
    instance id, and the instances whose ``run_instance.log`` says the patch did not apply; ImportFailed
    listing every bad report."""
    if not root.is_dir():
        raise ImportFailed([ImportProblem(label, "not a directory")])
    max_files = int(settings.RUNS_ZIP_MAX_MEMBERS)
    found: list[ReportsFile] = []
    for name in (REPORT_NAME, INSTANCE_LOG_NAME):  # one of each per instance: each name counted alone
        for count, path in enumerate(root.rglob(name), start=1):
            if count > max_files:
                raise ImportFailed([ImportProblem(label, f"more than {max_files} {name} files")])
            if path.is_symlink() or not path.is_file():
                continue
            found.append(
                ReportsFile(
                    path.relative_to(root).as_posix(),
                    functools.partial(read_input_bytes, path),
                    _opener(path),
                )
            )
    return _reports_of(found, label)


def _opener(path: Path) -> Callable[[], IO[bytes]]:
    return lambda: path.open("rb")


def read_reports_zip(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], label: str) -> Reports:
    """:func:`read_reports` of a zip of the reports folder (``members`` checked by checked_zip_members),
    read from the archive as it is."""
    found = [
        ReportsFile(
            path,
            functools.partial(zip_member_bytes, archive, info, where=path),
            functools.partial(archive.open, info),
        )
        for path, info in zip_files(members, label).items()
        if posixpath.basename(path) in (REPORT_NAME, INSTANCE_LOG_NAME)
    ]
    return _reports_of(found, label)


def _reports_of(files: list[ReportsFile], label: str) -> Reports:
    reports = {posixpath.dirname(f.path) for f in files if posixpath.basename(f.path) == REPORT_NAME}
    problems: list[ImportProblem] = []
    found = Reports({}, {})
    first: dict[tuple[str, str | None], str] = {}
    for file in sorted(files, key=lambda f: PurePosixPath(f.path).parts):
        folder = _folder(file.path)
        where = posixpath.join(label, file.path)
        if posixpath.basename(file.path) == INSTANCE_LOG_NAME:
            # A log is read only where the harness wrote no report: for a patch that may not have applied.
            if posixpath.dirname(file.path) in reports:
                continue
            try:
                failed = _apply_failed(file)
            except ZIP_READ_ERRORS as exc:
                problems.append(ImportProblem(where, f"cannot read: {exc}"))
                continue
            if failed:
                instance = posixpath.basename(posixpath.dirname(file.path))
                found.apply_failed.setdefault(instance, []).append(folder)
            continue
        for instance_id, report in _read_report(file, where, folder, problems).items():
            if (instance_id, folder) in first:
                earlier = first[instance_id, folder]
                problems.append(ImportProblem(where, f"a second report (the first: {earlier})", instance_id))
                continue
            first[instance_id, folder] = where
            found.by_instance.setdefault(instance_id, []).append(report)
    if problems:
        raise ImportFailed(problems)
    return found


def _apply_failed(file: ReportsFile) -> bool:
    """The harness's log says no way of applying the patch worked (read in chunks: a log can be long)."""
    tail = b""
    with file.open() as log:
        while chunk := log.read(1 << 20):
            if APPLY_PATCH_FAIL in tail + chunk:
                return True
            tail = chunk[-len(APPLY_PATCH_FAIL) :]
    return False


def _runs(
    predictions: list[Prediction],
    reports: Reports,
    tasks: set[str],
    arm: str,
    repetition: int,
    label: str,
) -> list[RunFiles]:
    """Each prediction as the files of a run directory ``label/line-N``, in memory."""
    problems: list[ImportProblem] = []
    runs: list[RunFiles] = []
    for p in predictions:
        where = f"{label}: line {p.line}"
        if p.instance_id not in tasks:
            problems.append(
                ImportProblem(where, f"no task {p.instance_id!r} in this repository", "instance_id")
            )
            continue
        matched = reports.report_for(p)
        report = matched[0] if matched else None  # read_reports refused a second one
        grade: dict[str, Any] = {"pass": False}
        if report is not None:
            grade["pass"] = report.resolved
            if report.applied is not None:
                grade["patch_successfully_applied"] = report.applied
            grade["tests_status"] = report.tests_status
        elif reports.did_not_apply(p):
            # The harness could apply none of the agent's patch and so wrote no report: the agent's doing,
            # a run that did not pass, never a reason to refuse the file.
            grade["patch_successfully_applied"] = False
        elif p.patch.strip():  # an empty patch is not evaluated: it did not pass
            others = sorted({r.folder or "" for r in reports.by_instance.get(p.instance_id, [])})
            elsewhere = f" (only under other models' folders: {', '.join(others)})" if others else ""
            problems.append(
                ImportProblem(
                    where,
                    f"no {REPORT_NAME} for this instance and model under the reports folder{elsewhere}, "
                    f"nor a {INSTANCE_LOG_NAME} saying the patch did not apply",
                    "instance_id",
                )
            )
            continue
        # The marker grading reads (RunRecord.from_swe_bench): the parts only a capture records, ignored
        # files and test ids, are then not measured rather than missing.
        run = {"task": p.instance_id, "arm": arm, "model": p.model, "repetition": repetition,
               "source": SWE_BENCH_SOURCE}  # fmt: skip
        diff = p.patch.encode("utf-8")  # hashed here, encoded again only when the run is stored
        files = {
            "run.json": json.dumps(run).encode("utf-8"),
            "grade.json": json.dumps(grade).encode("utf-8"),
            "ignored_created.txt": b"",
        }
        diff_key = (hashlib.sha256(diff).hexdigest(), len(diff))
        runs.append(
            RunFiles(
                posixpath.join(label, f"line-{p.line}"),
                files,
                diff_key,
                functools.partial(p.patch.encode, "utf-8"),
            )
        )
    if problems:
        raise ImportFailed(problems)
    return runs


def import_swe_bench(
    repository: Repository,
    predictions: Path,
    reports: Path,
    *,
    arm: str,
    repetition: int = 0,
    labels: tuple[str, str] | None = None,
    by: Actor,
) -> RunImport:
    """Every prediction as a run of the repository, graded by its report; all or nothing."""
    by.require(Role.MAINTAINER, repository)
    predictions_label, reports_label = labels or (str(predictions), str(reports))
    return _import(
        repository,
        lambda: read_predictions(predictions, predictions_label),
        lambda: read_reports(reports, reports_label),
        predictions_label,
        arm=arm,
        repetition=repetition,
        by=by,
    )


def _import(
    repository: Repository,
    predictions: Callable[[], list[Prediction]],
    reports: Callable[[], Reports],
    predictions_label: str,
    *,
    arm: str,
    repetition: int,
    by: Actor,
) -> RunImport:
    problems: list[ImportProblem] = []
    if len(arm) > MAX_NAME or "\x00" in arm:
        problems.append(ImportProblem("--arm", f"at most {MAX_NAME} characters, no NUL"))
    if not 0 <= repetition <= MAX_RUN_INT:
        problems.append(ImportProblem("--repetition", f"a whole number from 0 to {MAX_RUN_INT}"))
    if problems:
        raise ImportFailed(problems)
    # Both files are read before anything is refused, so one answer lists every bad line and every bad report.
    read: list[Prediction] = []
    by_instance = Reports({}, {})
    try:
        read = predictions()
    except ImportFailed as exc:
        problems += exc.problems
    try:
        by_instance = reports()
    except ImportFailed as exc:
        problems += exc.problems
    if problems:
        raise ImportFailed(problems)
    tasks = set(Task.objects.filter(repository=repository).values_list("task_id", flat=True))
    runs = _runs(read, by_instance, tasks, arm, repetition, predictions_label)
    return _import_runs(repository, lambda _problems: runs, predictions_label, by)


def import_swe_bench_upload(
    repository: Repository,
    predictions: IO[bytes] | Any,
    reports_zip: IO[bytes] | Any,
    *,
    arm: str,
    repetition: int,
    by: Actor,
) -> RunImport:
    """The same from an upload: ``predictions.jsonl`` and a zip of the harness's reports folder, both read
    as they came (the zip's members from the archive): nothing is written to disk."""
    by.require(Role.MAINTAINER, repository)
    predictions_label = Path(str(getattr(predictions, "name", "") or "predictions.jsonl")).name
    zip_label = Path(str(getattr(reports_zip, "name", "") or "reports.zip")).name
    limit = int(settings.RUNS_UPLOAD_MAX_BYTES)
    chunks: list[bytes] = []
    size = 0
    for chunk in predictions.chunks() if hasattr(predictions, "chunks") else [predictions.read()]:
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ImportFailed([ImportProblem(predictions_label, f"larger than {limit} bytes")])
    raw = b"".join(chunks)
    del chunks
    if hasattr(reports_zip, "seek"):
        reports_zip.seek(0)
    try:
        archive = zipfile.ZipFile(reports_zip)
    except (zipfile.BadZipFile, OSError):
        raise ImportFailed([ImportProblem(zip_label, "not a zip file")]) from None
    with archive:
        members = checked_zip_members(
            archive,
            zip_label,
            max_members=settings.RUNS_ZIP_MAX_MEMBERS,
            max_total=settings.RUNS_ZIP_MAX_UNCOMPRESSED_BYTES,
        )
        return _import(
            repository,
            lambda: parse_predictions(raw, predictions_label),
            lambda: read_reports_zip(archive, members, zip_label),
            predictions_label,
            arm=arm,
            repetition=repetition,
            by=by,
        )
