"""Runs from the SWE-bench harness: its predictions file and the per-instance ``report.json``.

Each prediction (``instance_id``, ``model_name_or_path``, ``model_patch``) becomes the files of a run
directory as ``rubric capture`` would leave one, built in memory (never written to disk), which the run
import (:mod:`rubrics_app.services.runs.store`) then checks as any other run, all or nothing:

- ``run.json``: task = ``instance_id`` (a task of the repository), model = ``model_name_or_path``, the arm
  and repetition the caller gives, and ``"source": "swe-bench"``, the marker grading reads: the integrity
  parts only a capture records (the ignored files created, the test ids, ``.git``) are then not measured,
  with the harness named as the reason, instead of a missing test list being a grader failure;
- ``workspace.diff``: ``model_patch`` as it came (null or empty: the agent changed nothing; text that is
  not a diff leaves the run not mergeable when it is graded);
- ``grade.json``: ``pass`` = the report's ``resolved``, with ``patch_successfully_applied``,
  ``patch_is_None``, ``patch_exists``, ``infra_failure`` (and its reason) and the ``tests_status`` lists
  kept beside it. A report with ``infra_failure: true`` measured nothing of the patch: grading reads the run
  as not measured (grading.harness_infra_failure), never as a failing patch.
- ``ignored_created.txt`` empty (the run import needs one; the marker says it means "unknown") and no
  ``tests_list.txt``.

The predictions file is read as the harness reads it (``swebench.harness.utils.get_predictions_from_file``):
a ``.json`` file is one document, a list of predictions or SWE-agent's ``preds.json`` object of them by
instance id; any other name is JSON lines.

A report goes with a prediction by instance id and model. The harness writes
``logs/run_evaluation/RUN_ID/MODEL/INSTANCE/report.json``, MODEL being ``model_name_or_path`` with ``/`` as
``__``; a report under a model's folder (or naming its model in ``model_name_or_path``) is that model's
only. A report under no model's folder (the experiments repository's ``SUBMISSION/logs/INSTANCE/``, or a
zip of one model's folder) counts only when every prediction is of one model and every report lies, with
no model folder, in one folder; otherwise the predictions it could be for are refused, with the reason.
Without a report: an empty patch was not run by the harness, and a patch whose ``run_instance.log`` says
it did not apply did not pass. An instance whose log says neither (a timeout, the harness's own error) was
not evaluated: it is listed and left out, and the others are imported. A prediction the harness left no
trace of under the reports folder is a problem.

Every input is bounded: the predictions file's size and count, each report's size and their count.
Problems name the file and the line or item (``predictions.jsonl: line 3: instance_id: ...``); when any
line or report has one, nothing is imported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.template.defaultfilters import pluralize

from grading import MAX_RUN_INT, SWE_BENCH_SOURCE, InputError, open_input_file, parse_json, read_input_bytes
from rubrics_app.access import Actor
from rubrics_app.models import Repository, Role, Task
from rubrics_app.services.rubrics.files import ImportFailed, ImportProblem, checked_zip_members, open_zip
from rubrics_app.services.runs.checks import MAX_NAME
from rubrics_app.services.runs.files import ZIP_READ_ERRORS, RunFiles, zip_files, zip_member_bytes
from rubrics_app.services.runs.store import RunImport, import_runs

REPORT_NAME = "report.json"
MAX_REPORT_BYTES = 5 * 1024 * 1024  # one instance's report: test names, a few MB at the very most
# The harness's log beside report.json, and the line it writes there when no way of applying the patch
# worked (swebench.harness.constants.APPLY_PATCH_FAIL). It then writes no report.json at all.
INSTANCE_LOG_NAME = "run_instance.log"
APPLY_PATCH_FAIL = b">>>>> Patch Apply Failed"
# What the log says when the tests outran the harness's --timeout (run_evaluation's EvaluationError); it
# then writes no report.json either, and the patch was not evaluated.
TIMED_OUT = re.compile(rb"Test timed out after \d{1,12} seconds")
LOG_OVERLAP = 64  # bytes of one chunk kept with the next, so a line cut between chunks is still found
# The harness's folder of its evaluation logs (swebench.harness.constants.RUN_EVALUATION_LOG_DIR's last
# part): the folder above a reports folder's parent there is this, that reports folder is a model's.
RUN_EVALUATION = "run_evaluation"
# SWE-bench/experiments keeps a submission's reports as evaluation/SPLIT/SUBMISSION/logs/INSTANCE/report.json:
# a folder of this name above an instance's is no model's.
EXPERIMENTS_LOGS = "logs"
TEST_STATUS_KEYS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
# The report's own true/false keys kept in grade.json as they came (get_eval_report writes them all).
KEPT_FLAGS = ("patch_is_None", "patch_exists", "infra_failure")
MAX_REASON = 2000  # infra_failure_reason: a short code ("out_of_memory") or a line of the harness's


@dataclass(frozen=True)
class Prediction:
    where: str  # how problems name it: "predictions.jsonl: line 3", "preds.json: item 2"
    name: str  # the run directory it becomes under the file's name: "line-3", "item-2"
    instance_id: str
    model: str
    patch: str


@dataclass(frozen=True)
class Place:
    """Where the harness left an instance's files, under the reports folder."""

    folder: str | None  # the model's folder (.../MODEL/INSTANCE/), or the one its report names; None: none
    origin: str  # the folder holding the instance's folder ("" for the reports folder itself)


