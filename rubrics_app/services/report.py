"""The report page's data: the report ``grading.report.report_from_sums`` computes from the repository's
runs as the database sums them (``services.report_sums``), cached; and what the page shows beside it (the
filters and their choices, the training cutoffs, the blockers' criteria, the queue's label target).

Caching: the report is cached under a key made of everything it depends on: the runs' count and newest id,
the report rows' count and newest id (a row is only ever written whole, under a new id), the human
verdicts, the tasks' base dates and prompts, the revisions' statuses, the primary judge (which grade is
current depends on it and on the admitted revisions), the training cutoffs and the filters.
Any change gives a new key, so a cached report is never stale; the key costs a few small queries.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet
from django.template.defaultfilters import pluralize

from grading import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    InputError,
    LabelTarget,
    Report,
    parse_date,
    report_from_sums,
    report_label_target,
)
from rubrics_app.models import (
    AgentRun,
    ItemKind,
    ReportRow,
    Repository,
    RubricItem,
    RunGrade,
    Task,
)
from rubrics_app.services.report_rows import refresh_report_rows
from rubrics_app.services.report_sums import (
    Decoded,
    Tasks,
    labelled_runs,
    labels_by_grade,
    report_state,
    report_sums,
)

FILTERS = ("task", "arm", "model", "prompt_style")
PROMPT_STYLES = ("spec", "issue")
CACHE_SECONDS = 24 * 3600  # the key changes with the data; this only bounds how long an unused one stays
_CACHE_VERSION = "report-v4"  # the Report's shape: a cached one of an older shape is never served


@dataclass
class ReportResult:
    """A report and what the page shows beside it."""

    report: Report
    runs: int  # runs in the report
    ungraded: int  # runs under the filters with no grade yet: not in the report
    # run id -> grade pk, of the runs in a disagreement (the page links them to the queue)
    grade_of_run: dict[str, int] = field(default_factory=dict)


def clean_filters(raw: Any) -> dict[str, str]:
    """The filters of a request's query string: known names, non-empty, at most 200 characters."""
    filters = {name: str(raw.get(name, ""))[:200] for name in FILTERS if raw.get(name)}
    if filters.get("prompt_style") not in (*PROMPT_STYLES, None):
        del filters["prompt_style"]
    return filters


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


def _fill_missing_rows(repository: Repository, rows: int) -> bool:
    """Grades written without their report row (whatever wrote them did not call
    ``services.report_rows.refresh_report_rows``) get one now; True when there were any. One count query
    when there are none."""
    grades = RunGrade.objects.filter(run__task__repository=repository)
    if grades.count() == rows:
        return False
    try:
        with transaction.atomic():
            return refresh_report_rows(grades.filter(report_row=None).values_list("pk", flat=True)) > 0
    except IntegrityError:
        return True  # another request filled them at the same moment


def _cache_key(repository: Repository, state: dict[str, Any], filters: dict[str, str]) -> str:
    return f"{_CACHE_VERSION}:{repository.pk}:{_digest([state, filters, DEFAULT_BOOTSTRAP, DEFAULT_SEED])}"


# --- rows -> GradedRun ----------------------------------------------------------------------------------


def _runs_query(repository: Repository, filters: dict[str, str]) -> QuerySet[AgentRun]:
    query = AgentRun.objects.filter(task__repository=repository)
    if filters.get("task"):
        query = query.filter(task__task_id=filters["task"])
    if "arm" in filters:
        query = query.filter(arm=filters["arm"])
    if "model" in filters:
        query = query.filter(model=filters["model"])
    return query


def _ungraded(repository: Repository, filters: dict[str, str]) -> int:
    query = _runs_query(repository, filters).filter(grades=None)
    if filters.get("prompt_style"):
        # Counted by the run's own style only: the task's is applied in Python for graded runs.
        query = query.filter(prompt_style__in=[filters["prompt_style"], ""])
    return query.count()


