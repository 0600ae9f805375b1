"""The report page's data: the repository's graded runs as ``grading.report.GradedRun`` records, and the
report ``grading.report.build_report`` computes from them, cached.

This is the one place grades become GradedRun records. They are read from the precomputed report rows
(``ReportRow``, written by ``services.report_rows.refresh_report_rows`` beside each grade): one query on
one table for the runs, whatever their number, plus a few small ones for what can change after a grade is
written (the tasks' base dates and prompts, the revisions' statuses, the human labels). Neither the diff
table nor metrics.json is read.

Which grade: a run may have been graded more than once (another rubric content, another primary judge);
the report takes its current grade (``RunGrade.objects.current()``: against its task's admitted revision
with the repository's primary judge, else the newest), as the queue and every count do. Runs with no grade
yet are not in the report (the page counts them).

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
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import Length
from django.template.defaultfilters import pluralize

from grading import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    Disagreement,
    GradedRun,
    InputError,
    JudgeCost,
    JudgeVerdicts,
    LabelTarget,
    PartSums,
    Report,
    ReportSums,
    VerdictGroup,
    grade_metrics,
    parse_date,
    report_from_sums,
    report_label_target,
    run_disagreements,
)
from rubrics_app.models import (
    AgentRun,
    HumanVerdict,
    ItemKind,
    JudgeSetting,
    ReportRow,
    ReportVerdicts,
    Repository,
    RevisionStatus,
    RubricItem,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.queue import mergeable_from_labels
from rubrics_app.services.report_rows import refresh_report_rows

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
    """Everything the report depends on, small: the key's ingredients and what building it reuses.

    The report rows stand for the grades and their verdicts: a row is only ever written whole, under a new
    id (services.report_rows deletes and inserts), so their count and newest id change with any of them."""
    runs = AgentRun.objects.filter(task__repository=repository).aggregate(n=Count("pk"), last=Max("pk"))
    rows = ReportRow.objects.filter(repository=repository).aggregate(n=Count("pk"), last=Max("pk"))
    revisions = list(
        RubricRevision.objects.filter(task__repository=repository).order_by("pk").values_list("pk", "status")
    )
    return {
        "runs": runs,
        "rows": rows,
        "revisions": revisions,
        "tasks": _tasks(repository),
        "human": _human_verdicts(repository),
        "cutoffs": repository.training_cutoffs or {},
        "judge": JudgeSetting.objects.filter(repository=repository).values_list("judge", flat=True).first(),
    }


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


def _current_rows(
    repository: Repository, filters: dict[str, str], task_pks: dict[str, int]
) -> QuerySet[ReportRow]:
    """The report rows of the runs' current grades under the filters (but the prompt style, which is the
    task's where the run does not say: applied to the groups these rows are summed in)."""
    query = ReportRow.objects.filter(repository=repository, current=True)
    if filters.get("task"):
        query = query.filter(task_id=task_pks.get(filters["task"], -1))
    if "arm" in filters:
        query = query.filter(arm=filters["arm"])
    if "model" in filters:
        query = query.filter(model=filters["model"])
    return query.order_by()


class _Decoded:
    """The rows' JSON texts decoded, each distinct text once: runs of a task mostly share their judges'
    verdicts, so ten thousand rows hold far fewer texts. JudgeVerdicts is frozen, so one object can serve
    every run that holds it."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.verdicts: dict[str, JudgeVerdicts | None] = {}
        self.split: dict[str, tuple[dict[str, float], dict[str, bool]]] = {}

    def metrics(self, text: str) -> tuple[dict[str, float], dict[str, bool]]:
        """A row's grade.json metrics, split into the numeric and the true/false ones."""
        try:
            return self.split[text]
        except KeyError:
            split = self.split[text] = grade_metrics(json.loads(text))
            return split

    def value(self, text: str) -> Any:
        try:
            return self.values[text]
        except KeyError:
            value = self.values[text] = json.loads(text)
            return value

    def judge(self, text: str) -> JudgeVerdicts | None:
        try:
            return self.verdicts[text]
        except KeyError:
            data = json.loads(text)
            verdicts = self.verdicts[text] = None if data is None else JudgeVerdicts(**data)
            return verdicts

    def human(self, items: str, checks: bool, labels: dict[str, str] | None) -> bool | None:
        """A row's human verdict on mergeable from its ``human_items`` and ``human_checks`` and the labels
        given on its grade (None: none given)."""
        if labels is None or (judged := self.value(items)) is None:
            return None
        return mergeable_from_labels(judged, checks, labels)