@dataclass(frozen=True)
class Report:
    label: str
    place: Place
    resolved: bool
    applied: bool | None
    tests_status: dict[str, dict[str, list[str]]]
    kept: dict[str, Any]  # KEPT_FLAGS and infra_failure_reason, as the report has them

    @property
    def infra_failure(self) -> bool:
        return self.kept.get("infra_failure") is True


@dataclass(frozen=True)
class InstanceLog:
    """The run_instance.log of an instance the harness wrote no report.json for."""

    label: str
    place: Place
    apply_failed: bool
    timed_out: str | None  # the log's line saying the tests timed out


@dataclass
class Reports:
    """Every report under the reports folder by instance id, and the logs of the instances that have none."""

    by_instance: dict[str, list[Report]] = field(default_factory=dict)
    logs: dict[str, list[InstanceLog]] = field(default_factory=dict)

    def found(self, instance_id: str | None = None) -> list[Report | InstanceLog]:
        """The reports and logs of one instance (None: of every instance)."""
        if instance_id is not None:
            return [*self.by_instance.get(instance_id, []), *self.logs.get(instance_id, [])]
        reports: list[Report | InstanceLog] = [r for found in self.by_instance.values() for r in found]
        return reports + [log for found in self.logs.values() for log in found]

    def without_model(self, models: int) -> str | None:
        """Why what lies under no model's folder cannot be told to be a prediction's, for an import of
        ``models`` models; None when it can (one model, every report and log in one folder of no model)."""
        places = {x.place for x in self.found()}
        if models > 1:
            return f"the predictions are of {models} models"
        if named := sorted({p.folder for p in places if p.folder is not None}):
            return f"other reports lie under model folders ({', '.join(named[:3])})"
        if len(origins := sorted({p.origin or "." for p in places})) > 1:
            return f"reports lie in {len(origins)} folders of no model ({', '.join(origins[:3])})"
        return None


@dataclass(frozen=True)
class Evaluation:
    """What the harness left under the reports folder for one prediction."""

    report: Report | None = None
    log: InstanceLog | None = None
    problem: str | None = None  # why what there is cannot be taken as this prediction's


def model_folder(model: str) -> str:
    """The folder the harness writes a model's logs under (model_name_or_path with / as __)."""
    return model.replace("/", "__")