def repository_report(repository: Repository, filters: dict[str, str]) -> ReportResult:
    """The report of the repository's graded runs under the filters, from the cache when nothing changed."""
    state = report_state(repository)
    if _fill_missing_rows(repository, state["rows"]["n"]):
        state = report_state(repository)
    key = _cache_key(repository, state, filters)
    cached = cache.get(key)
    if isinstance(cached, ReportResult):
        return cached
    sums, grade_of_run, notes = report_sums(repository, filters, state)
    cutoffs = cutoff_dates(repository, notes)
    report = report_from_sums(sums, cutoffs=cutoffs, bootstrap=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED)
    ungraded = _ungraded(repository, filters)
    if ungraded:
        notes.append(
            f"{ungraded} run{pluralize(ungraded)} {'has' if ungraded == 1 else 'have'} no grade yet "
            "(no metrics.json imported): not in this report"
        )
    # The app's own warnings travel with the report, so the downloads say them too (the command line
    # refuses such input instead: there is nothing of it to compare).
    report.warnings[:0] = notes
    runs = sum(p.runs for p in sums.parts)
    result = ReportResult(report=report, runs=runs, ungraded=ungraded, grade_of_run=grade_of_run)
    cache.set(key, result, CACHE_SECONDS)
    return result


def label_target(repository: Repository) -> LabelTarget | None:
    """The review queue's target (grading.power): how many more labelled runs would bring the corrected
    mergeable rate of the repository's report to ±5 points. Computed without the report
    (:func:`cheap_label_target`, equal to the report's) and cached apart under the report's key: never
    read from a cached report, whose unpickling (a grade per run) costs more than computing the target."""
    state = report_state(repository)
    target_key = f"{_cache_key(repository, state, {})}:label-target"
    target = cache.get(target_key)
    if isinstance(target, LabelTarget):
        return target
    target = cheap_label_target(repository, state)
    cache.set(target_key, target, CACHE_SECONDS)
    return target


# A measured run (grading's GradedRun.measured, which the rates count) as a condition on its report row:
# mergeable decided and whether it passed the tests known. GradedRun takes both from the row unchanged.
MEASURED = Q(mergeable__isnull=False, test_pass__isnull=False)


def cheap_label_target(repository: Repository, state: dict[str, Any] | None = None) -> LabelTarget | None:
    """The report's label target (``repository_report(...).report.label_target``) without the report: the
    per-task sums of the measured runs in one aggregate query over the current grades' report rows (an
    index-only scan), and the few labelled runs, through grading's own function
    (``grading.report_label_target``)."""
    state = state or report_state(repository)
    tasks = Tasks.of(state)
    current = ReportRow.objects.filter(repository=repository, current=True).order_by()
    sums = (
        current.filter(MEASURED)
        .values("task_id")
        .annotate(
            # Counts of a column of the index (not of the pk), so the index alone answers (report_row_sums).
            measured=Count("task"),
            passed=Count("task", filter=Q(test_pass=True)),
            mergeable=Count("task", filter=Q(mergeable=True)),
        )
        .values_list("task_id", "measured", "passed", "mergeable")
    )
    per_task = [
        (n, passed, merged) for _, n, passed, merged in sorted(sums, key=lambda row: tasks.by_pk[row[0]][0])
    ]
    labelled = labelled_runs(current, labels_by_grade(state), tasks, Decoded())
    return report_label_target(per_task, labelled)


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The tasks, arms and models that have runs (two queries: the distinct (task, arm, model) of the runs,
    by task pk, which the runs' unique index answers without joining the tasks; then the tasks' ids)."""
    tasks = Task.objects.filter(repository=repository)
    rows = set(
        AgentRun.objects.filter(task__in=tasks.values("pk"))
        .values_list("task_id", "arm", "model")
        .order_by()
        .distinct()
    )
    names = dict(tasks.filter(pk__in={r[0] for r in rows}).values_list("pk", "task_id"))
    return {
        "task": sorted({names[r[0]] for r in rows}),
        "arm": sorted({r[1] for r in rows}),
        "model": sorted({r[2] for r in rows}),
        "prompt_style": list(PROMPT_STYLES),
    }


def blocker_criteria(repository: Repository, task_ids: list[str]) -> dict[str, dict[str, str]]:
    """Per task, each blocker id's criterion, for the failed-blocker histograms: the newest revision's
    text where revisions differ (one query over the tasks' blockers)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    rows = (
        RubricItem.objects.filter(
            revision__task__repository=repository, revision__task__task_id__in=task_ids, kind=ItemKind.BLOCKER
        )
        .order_by("revision__task_id", "revision__number")
        .values_list("revision__task__task_id", "item_id", "criterion")
    )
    for task_id, item_id, criterion in rows:
        out[task_id][item_id] = criterion
    return dict(out)