def _labels_by_grade(state: dict[str, Any]) -> dict[int, dict[str, str]]:
    """The human labels of :func:`_state`, per grade: item id -> verdict."""
    labels: dict[int, dict[str, str]] = defaultdict(dict)
    for grade_id, item_id, verdict in state["human"]:
        labels[grade_id][item_id] = verdict
    return labels


@dataclass
class _Tasks:
    """The repository's tasks as the report reads them: per task pk, its id, base date and prompt style."""

    by_pk: dict[int, tuple[str, date | None, str | None]]
    notes: list[str]

    @classmethod
    def of(cls, state: dict[str, Any]) -> _Tasks:
        by_pk: dict[int, tuple[str, date | None, str | None]] = {}
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
            by_pk[pk] = (task_id, parsed, task_prompt_style(bool(spec), bool(issue)))
        return cls(by_pk, notes)

    def style(self, task_pk: int, run_style: str) -> str | None:
        """A run's prompt style: its own (run.json's), else its task's."""
        return run_style or self.by_pk[task_pk][2]


def _metric_sums(rows: QuerySet[ReportRow]) -> list[tuple[Any, ...]]:
    """PostgreSQL: the grade.json metrics of ``rows`` that are not grader failures, summed by the database
    per (task pk, arm, model, run prompt style, metric): its kind ("number" or "boolean"), the runs that
    reported it, the exact sum of a number's values (numeric, from the JSON text: what
    ``grading.report_sums.exact`` makes of each) and how many said true. The metrics are stored as JSON text
    (``services.report_rows.report_metrics``: finite numbers and true/false values only)."""
    inner, params = (
        rows.exclude(status="grader_failure")
        .values("task_id", "arm", "model", "prompt_style", "metrics")
        .query.sql_with_params()
    )
    sql = f"""
        SELECT r.task_id, r.arm, r.model, r.prompt_style, m.key, jsonb_typeof(m.value), count(*),
               sum(CASE WHEN jsonb_typeof(m.value) = 'number' THEN (m.value #>> '{{}}')::numeric END),
               count(*) FILTER (WHERE m.value = 'true'::jsonb)
        FROM ({inner}) r CROSS JOIN LATERAL jsonb_each(r.metrics::jsonb) m
        GROUP BY 1, 2, 3, 4, 5, 6
    """  # noqa: S608 -- the inner query is Django's, with its parameters apart
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _verdict_groups(
    rows: QuerySet[ReportRow], tasks: _Tasks, wanted_style: str | None
) -> tuple[list[VerdictGroup], dict[tuple[int, bool | None, int], list[Disagreement]]]:
    """The verdict groups of ``rows`` (one aggregate query, read from the report_row_verdicts index alone,
    and one for the distinct verdict texts), and the disagreements of a run of each group that has some,
    by (task pk, test pass, verdicts pk), under an empty run name."""
    groups = list(
        rows.values_list("task_id", "prompt_style", "test_pass", "checks_passed", "verdicts_id").annotate(
            n=Count("task"),  # a column of the index, as every other one here
            primary_cost=Sum("primary_cost"),
            primary_tree_cost=Sum("primary_tree_cost"),
            second_cost=Sum("second_cost"),
            second_tree_cost=Sum("second_tree_cost"),
        )
    )
    decoded = _Decoded()
    texts = {
        pk: (decoded.judge(primary), decoded.judge(second))
        for pk, primary, second in ReportVerdicts.objects.filter(
            pk__in=sorted({g[4] for g in groups})
        ).values_list("pk", "primary", "second")
    }
    out: list[VerdictGroup] = []
    disagreeing: dict[tuple[int, bool | None, int], list[Disagreement]] = {}
    items: dict[tuple[bool | None, int], list[Disagreement]] = {}
    for task_pk, run_style, passed, checks, verdicts_pk, n, *costs in groups:
        if wanted_style and tasks.style(task_pk, run_style) != wanted_style:
            continue
        task_id = tasks.by_pk[task_pk][0]
        primary, second = texts[verdicts_pk]
        out.append(
            VerdictGroup(
                task=task_id,
                test_pass=passed,
                checks_passed=checks,
                primary=primary,
                second=second,
                runs=n,
                primary_cost=JudgeCost(costs[0], costs[1]),
                second_cost=JudgeCost(costs[2], costs[3]),
            )
        )
        if (passed, verdicts_pk) not in items:  # the same for every task: the verdicts say it all
            items[(passed, verdicts_pk)] = run_disagreements("", "", passed, primary, second)
        if items[(passed, verdicts_pk)]:
            disagreeing[(task_pk, passed, verdicts_pk)] = [
                d.model_copy(update={"task": task_id}) for d in items[(passed, verdicts_pk)]
            ]
    return out, disagreeing


