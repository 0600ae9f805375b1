"""Files ``rubric report`` reads: run directories (run.json, metrics.json), the tasks' task.json, the
training-cutoffs file and the human-labels file. Each becomes pydantic data for :mod:`grading.report.build`;
every problem is an InputError naming the file and the field.

metrics.json is read narrowly: only what a report needs, checked strictly, and keys this version does not
know are ignored, so files from newer graders still read. Files written before ``provisional`` existed do
not say whether their rubric was admitted; the report treats them as provisional.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    ValidationError,
)

from grading.checks.outcome import FRAMEWORK_METRICS, METRICS_FORMAT, OutcomeStatus, RunDetails
from grading.errors import InputError, InputErrors
from grading.loaders import load_run, load_task, validation_messages
from grading.report.models import GradedRun, JudgeVerdicts, Verdict, grade_metrics
from grading.schema import PromptStyle
from grading.strict_json import parse_json, read_json

# Top-level metrics.json keys that are the framework's, not grade.json metrics.
_FRAMEWORK_KEYS = frozenset(FRAMEWORK_METRICS) | {"format", "rubric_sha256", "provisional"}


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _VerdictRecord(_Lenient):
    item_id: str
    kind: Literal["blocker", "non_blocker"]
    verdict: Verdict
    tree_judged: StrictBool = False


class _UsageRecord(_Lenient):
    cost_usd: StrictInt | StrictFloat = 0.0
    cost_known: StrictBool = True


class MetricsJudge(_Lenient):
    """A judge's record in metrics.json's details, as far as a report reads it."""

    judge: str
    scripted: StrictBool = False
    verdicts: list[_VerdictRecord] = []
    failure: str | None = None
    previous_verdicts: dict[str, Verdict] | None = None
    usage: _UsageRecord = _UsageRecord()
    tree_usage: _UsageRecord = _UsageRecord()


class _ScopeRecord(_Lenient):
    in_scope: StrictBool


class _IntegrityRecord(_Lenient):
    ok: StrictBool


class _Families(_Lenient):
    primary: str | None = None
    second: str | None = None


class MetricsDetails(_Lenient):
    """metrics.json's ``details``, as far as a report reads them."""

    status: OutcomeStatus
    integrity_not_measured: list[str] = []  # absent in files written before it was recorded
    judge_skipped: str | None = None
    scope: _ScopeRecord | None = None
    integrity: _IntegrityRecord | None = None
    judge: MetricsJudge | None = None
    second_judge: MetricsJudge | None = None
    judge_families: _Families | None = None


Score = Annotated[StrictInt | StrictFloat, Field(ge=0, le=1)]


Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class _MetricsKeys(BaseModel):
    """metrics.json's framework keys, checked, and grade.json's metrics beside them (kept as extra keys)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    format: Literal[1] | None = None  # absent before the format was versioned
    mergeable: StrictBool | None
    merge_score: Score | None
    grader_failure: StrictBool
    judge_failure: StrictBool
    provisional: StrictBool | None = None
    rubric_sha256: str | None = None

    def grade_values(self) -> tuple[dict[str, float], dict[str, bool]]:
        """grade.json's metrics copied into metrics.json: the numeric ones and the true/false ones
        (:func:`grading.report.build.grade_metrics`)."""
        extra = self.model_extra or {}
        return grade_metrics({k: v for k, v in extra.items() if k not in _FRAMEWORK_KEYS})


class MetricsFile(_MetricsKeys):
    """metrics.json as ``rubric grade`` writes it (:func:`read_metrics`): the framework's keys, checked, and
    grade.json's metrics beside them (kept as extra keys; :meth:`grade_values`); the details as far as a
    report reads them."""

    details: MetricsDetails


class StrictMetricsFile(_MetricsKeys):
    """metrics.json read whole (:func:`read_metrics` with ``strict``), as the web app stores a grade: besides
    every check of :class:`MetricsFile`, the details are the grader's :class:`RunDetails` (each judge's
    verdicts, reasons, usage) and the rubric's hash is a sha256."""

    rubric_sha256: Sha256 | None = None
    details: RunDetails