def _evaluation(prediction: Prediction, reports: Reports, without_model: str | None) -> Evaluation:
    """The report (else the log) of the prediction's instance under its model's folder; one under no
    model's folder only when ``without_model`` is None: never another model's."""
    folder = model_folder(prediction.model)
    found = reports.found(prediction.instance_id)
    own = [x for x in found if x.place.folder == folder]
    anonymous = [x for x in found if x.place.folder is None]
    if not own and anonymous:
        if without_model is not None:
            return Evaluation(
                problem=f"{anonymous[0].label} lies under no model's folder and names no model, and "
                f"{without_model}: it is not taken as this model's (give --reports the harness's "
                "logs/run_evaluation/RUN_ID folder, or import one model's predictions at a time)"
            )
        own = anonymous
    report = next((x for x in own if isinstance(x, Report)), None)
    logs = [x for x in own if isinstance(x, InstanceLog)]
    log = next((x for x in logs if x.apply_failed), logs[0] if logs else None)
    return Evaluation(report=report, log=log)


def _place(path: str, root_folder: str | None) -> Place:
    parts = path.split("/")  # (..., MODEL, INSTANCE, report.json)
    origin = "/".join(parts[:-2])
    if len(parts) >= 3:
        return Place(None if parts[-3] == EXPERIMENTS_LOGS else parts[-3], origin)
    # The instance's folder right under the reports folder: that folder is a model's only when it lies
    # where the harness puts one (run_evaluation/RUN_ID/MODEL).
    return Place(root_folder if len(parts) == 2 else None, origin)


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
    """Every prediction of the file (see :func:`parse_predictions`); ImportFailed listing every bad one."""
    try:
        raw = read_input_bytes(path, int(settings.RUNS_UPLOAD_MAX_BYTES))
    except InputError as exc:
        raise ImportFailed([ImportProblem(label, exc.message)]) from None
    return parse_predictions(raw, label)