def _labelled_runs(
    rows: QuerySet[ReportRow],
    labels: dict[int, dict[str, str]],
    tasks: _Tasks,
    wanted_style: str | None,
    decoded: _Decoded,
) -> list[GradedRun]:
    """The runs among ``rows`` with a human verdict on mergeable and a mergeable outcome, as records of
    what the report reads of them: their task, the judge's outcome and the human verdict. Few: one query
    for the labelled grades' rows."""
    out = []
    for grade_pk, task_pk, name, run_style, status, passed, mergeable, items, checks in rows.filter(
        grade_id__in=sorted(labels)
    ).values_list(
        "grade_id", "task_id", "name", "prompt_style", "status", "test_pass", "mergeable", "human_items",
        "human_checks",
    ):  # fmt: skip
        if wanted_style and tasks.style(task_pk, run_style) != wanted_style:
            continue
        human = decoded.human(items, checks, labels.get(grade_pk))
        if human is not None and mergeable is not None:
            out.append(
                GradedRun(
                    run=name,
                    task=tasks.by_pk[task_pk][0],
                    status=status,
                    test_pass=passed,
                    mergeable=mergeable,
                    human_mergeable=human,
                )
            )
    return out


def report_sums(
    repository: Repository, filters: dict[str, str], state: dict[str, Any] | None = None
) -> tuple[ReportSums, dict[str, int], list[str]]:
    """The report's input under the filters, summed by the database (grading.report_sums): the parts and
    the verdict groups are a few aggregate queries over the current grades' report rows, whatever the
    number of runs; the disagreements are read from the runs the review queue holds as such, and the
    labelled runs one by one (few). Also the grade pk of each run listed in a disagreement (the page
    links them to the queue), and notes (tasks whose base_date is not a date)."""
    state = state or _state(repository)
    tasks = _Tasks.of(state)
    task_pks = {task_id: pk for pk, (task_id, _, _) in tasks.by_pk.items()}
    wanted_style = filters.get("prompt_style")
    rows = _current_rows(repository, filters, task_pks)
    decoded = _Decoded()
    # Stored provisional as graded; a draft revision approved or admitted since makes it count as admitted.
    draft = {pk for pk, status in state["revisions"] if status == RevisionStatus.DRAFT}

    parts: dict[tuple[int, str, str, str | None], PartSums] = {}

    def part(task_pk: int, arm: str, model: str, style: str | None) -> PartSums:
        key = (task_pk, arm, model, style)
        found = parts.get(key)
        if found is None:
            task_id, base_date, _ = tasks.by_pk[task_pk]
            found = parts[key] = PartSums(task_id, arm, model, style, base_date)  # type: ignore[arg-type]
        return found

    # In the order of the report_row_outcomes index, and counting one of its columns (not the pk): the
    # index alone answers, in its order, with no sort.
    outcomes = rows.values_list(
        "task_id", "arm", "model", "prompt_style", "revision_id", "provisional", "status", "test_pass",
        "mergeable", "merge_score", "integrity_not_measured",
    ).annotate(n=Count("task"))  # fmt: skip
    for (
        task_pk,
        arm,
        model,
        run_style,
        revision,
        provisional,
        status,
        passed,
        mergeable,
        score,
        unmeasured,
        n,
    ) in outcomes:
        style = tasks.style(task_pk, run_style)
        if wanted_style and style != wanted_style:
            continue
        part(task_pk, arm, model, style).add(
            n,
            status=status,
            test_pass=passed,
            mergeable=mergeable,
            provisional=provisional and (revision is None or revision in draft),
            merge_score=score,
            integrity_not_measured=decoded.value(unmeasured),
        )
    if connection.vendor == "postgresql":
        for task_pk, arm, model, run_style, name, kind, n, total, true in _metric_sums(rows):
            style = tasks.style(task_pk, run_style)
            if not (wanted_style and style != wanted_style):
                if kind == "number":
                    part(task_pk, arm, model, style).add_metric(name, total, n)
                else:
                    part(task_pk, arm, model, style).add_flag(name, true, n)
    else:  # SQLite, small: runs with the same metrics summed in one group, each text decoded once
        metrics = (
            rows.exclude(status="grader_failure")
            .values_list("task_id", "arm", "model", "prompt_style", "metrics")
            .annotate(n=Count("pk"))
        )
        for task_pk, arm, model, run_style, text, n in metrics:
            style = tasks.style(task_pk, run_style)
            if not (wanted_style and style != wanted_style):
                part(task_pk, arm, model, style).add_metrics(n, *decoded.metrics(text))

    verdicts, disagreeing = _verdict_groups(rows, tasks, wanted_style)
    # A run's disagreements are its group's (the same verdicts, test outcome and task), under its name:
    # the names are read for the groups that have some.
    disagreements: list[Disagreement] = []
    grade_of_run: dict[str, int] = {}
    for grade_pk, task_pk, name, run_style, passed, verdicts_pk in (
        rows.filter(verdicts__in=sorted({key[2] for key in disagreeing}), test_pass=True)
        .values_list("grade_id", "task_id", "name", "prompt_style", "test_pass", "verdicts_id")
        .order_by()
    ):
        found = disagreeing.get((task_pk, passed, verdicts_pk))
        if found and not (wanted_style and tasks.style(task_pk, run_style) != wanted_style):
            disagreements += [
                Disagreement(run=name, task=d.task, item=d.item, primary=d.primary, second=d.second)
                for d in found
            ]
            grade_of_run[name] = grade_pk

    labelled = _labelled_runs(rows, _labels_by_grade(state), tasks, wanted_style, decoded)
    sums = ReportSums(list(parts.values()), verdicts, disagreements, labelled)
    return sums, grade_of_run, tasks.notes


def _ungraded(repository: Repository, filters: dict[str, str]) -> int:
    query = _runs_query(repository, filters).filter(grades=None)
    if filters.get("prompt_style"):
        # Counted by the run's own style only: the task's is applied in Python for graded runs.
        query = query.filter(prompt_style__in=[filters["prompt_style"], ""])
    return query.count()


def repository_report(repository: Repository, filters: dict[str, str]) -> ReportResult:
    """The report of the repository's graded runs under the filters, from the cache when nothing changed."""
    state = _state(repository)
    if _fill_missing_rows(repository, state["rows"]["n"]):
        state = _state(repository)
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
    state = _state(repository)
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
    state = state or _state(repository)
    tasks = _Tasks.of(state)
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
    labelled = _labelled_runs(current, _labels_by_grade(state), tasks, None, _Decoded())
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