def _judge(record: MetricsJudge | None, family: str | None) -> JudgeVerdicts | None:
    if record is None:
        return None
    return JudgeVerdicts(
        judge=record.judge,
        family=family,
        scripted=record.scripted,
        failure=record.failure,
        blockers={v.item_id: v.verdict for v in record.verdicts if v.kind == "blocker"},
        non_blockers={v.item_id: v.verdict for v in record.verdicts if v.kind == "non_blocker"},
        previous=record.previous_verdicts,
        tree_judged=[v.item_id for v in record.verdicts if v.tree_judged],
        cost_usd=float(record.usage.cost_usd),
        tree_cost_usd=float(record.tree_usage.cost_usd),
        cost_known=record.usage.cost_known and record.tree_usage.cost_known,
    )


def _test_pass(m: MetricsFile) -> bool | None:
    """``pass`` and the other gate entries held: the judge is called only then, so a run the judge was
    skipped on (settled by the gate) failed them. Unknown for grader failures and unmeasured runs."""
    status = m.details.status
    if status in ("mergeable", "judge_failure"):
        return True
    if status == "not_mergeable":
        return m.details.judge_skipped is None
    return None


@overload
def read_metrics(
    source: bytes | Path, name: str | Path = ..., *, strict: Literal[False] = False
) -> MetricsFile: ...


@overload
def read_metrics(
    source: bytes | Path, name: str | Path = ..., *, strict: Literal[True]
) -> StrictMetricsFile: ...


def read_metrics(
    source: bytes | Path, name: str | Path = "metrics.json", *, strict: bool = False
) -> MetricsFile | StrictMetricsFile:
    """metrics.json (its path, or its bytes named ``name`` in errors) as a :class:`MetricsFile`: strict JSON,
    a format this version reads, the framework's keys typed and consistent with ``details.status``.
    ``strict``: then also read whole, as a :class:`StrictMetricsFile` (what the web app stores). InputError
    (or InputErrors) naming the file and the field on any problem."""
    if isinstance(source, Path):
        name = source
        data = read_json(source)
    else:
        data = parse_json(source, name)
    if not isinstance(data, dict):
        raise InputError(name, "metrics.json is a JSON object")
    if "format" in data and (type(data["format"]) is not int or data["format"] != METRICS_FORMAT):
        raise InputError(
            name, f"format {data['format']!r} is not one this version reads ({METRICS_FORMAT})", "format"
        )
    try:
        m = MetricsFile.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(name, validation_messages(exc)) from None
    status = m.details.status
    expected = {"mergeable": True, "not_mergeable": False}.get(status)
    if m.mergeable is not expected:
        raise InputError(name, f"{m.mergeable} contradicts details.status {status!r}", "mergeable")
    if m.grader_failure != (status == "grader_failure"):
        raise InputError(name, f"{m.grader_failure} contradicts details.status {status!r}", "grader_failure")
    if m.judge_failure != (status == "judge_failure"):
        raise InputError(name, f"{m.judge_failure} contradicts details.status {status!r}", "judge_failure")
    if status == "mergeable" and m.merge_score is None:
        raise InputError(name, "a mergeable run has a merge_score", "merge_score")
    if not strict:
        return m
    try:
        return StrictMetricsFile.model_validate(data)
    except ValidationError as exc:
        raise InputErrors(name, validation_messages(exc)) from None


class TaskIndex:
    """The tasks directories given with ``--tasks``: ``<dir>/<task-id>/task.json``, the first directory
    holding a task wins. Each task.json is read once, however many runs name it."""

    def __init__(self, tasks_dirs: list[Path]) -> None:
        self.tasks_dirs = tasks_dirs
        self._tasks: dict[str, tuple[PromptStyle | None, date | None]] = {}

    def get(self, task: str, run_json: Path) -> tuple[PromptStyle | None, date | None]:
        """The task's prompt_style and base_date; InputError naming run.json when no directory holds it.
        A task that carries both prompts (§8) has no style of its own: run.json must say which its agent got,
        as the web app's report reads it."""
        if task not in self._tasks:
            self._tasks[task] = self._load(task, run_json)
        return self._tasks[task]

    def _load(self, task: str, run_json: Path) -> tuple[PromptStyle | None, date | None]:
        if task in (".", "..") or "/" in task or "\\" in task or "\0" in task:
            raise InputError(run_json, f"{task!r} is not a task id (one path component)", "task")
        task_dir = next((d / task for d in self.tasks_dirs if (d / task / "task.json").is_file()), None)
        if task_dir is None:
            where = ", ".join(str(d) for d in self.tasks_dirs)
            raise InputError(run_json, f"no {task}/task.json under --tasks {where}", "task")
        spec = load_task(task_dir)
        if spec.id != task:
            raise InputError(task_dir / "task.json", f"{spec.id!r} is not the task run.json names", "id")
        base_date = None
        if spec.base_date is not None:
            base_date = parse_date(spec.base_date, task_dir / "task.json", "base_date")
        return (spec.prompt_style if len(spec.prompt_variants()) == 1 else None), base_date


