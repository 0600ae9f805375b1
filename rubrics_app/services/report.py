"""The report page's data: the repository's graded runs as ``grading.report.GradedRun`` records, and the
report ``grading.report.build_report`` computes from them, cached.

This is the one place RunGrade rows become GradedRun records. It reads a fixed number of queries whatever
the number of runs (runs with their latest grade, the judges, the item verdicts, the labelled grades), and
never the diff table nor a grade's whole metrics.json copy: the few metrics.json fields a report needs
(``details.judge_skipped``, the scope and integrity results, the judge families) are read in the query.

Which grade: a run may have been graded more than once (another rubric content, another primary judge);
the report takes its newest grade, the one of the metrics.json imported last, which is what ``rubric
report`` reads from the run directory. Runs with no grade yet are not in the report (the page counts them).

Caching: the bootstrap costs seconds at ten thousand runs, so the report is cached under a key made of
everything it depends on: the runs' and grades' counts and newest ids (both are only ever added), the
human verdicts, the tasks' base dates and prompts, the revisions' statuses, the training cutoffs and the
filters. Any change gives a new key, so a cached report is never stale; the key costs a few small queries.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Exists, F, Max, OuterRef, QuerySet
from django.db.models.functions import Length

from grading.errors import InputError
from grading.report import DEFAULT_BOOTSTRAP, DEFAULT_SEED, GradedRun, JudgeVerdicts, Report, build_report
from grading.report_files import parse_date
from rubrics_app.models import Repository, RevisionStatus, RubricRevision, Task
from rubrics_app.models_runs import AgentRun, HumanVerdict, ItemVerdict, JudgeGrade, JudgeRole, RunGrade
from rubrics_app.services.queue import human_mergeable

FILTERS = ("task", "arm", "model", "prompt_style")
PROMPT_STYLES = ("spec", "issue")
CACHE_SECONDS = 24 * 3600  # the key changes with the data; this only bounds how long an unused one stays
_CACHE_VERSION = "report-v1"


@dataclass
class ReportResult:
    """A report and what the page shows beside it."""

    report: Report
    runs: int  # runs in the report
    ungraded: int  # runs under the filters with no grade yet: not in the report
    grade_of_run: dict[str, int] = field(default_factory=dict)  # run id -> grade pk (queue links)


def clean_filters(raw: Any) -> dict[str, str]:
    """The filters of a request's query string: known names, non-empty, at most 200 characters."""
    filters = {name: str(raw.get(name, ""))[:200] for name in FILTERS if raw.get(name)}
    if filters.get("prompt_style") not in (*PROMPT_STYLES, None):
        del filters["prompt_style"]
    return filters


def task_prompt_style(spec_prompt: bool, issue_prompt: bool) -> str | None:
    """A task posed one way only has that style; with both prompts (or none) run.json must say."""
    if spec_prompt != issue_prompt:
        return "spec" if spec_prompt else "issue"
    return None


def cutoff_dates(repository: Repository, notes: list[str]) -> dict[str, date] | None:
    """The repository's training cutoffs as dates; None when there are none, so the report has no
    contamination split (as ``rubric report`` without ``--cutoffs``). The form saves only dates; a value
    written some other way (the admin) that is not one is left out, with a note."""
    if not repository.training_cutoffs:
        return None
    dates: dict[str, date] = {}
    for model, value in repository.training_cutoffs.items():
        try:
            dates[model] = parse_date(value, "training cutoffs", model)
        except InputError as exc:
            notes.append(f"{exc}: left out of the contamination split")
    return dates


# --- the cache key --------------------------------------------------------------------------------------


def _digest(rows: Any) -> str:
    return hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()


def _tasks(repository: Repository) -> list[tuple[int, str, str, int, int]]:
    return list(
        Task.objects.filter(repository=repository)
        .annotate(spec=Length("spec_prompt"), issue=Length("issue_prompt"))
        .order_by("pk")
        .values_list("pk", "task_id", "base_date", "spec", "issue")
    )


def _human_verdicts(repository: Repository) -> list[tuple[int, str, str]]:
    return list(
        HumanVerdict.objects.filter(grade__run__task__repository=repository)
        .order_by("grade_id", "item_id")
        .values_list("grade_id", "item_id", "verdict")
    )


def _state(repository: Repository) -> dict[str, Any]:
    """Everything the report depends on, small: the key's ingredients and what building it reuses."""
    runs = AgentRun.objects.filter(task__repository=repository).aggregate(n=Count("pk"), last=Max("pk"))
    grades = RunGrade.objects.filter(run__task__repository=repository).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    revisions = list(
        RubricRevision.objects.filter(task__repository=repository).order_by("pk").values_list("pk", "status")
    )
    return {
        "runs": runs,
        "grades": grades,
        "revisions": revisions,
        "tasks": _tasks(repository),
        "human": _human_verdicts(repository),
        "cutoffs": repository.training_cutoffs or {},
    }