def _entries(raw: bytes, label: str, problems: list[ImportProblem]) -> Iterable[tuple[str, str, Any]]:
    """(where, run name, parsed JSON) of each prediction, as the harness reads the file: a ``.json`` file
    is one document, a list of predictions or an object of them by instance id (SWE-agent's preds.json,
    whose values the harness takes); any other is JSON lines, blank lines skipped."""
    max_count = int(settings.RUNS_ZIP_MAX_MEMBERS)
    if label.lower().endswith(".json"):
        try:
            data = parse_json(raw, label)
        except InputError as exc:
            raise ImportFailed([ImportProblem(label, exc.message, exc.field or "")]) from None
        if isinstance(data, dict):
            data = list(data.values())
        if not isinstance(data, list):
            message = "a list of predictions, or an object of them by instance_id (SWE-agent's preds.json)"
            raise ImportFailed([ImportProblem(label, message)])
        if len(data) > max_count:
            raise ImportFailed([ImportProblem(label, f"more than {max_count} predictions")])
        return [(f"{label}: item {n}", f"item-{n}", item) for n, item in enumerate(data, start=1)]
    lines = raw.split(b"\n")
    if sum(1 for line in lines if line.strip()) > max_count:
        raise ImportFailed([ImportProblem(label, f"more than {max_count} predictions")])
    entries: list[tuple[str, str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{label}: line {number}"
        try:
            entries.append((where, f"line-{number}", parse_json(line, where)))
        except InputError as exc:
            column = f" ({exc.field.removeprefix('line 1 ')})" if exc.field else ""  # within this line
            problems.append(ImportProblem(where, exc.message + column))
    return entries


def parse_predictions(raw: bytes, label: str) -> list[Prediction]:
    """:func:`read_predictions` of the file's bytes, ``label`` its name (``.json``: one document)."""
    problems: list[ImportProblem] = []
    predictions: list[Prediction] = []
    seen: dict[tuple[str, str], str] = {}
    for where, name, data in _entries(raw, label, problems):
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
            problems.append(ImportProblem(where, f"the same instance and model as {seen[key]}"))
            continue
        seen[key] = where.removeprefix(f"{label}: ")
        predictions.append(Prediction(where, name, instance_id, model, patch or ""))
    if problems:
        raise ImportFailed(problems)
    if not predictions:
        raise ImportFailed([ImportProblem(label, "no predictions")])
    return predictions


def _kept(entry: dict[str, Any], label: str, where: str, problems: list[ImportProblem]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key in KEPT_FLAGS:
        if key not in entry:
            continue
        if not isinstance(entry[key], bool):
            problems.append(ImportProblem(label, "true or false", f"{where}.{key}"))
        kept[key] = entry[key]
    reason = entry.get("infra_failure_reason")
    if reason is not None:
        if not isinstance(reason, str) or len(reason) > MAX_REASON or "\x00" in reason:
            message = f"a string of at most {MAX_REASON} characters, no NUL"
            problems.append(ImportProblem(label, message, f"{where}.infra_failure_reason"))
        kept["infra_failure_reason"] = reason
    if kept.get("infra_failure") is True and entry.get("resolved") is True:
        problems.append(ImportProblem(label, "resolved and an infrastructure failure at once", where))
    return kept


def _read_report(
    file: ReportsFile, label: str, place: Place, problems: list[ImportProblem]
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
        before = len(problems)
        resolved = entry.get("resolved")
        if not isinstance(resolved, bool):
            problems.append(ImportProblem(label, "required: true or false", f"{where}.resolved"))
        applied = entry.get("patch_successfully_applied")
        if applied is not None and not isinstance(applied, bool):
            problems.append(ImportProblem(label, "true or false", f"{where}.patch_successfully_applied"))
        kept = _kept(entry, label, where, problems)
        own = place
        named = entry.get("model_name_or_path")  # not the harness's, but a report naming its model is its
        if named is not None:
            if not isinstance(named, str) or not named.strip() or len(named) > MAX_NAME:
                problems.append(ImportProblem(label, "a model's name", f"{where}.model_name_or_path"))
            elif place.folder is not None and model_folder(named) != place.folder:
                message = f"names model {named!r} but lies under the folder of {place.folder!r}"
                problems.append(ImportProblem(label, message, f"{where}.model_name_or_path"))
            else:
                own = Place(model_folder(named), place.origin)
        status = entry.get("tests_status", {})
        checked: dict[str, dict[str, list[str]]] = {}
        if not isinstance(status, dict):
            problems.append(ImportProblem(label, "a JSON object", f"{where}.tests_status"))
            continue
        for kind, lists in status.items():
            field_name = f"{where}.tests_status.{kind}"
            if kind not in TEST_STATUS_KEYS:
                problems.append(ImportProblem(label, f"one of {', '.join(TEST_STATUS_KEYS)}", field_name))
                continue
            if not isinstance(lists, dict) or set(lists) - {"success", "failure"}:
                problems.append(ImportProblem(label, "an object of success and failure lists", field_name))
                continue
            if not all(
                isinstance(names, list) and all(isinstance(n, str) and "\x00" not in n for n in names)
                for names in lists.values()
            ):
                problems.append(
                    ImportProblem(label, "success and failure are lists of test names", field_name)
                )
                continue
            checked[kind] = {k: list(v) for k, v in lists.items()}
        if len(problems) > before:
            continue
        assert isinstance(resolved, bool)
        reports[instance_id] = Report(label, own, resolved, applied, checked, kept)
    return reports


def read_reports(root: Path, label: str) -> Reports:
    """Every ``report.json`` under ``root`` (the harness's logs/run_evaluation/..., or an experiments
    submission), by instance id, and the ``run_instance.log`` of each instance with no report; ImportFailed
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
    resolved = root.resolve()
    root_folder = resolved.name if resolved.parent.parent.name == RUN_EVALUATION else None
    return _reports_of(found, label, root_folder)


def _opener(path: Path) -> Callable[[], IO[bytes]]:
    # The log is read in chunks up to the same bound (_read_log); opening it checks its type and size
    # first, so a FIFO or device put in the reports folder is refused, never waited on.
    return lambda: open_input_file(path, int(settings.ZIP_MAX_MEMBER_BYTES))


def read_reports_zip(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], label: str) -> Reports:
    """:func:`read_reports` of a zip of the reports folder (``members`` checked by checked_zip_members),
    read from the archive as it is. Its top is no model's folder: the zip's name says nothing."""
    found = [
        ReportsFile(
            path,
            functools.partial(zip_member_bytes, archive, info, where=path),
            functools.partial(archive.open, info),
        )
        for path, info in zip_files(members, label).items()
        if posixpath.basename(path) in (REPORT_NAME, INSTANCE_LOG_NAME)
    ]
    return _reports_of(found, label, None)


def _reports_of(files: list[ReportsFile], label: str, root_folder: str | None) -> Reports:
    reports = {posixpath.dirname(f.path) for f in files if posixpath.basename(f.path) == REPORT_NAME}
    problems: list[ImportProblem] = []
    found = Reports()
    first: dict[tuple[str, str | None, str], str] = {}
    for file in sorted(files, key=lambda f: PurePosixPath(f.path).parts):
        place = _place(file.path, root_folder)
        where = posixpath.join(label, file.path)
        if posixpath.basename(file.path) == INSTANCE_LOG_NAME:
            # A log is read only where the harness wrote no report: why it wrote none.
            if posixpath.dirname(file.path) in reports:
                continue
            try:
                apply_failed, timed_out = _read_log(file)
            except ZIP_READ_ERRORS as exc:
                problems.append(ImportProblem(where, f"cannot read: {exc}"))
                continue
            except InputError as exc:
                problems.append(ImportProblem(where, exc.message))
                continue
            instance = posixpath.basename(posixpath.dirname(file.path))
            found.logs.setdefault(instance, []).append(InstanceLog(where, place, apply_failed, timed_out))
            continue
        for instance_id, report in _read_report(file, where, place, problems).items():
            # One report per instance and model; under no model, one per folder (two such folders make the
            # layout ambiguous, said where a prediction would take one).
            key = (instance_id, report.place.folder, "" if report.place.folder else report.place.origin)
            if key in first:
                problems.append(
                    ImportProblem(where, f"a second report (the first: {first[key]})", instance_id)
                )
                continue
            first[key] = where
            found.by_instance.setdefault(instance_id, []).append(report)
    if problems:
        raise ImportFailed(problems)
    return found


def _read_log(file: ReportsFile) -> tuple[bool, str | None]:
    """Whether the harness's log says no way of applying the patch worked, and its line saying the tests
    timed out; read in chunks up to the bound of one zip member."""
    limit = int(settings.ZIP_MAX_MEMBER_BYTES)
    tail = b""
    size = 0
    timed_out: str | None = None
    with file.open() as log:
        while chunk := log.read(1 << 20):
            size += len(chunk)
            if size > limit:
                raise InputError(file.path, f"larger than {limit} bytes; refused")
            window = tail + chunk
            if APPLY_PATCH_FAIL in window:
                return True, None
            if timed_out is None and (match := TIMED_OUT.search(window)):
                timed_out = match.group().decode("ascii")
            tail = window[-LOG_OVERLAP:]
    return False, timed_out


@dataclass
class SweBenchImport(RunImport):
    """A run import, and the predictions the harness did not measure: stored as not measured (its
    infrastructure failed), or left out (not evaluated: no report), each a line naming it and why."""

    not_measured: list[str] = field(default_factory=list)
    not_evaluated: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = super().summary()
        if n := len(self.not_measured):
            text += f"; {n} run{pluralize(n)} not measured (the harness's infrastructure failed)"
        if n := len(self.not_evaluated):
            text += f"; {n} prediction{pluralize(n)} not evaluated by the harness, left out"
        return text

    def notes(self) -> list[str]:
        return [*self.not_measured, *self.not_evaluated]


def _grade(report: Report) -> dict[str, Any]:
    grade: dict[str, Any] = {"pass": report.resolved}
    if report.applied is not None:
        grade["patch_successfully_applied"] = report.applied
    grade.update(report.kept)
    grade["tests_status"] = report.tests_status
    return grade


def _runs(
    predictions: list[Prediction],
    reports: Reports,
    tasks: set[str],
    arm: str,
    repetition: int,
    label: str,
    outcome: SweBenchImport,
) -> list[RunFiles]:
    """Each prediction as the files of a run directory ``label/line-N``, in memory; those not evaluated
    are left out and listed in ``outcome``."""
    problems: list[ImportProblem] = []
    runs: list[RunFiles] = []
    without_model = reports.without_model(len({p.model for p in predictions}))
    for p in predictions:
        if p.instance_id not in tasks:
            problems.append(
                ImportProblem(p.where, f"no task {p.instance_id!r} in this repository", "instance_id")
            )
            continue
        found = _evaluation(p, reports, without_model)
        who = f"{p.where}: {p.instance_id} ({p.model})"
        grade: dict[str, Any] = {"pass": False}
        if found.problem is not None:
            problems.append(ImportProblem(p.where, found.problem, "instance_id"))
            continue
        if found.report is not None:
            grade = _grade(found.report)
            if found.report.infra_failure:
                reason = found.report.kept.get("infra_failure_reason") or "no reason given"
                outcome.not_measured.append(
                    f"{who}: not measured: the harness's infrastructure failed ({reason})"
                )
        elif found.log is not None and found.log.apply_failed:
            # The harness could apply none of the agent's patch and so wrote no report: the agent's doing,
            # a run that did not pass, never a reason to refuse the file.
            grade["patch_successfully_applied"] = False
        elif not p.patch.strip():
            pass  # an empty patch is not evaluated by the harness: the agent changed nothing, no pass
        elif found.log is not None:
            # The harness began and wrote no report (its tests timed out, or it broke down): nothing is known
            # of the patch, so it is left out rather than stored as a failure; the others are imported.
            why = found.log.timed_out or "no report.json and no failure to apply the patch"
            outcome.not_evaluated.append(f"{who}: not evaluated by the harness: {why} ({found.log.label})")
            continue
        else:
            others = sorted({x.place.folder or "" for x in reports.by_instance.get(p.instance_id, [])})
            elsewhere = f" (only under other models' folders: {', '.join(others)})" if others else ""
            problems.append(
                ImportProblem(
                    p.where,
                    f"no {REPORT_NAME} for this instance and model under the reports folder, nor a "
                    f"{INSTANCE_LOG_NAME}: the harness's output holds no evaluation of it{elsewhere}",
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
                posixpath.join(label, p.name),
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
) -> SweBenchImport:
    """Every prediction as a run of the repository, graded by its report; all or nothing, but for the
    predictions the harness did not evaluate, which are listed."""
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
) -> SweBenchImport:
    problems: list[ImportProblem] = []
    if len(arm) > MAX_NAME or "\x00" in arm:
        problems.append(ImportProblem("--arm", f"at most {MAX_NAME} characters, no NUL"))
    if not 0 <= repetition <= MAX_RUN_INT:
        problems.append(ImportProblem("--repetition", f"a whole number from 0 to {MAX_RUN_INT}"))
    if problems:
        raise ImportFailed(problems)
    # Both files are read before anything is refused, so one answer lists every bad line and every bad report.
    read: list[Prediction] = []
    found = Reports()
    try:
        read = predictions()
    except ImportFailed as exc:
        problems += exc.problems
    try:
        found = reports()
    except ImportFailed as exc:
        problems += exc.problems
    if problems:
        raise ImportFailed(problems)
    tasks = set(Task.objects.filter(repository=repository).values_list("task_id", flat=True))
    noted = SweBenchImport()
    runs = _runs(read, found, tasks, arm, repetition, predictions_label, noted)
    result = import_runs(repository, lambda _problems: runs, predictions_label, by)
    return SweBenchImport(**vars(result), not_measured=noted.not_measured, not_evaluated=noted.not_evaluated)


def import_swe_bench_upload(
    repository: Repository,
    predictions: IO[bytes] | Any,
    reports_zip: IO[bytes] | Any,
    *,
    arm: str,
    repetition: int,
    by: Actor,
) -> SweBenchImport:
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
    with open_zip(reports_zip, zip_label) as archive:
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