def parse_date(value: Any, source: str | Path, field: str) -> date:
    """An ISO date (``2026-01-05``; a datetime's date part is taken); InputError naming ``field``."""
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            try:
                return datetime.fromisoformat(value).date()
            except ValueError:
                pass
    raise InputError(source, f"{value!r} is not a date (YYYY-MM-DD)", field)


def read_graded_run(run_dir: Path, tasks: TaskIndex | None = None) -> GradedRun:
    """A run directory as a :class:`GradedRun`: run.json and metrics.json, and, when ``tasks`` is given,
    the task's task.json for its base_date and prompt_style (run.json's prompt_style wins)."""
    run_json = run_dir / "run.json"
    record = load_run(run_json)
    metrics = read_metrics(run_dir / "metrics.json")
    numeric, flags = metrics.grade_values()
    prompt_style = record.prompt_style
    base_date: date | None = None
    if tasks is not None:
        task_style, base_date = tasks.get(record.task, run_json)
        prompt_style = prompt_style or task_style
    d = metrics.details
    checks = None if d.scope is None or d.integrity is None else d.scope.in_scope and d.integrity.ok
    families = d.judge_families or _Families()
    return GradedRun(
        run=str(run_dir),
        task=record.task,
        arm=record.arm,
        model=record.model,
        prompt_style=prompt_style,
        base_date=base_date,
        status=d.status,
        test_pass=_test_pass(metrics),
        mergeable=metrics.mergeable,
        merge_score=metrics.merge_score,
        checks_passed=checks,
        metrics=numeric,
        flags=flags,
        integrity_not_measured=d.integrity_not_measured,
        primary=_judge(d.judge, families.primary),
        second=_judge(d.second_judge, families.second),
        provisional=metrics.provisional,
    )


def load_cutoffs(path: Path) -> dict[str, date]:
    """The training-cutoffs file: a JSON object, full model id -> ``YYYY-MM-DD``."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, 'expected a JSON object {"<model id>": "YYYY-MM-DD", ...}')
    return {model: parse_date(value, path, model) for model, value in data.items()}


def load_labels(path: Path) -> dict[Path, tuple[bool, float | None]]:
    """The human-labels file: a JSON object, run directory -> true (mergeable) or false, or
    ``{"mergeable": true|false, "inclusion_probability": p}`` with p in (0, 1] the chance the run had of
    being labelled (every run or none gives it; without it uniform sampling is assumed). A relative run
    directory is taken from the labels file's directory. Keys are returned resolved, with (verdict, p)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, 'expected a JSON object {"<run dir>": true|false, ...}')
    labels: dict[Path, tuple[bool, float | None]] = {}
    for run, value in data.items():
        probability: float | None = None
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"mergeable", "inclusion_probability"})
            if unknown:
                raise InputError(
                    path, "unknown key (mergeable, inclusion_probability)", f"{run}.{unknown[0]}"
                )
            probability = _probability(
                value.get("inclusion_probability"), path, f"{run}.inclusion_probability"
            )
            value = value.get("mergeable")
        if not isinstance(value, bool):
            raise InputError(path, f"{value!r} is not true or false (a human's verdict on mergeable)", run)
        if not run.strip():
            raise InputError(path, "a run directory is named", "(empty key)")
        resolved = (path.parent / run).resolve()
        if resolved in labels:
            raise InputError(path, "names the same run directory as another key", run)
        labels[resolved] = (value, probability)
    given = [p is not None for _, p in labels.values()]
    if any(given) and not all(given):
        missing = next(
            run for run, v in data.items() if not isinstance(v, dict) or "inclusion_probability" not in v
        )
        raise InputError(
            path,
            "missing, while other runs give it (every run gives it or none)",
            f"{missing}.inclusion_probability",
        )
    return labels


def _probability(value: Any, path: Path, where: str) -> float | None:
    """An inclusion probability: a number in (0, 1], or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InputError(
            path, f"{value!r} is not a probability in (0, 1] (the chance the run was labelled)", where
        )
    return float(value)