def _cache_key(repository: Repository, state: dict[str, Any], filters: dict[str, str]) -> str:
    return f"{_CACHE_VERSION}:{repository.pk}:{_digest([state, filters, DEFAULT_BOOTSTRAP, DEFAULT_SEED])}"


# --- rows -> GradedRun ----------------------------------------------------------------------------------


def latest_grades(repository: Repository) -> QuerySet[RunGrade]:
    """Each run's newest grade."""
    newer = RunGrade.objects.filter(run_id=OuterRef("run_id"), pk__gt=OuterRef("pk"))
    return RunGrade.objects.filter(run__task__repository=repository).exclude(Exists(newer))


def _runs_query(repository: Repository, filters: dict[str, str]) -> QuerySet[AgentRun]:
    query = AgentRun.objects.filter(task__repository=repository)
    if filters.get("task"):
        query = query.filter(task__task_id=filters["task"])
    if "arm" in filters:
        query = query.filter(arm=filters["arm"])
    if "model" in filters:
        query = query.filter(model=filters["model"])
    return query


_GRADE_FIELDS = (
    "pk",
    "run_id",
    "run__task_id",
    "run__arm",
    "run__model",
    "run__prompt_style",
    "run__source",
    "run__repetition",
    "run__grade_json",
    "status",
    "mergeable",
    "merge_score",
    "provisional",
    "revision__status",
)
# The metrics.json fields a report reads, taken in the query so the whole copy is never loaded.
_DETAILS = {
    "judge_skipped": "metrics__details__judge_skipped",
    "in_scope": "metrics__details__scope__in_scope",
    "integrity_ok": "metrics__details__integrity__ok",
    "family_primary": "metrics__details__judge_families__primary",
    "family_second": "metrics__details__judge_families__second",
}


def _numeric_metrics(grade_json: Any) -> dict[str, float]:
    # grade.json's metrics: metrics.json holds the same (the import checks they are equal).
    if not isinstance(grade_json, dict):
        return {}
    return {
        k: float(v)
        for k, v in grade_json.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }


def _test_pass(status: str, judge_skipped: Any) -> bool | None:
    # As grading.report_files reads metrics.json: the judge runs only when the gate held.
    if status in ("mergeable", "judge_failure"):
        return True
    if status == "not_mergeable":
        return judge_skipped is None
    return None


def _judges(grade_ids: QuerySet[RunGrade]) -> dict[int, dict[str, dict[str, Any]]]:
    judges: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    by_pk: dict[int, dict[str, Any]] = {}
    for pk, grade_id, role, spec, scripted, failure, bypass in JudgeGrade.objects.filter(
        grade__in=grade_ids
    ).values_list("pk", "grade_id", "role", "judge", "scripted", "failure", "cache_bypass"):
        entry: dict[str, Any] = {
            "judge": spec,
            "scripted": scripted,
            "failure": failure or None,
            "bypass": bool(bypass),
            "blockers": {},
            "non_blockers": {},
            "previous": {},
        }
        judges[grade_id][role] = entry
        by_pk[pk] = entry
    for judge_id, item_id, kind, verdict, previous in ItemVerdict.objects.filter(
        judge__grade__in=grade_ids
    ).values_list("judge_id", "item_id", "kind", "verdict", "previous_verdict"):
        target = by_pk[judge_id]
        target["blockers" if kind == "blocker" else "non_blockers"][item_id] = verdict
        if previous:
            target["previous"][item_id] = previous
    return judges


def _verdicts(entry: dict[str, Any] | None, family: Any) -> JudgeVerdicts | None:
    if entry is None:
        return None
    return JudgeVerdicts(
        judge=entry["judge"],
        family=family if isinstance(family, str) else None,
        scripted=entry["scripted"],
        failure=entry["failure"],
        blockers=entry["blockers"],
        non_blockers=entry["non_blockers"],
        previous=entry["previous"] if entry["bypass"] and entry["previous"] else None,
    )


def _human_labels(grade_ids: set[int], human: list[tuple[int, str, str]]) -> dict[int, bool]:
    """A human's verdict on mergeable per grade, from the queue's labels (services.queue.human_mergeable)."""
    by_grade: dict[int, dict[str, str]] = defaultdict(dict)
    for grade_id, item_id, verdict in human:
        if grade_id in grade_ids:
            by_grade[grade_id][item_id] = verdict
    labels: dict[int, bool] = {}
    for grade in RunGrade.objects.filter(pk__in=list(by_grade)).order_by("pk"):
        value = human_mergeable(grade, by_grade[grade.pk])
        if value is not None:
            labels[grade.pk] = value
    return labels


def graded_runs(
    repository: Repository, filters: dict[str, str], state: dict[str, Any] | None = None
) -> tuple[list[GradedRun], dict[str, int], list[str]]:
    """The report's input under the filters: GradedRun records, the grade pk of each run id, and notes
    (tasks whose base_date is not a date)."""
    state = state or _state(repository)
    tasks: dict[int, tuple[str, date | None, str | None]] = {}
    notes: list[str] = []
    for pk, task_id, base_date, spec, issue in state["tasks"]:
        parsed: date | None = None
        if base_date:
            try:
                parsed = parse_date(base_date, task_id, "base_date")
            except InputError:
                notes.append(
                    f"task {task_id!r}: base_date {base_date!r} is not a date; its runs count as unknown"
                )
        tasks[pk] = (task_id, parsed, task_prompt_style(bool(spec), bool(issue)))
    grades = latest_grades(repository).filter(run__in=_runs_query(repository, filters))
    rows = list(grades.values(*_GRADE_FIELDS, **{k: F(v) for k, v in _DETAILS.items()}))
    judges = _judges(grades)
    labels = _human_labels({r["pk"] for r in rows}, state["human"])
    runs: list[GradedRun] = []
    grade_of_run: dict[str, int] = {}
    for row in rows:
        task_id, base_date, task_style = tasks[row["run__task_id"]]
        style = row["run__prompt_style"] or task_style
        if filters.get("prompt_style") and style != filters["prompt_style"]:
            continue
        run_id = (
            row["run__source"] or f"{task_id}/{row['run__arm']}/{row['run__model']}/{row['run__repetition']}"
        )
        in_scope, integrity_ok = row["in_scope"], row["integrity_ok"]
        checks = None if in_scope is None or integrity_ok is None else bool(in_scope) and bool(integrity_ok)
        # Stored provisional as imported; a draft revision admitted since makes it count as admitted.
        provisional = row["provisional"] and row["revision__status"] in (None, RevisionStatus.DRAFT)
        judged = judges.get(row["pk"], {})
        runs.append(
            GradedRun(
                run=run_id,
                task=task_id,
                arm=row["run__arm"],
                model=row["run__model"],
                prompt_style=style,
                base_date=base_date,
                status=row["status"],
                test_pass=_test_pass(row["status"], row["judge_skipped"]),
                mergeable=row["mergeable"],
                merge_score=row["merge_score"],
                checks_passed=checks,
                metrics=_numeric_metrics(row["run__grade_json"]),
                primary=_verdicts(judged.get(JudgeRole.PRIMARY), row["family_primary"]),
                second=_verdicts(judged.get(JudgeRole.SECOND), row["family_second"]),
                provisional=provisional,
                human_mergeable=labels.get(row["pk"]),
            )
        )
        grade_of_run[run_id] = row["pk"]
    return runs, grade_of_run, notes


def _ungraded(repository: Repository, filters: dict[str, str]) -> int:
    query = _runs_query(repository, filters).filter(grades=None)
    if filters.get("prompt_style"):
        # Counted by the run's own style only: the task's is applied in Python for graded runs.
        query = query.filter(prompt_style__in=[filters["prompt_style"], ""])
    return query.count()


def repository_report(repository: Repository, filters: dict[str, str]) -> ReportResult:
    """The report of the repository's graded runs under the filters, from the cache when nothing changed."""
    state = _state(repository)
    key = _cache_key(repository, state, filters)
    cached = cache.get(key)
    if isinstance(cached, ReportResult):
        return cached
    runs, grade_of_run, notes = graded_runs(repository, filters, state)
    cutoffs = cutoff_dates(repository, notes)
    report = build_report(runs, cutoffs=cutoffs, bootstrap=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED)
    ungraded = _ungraded(repository, filters)
    if ungraded:
        notes.append(f"{ungraded} runs have no grade yet (no metrics.json imported): not in this report")
    # The app's own warnings travel with the report, so the downloads say them too (the command line
    # refuses such input instead: there is nothing of it to compare).
    report.warnings[:0] = notes
    result = ReportResult(report=report, runs=len(runs), ungraded=ungraded, grade_of_run=grade_of_run)
    cache.set(key, result, CACHE_SECONDS)
    return result


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The tasks, arms and models that have runs (one query)."""
    rows = set(
        AgentRun.objects.filter(task__repository=repository)
        .values_list("task__task_id", "arm", "model")
        .distinct()
    )
    return {
        "task": sorted({r[0] for r in rows}),
        "arm": sorted({r[1] for r in rows}),
        "model": sorted({r[2] for r in rows}),
        "prompt_style": list(PROMPT_STYLES),
    }
