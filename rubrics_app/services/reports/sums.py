"""The report's input summed by the database (``grading.report_sums``): the current grades' report rows
(``ReportRow``, written by ``services.report_rows.refresh_report_rows`` beside each grade) added up in a few
aggregate queries, whatever the number of runs, plus a few small ones for what can change after a grade is
written (the tasks' base dates and prompts, the revisions' statuses, the human labels). Neither the diff
table nor metrics.json is read. ``services.reports.report`` computes and caches the report from these sums.

Which grade: a run may have been graded more than once (another rubric content, another primary judge);
the report takes its current grade (``ReportRow.current``, the grade's ``is_current``: against its task's
admitted revision with the repository's primary judge, else the newest), as the queue and every count do.
Runs with no grade yet are not in the report (the page counts them).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Q, QuerySet, Sum
from django.db.models.functions import Length

from grading import (
    Disagreement,
    GradedRun,
    InputError,
    JudgeCost,
    JudgeVerdicts,
    PartSums,
    ReportSums,
    VerdictGroup,
    grade_metrics,
    parse_date,
    run_disagreements,
    run_inclusion_probability,
)
from rubrics_app.models import (
    AgentRun,
    ReportRow,
    ReportVerdicts,
    Repository,
    RevisionStatus,
    RubricRevision,
    Task,
)
from rubrics_app.services.runs.queue import mergeable_from_labels, settled_labels


def task_prompt_style(spec_prompt: bool, issue_prompt: bool) -> str | None:
    """A task posed one way only has that style; with both prompts (or none) run.json must say."""
    if spec_prompt != issue_prompt:
        return "spec" if spec_prompt else "issue"
    return None


def _tasks(repository: Repository) -> list[tuple[int, str, str, int, int]]:
    return list(
        Task.objects.filter(repository=repository)
        .annotate(spec=Length("spec_prompt"), issue=Length("issue_prompt"))
        .order_by("pk")
        .values_list("pk", "task_id", "base_date", "spec", "issue")
    )


def _human_verdicts(repository: Repository) -> tuple[list[Any], list[Any]]:
    """Each pair's settled human verdict, per current grade (services.runs.queue.human_verdicts_by_grade):
    the labels stand for every grade with the same criterion wording, adjudication settles disagreements;
    and how those pairs were drawn (services.runs.queue.settled_labels)."""
    return settled_labels(repository)


def report_state(repository: Repository) -> dict[str, Any]:
    """Everything the report depends on, small: the key's ingredients and what building it reuses.

    The report rows stand for the grades and their verdicts: a row is only ever written whole, under a new
    id (services.report_rows deletes and inserts), so their count and newest id change with any of them."""
    runs = AgentRun.objects.filter(task__repository=repository).aggregate(n=Count("pk"), last=Max("pk"))
    rows = ReportRow.objects.filter(repository=repository).aggregate(n=Count("pk"), last=Max("pk"))
    revisions = list(
        RubricRevision.objects.filter(task__repository=repository).order_by("pk").values_list("pk", "status")
    )
    human, draws = _human_verdicts(repository)
    return {
        "runs": runs,
        "rows": rows,
        "revisions": revisions,
        "tasks": _tasks(repository),
        "human": human,
        "draws": draws,
        "cutoffs": repository.training_cutoffs or {},
        "judge": judges.judge if (judges := repository.judge_setting()) is not None else None,
    }


def current_rows(repository: Repository, filters: dict[str, str], tasks: Tasks) -> QuerySet[ReportRow]:
    """The report rows of the runs' current grades under the filters. A run's prompt style is its own
    (run.json's), else its task's (:meth:`Tasks.style`)."""
    query = ReportRow.objects.filter(repository=repository, current=True)
    if filters.get("task"):
        query = query.filter(task_id=tasks.pk_of(filters["task"]))
    if "arm" in filters:
        query = query.filter(arm=filters["arm"])
    if "model" in filters:
        query = query.filter(model=filters["model"])
    if wanted := filters.get("prompt_style"):
        posed = [pk for pk, (_, _, style) in tasks.by_pk.items() if style == wanted]
        query = query.filter(Q(prompt_style=wanted) | Q(prompt_style="", task_id__in=posed))
    return query.order_by()


class Decoded:
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

    def label_probability(
        self, items: str, human: bool | None, draws: dict[str, list[tuple[str, float]]] | None
    ) -> float | None:
        """The chance a labelled row's run had of being labelled (grading.run_inclusion_probability of the
        blockers in its ``human_items`` and its labels' ``draws``); None without a human verdict or draws."""
        judged = self.value(items)
        if human is None or draws is None or not judged:
            return None
        return run_inclusion_probability(judged, draws)

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


def labels_by_grade(state: dict[str, Any]) -> dict[int, dict[str, str]]:
    """The human labels of :func:`_state`, per grade: item id -> verdict."""
    labels: dict[int, dict[str, str]] = defaultdict(dict)
    for grade_id, item_id, verdict in state["human"]:
        labels[grade_id][item_id] = verdict
    return labels


def draws_by_grade(state: dict[str, Any]) -> dict[int, dict[str, list[tuple[str, float]]]]:
    """How the labels of :func:`_state` were drawn, per grade: item id -> (queue, inclusion probability)."""
    draws: dict[int, dict[str, list[tuple[str, float]]]] = defaultdict(dict)
    for grade_id, item_id, queue, probability in state["draws"]:
        draws[grade_id].setdefault(item_id, []).append((queue, probability))
    return draws


@dataclass
class Tasks:
    """The repository's tasks as the report reads them: per task pk, its id, base date and prompt style."""

    by_pk: dict[int, tuple[str, date | None, str | None]]
    notes: list[str]

    @classmethod
    def of(cls, state: dict[str, Any]) -> Tasks:
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

    def pk_of(self, task_id: str) -> int:
        """The pk of the task with this id; -1 (no task) when there is none."""
        return next((pk for pk, (name, _, _) in self.by_pk.items() if name == task_id), -1)

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
    """  # an f-string, yet no injection: the inner query is Django's, with its parameters apart
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _verdict_groups(
    rows: QuerySet[ReportRow], tasks: Tasks, decoded: Decoded
) -> tuple[list[VerdictGroup], dict[tuple[int, bool | None, int], list[Disagreement]]]:
    """The verdict groups of ``rows`` (one aggregate query, read from the report_row_verdicts index alone,
    and one for the distinct verdict texts), and the disagreements of a run of each group that has some,
    by (task pk, test pass, verdicts pk), under an empty run name."""
    groups = list(
        # Grouped in the index's order (the prompt style too, though the report does not need it): no sort.
        rows.values_list("task_id", "prompt_style", "test_pass", "checks_passed", "verdicts_id").annotate(
            n=Count("task"),  # a column of the index, as every other one here
            primary_cost=Sum("primary_cost"),
            primary_tree_cost=Sum("primary_tree_cost"),
            second_cost=Sum("second_cost"),
            second_tree_cost=Sum("second_tree_cost"),
        )
    )
    texts = {
        pk: (decoded.judge(primary), decoded.judge(second))
        for pk, primary, second in ReportVerdicts.objects.filter(
            pk__in=sorted({g[4] for g in groups})
        ).values_list("pk", "primary", "second")
    }
    out: list[VerdictGroup] = []
    disagreeing: dict[tuple[int, bool | None, int], list[Disagreement]] = {}
    items: dict[tuple[bool | None, int], list[Disagreement]] = {}
    for task_pk, _, passed, checks, verdicts_pk, n, *costs in groups:
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
                Disagreement(run="", task=task_id, item=d.item, primary=d.primary, second=d.second)
                for d in items[(passed, verdicts_pk)]
            ]
    return out, disagreeing


def labelled_runs(
    rows: QuerySet[ReportRow],
    labels: dict[int, dict[str, str]],
    tasks: Tasks,
    decoded: Decoded,
    draws: dict[int, dict[str, list[tuple[str, float]]]] | None = None,
) -> list[GradedRun]:
    """The runs among ``rows`` with a human verdict on mergeable and a mergeable outcome, as records of
    what the report reads of them: their task, the judge's outcome, the human verdict and the chance the
    run had of being labelled (grading.run_inclusion_probability of its labels' ``draws``, per grade).
    Few: one query for the labelled grades' rows."""
    out = []
    columns = ("grade_id", "task_id", "name", "status", "test_pass", "mergeable", "human_items",
               "human_checks", "arm", "model", "checks_passed")  # fmt: skip
    for row in rows.filter(grade_id__in=sorted(labels)).values_list(*columns):
        grade_pk, task_pk, name, status, passed, mergeable, items, checks, arm, model, run_checks = row
        human = decoded.human(items, checks, labels.get(grade_pk))
        probability = decoded.label_probability(
            items, human, None if draws is None else draws.get(grade_pk, {})
        )
        if human is not None and mergeable is not None:
            out.append(
                GradedRun(
                    run=name,
                    task=tasks.by_pk[task_pk][0],
                    arm=arm,
                    model=model,
                    checks_passed=run_checks,
                    status=status,
                    test_pass=passed,
                    mergeable=mergeable,
                    human_mergeable=human,
                    label_probability=probability,
                )
            )
    return out


def report_sums(
    repository: Repository, filters: dict[str, str], state: dict[str, Any] | None = None
) -> tuple[ReportSums, dict[str, int], list[str]]:
    """The report's input under the filters, summed by the database (grading.report_sums): the parts and
    the verdict groups are a few aggregate queries over the current grades' report rows, whatever the
    number of runs; a run's disagreements are its verdict group's, under the names of the runs of the
    groups that have some; the labelled runs are read one by one (few). Also the grade pk of each run
    listed in a disagreement (the page links them to the queue), and notes (tasks whose base_date is not a
    date)."""
    state = state or report_state(repository)
    tasks = Tasks.of(state)
    rows = current_rows(repository, filters, tasks)
    decoded = Decoded()
    # Stored provisional as graded; a draft revision approved or admitted since makes it count as admitted.
    draft = {pk for pk, status in state["revisions"] if status == RevisionStatus.DRAFT}
    parts = _Parts(tasks)
    _add_outcomes(parts, rows, decoded, draft)
    _add_metrics(parts, rows, decoded)
    verdicts, disagreeing = _verdict_groups(rows, tasks, decoded)
    disagreements, grade_of_run = _named_disagreements(rows, disagreeing)
    labelled = labelled_runs(rows, labels_by_grade(state), tasks, decoded, draws_by_grade(state))
    sums = ReportSums(list(parts.sums.values()), verdicts, disagreements, labelled)
    return sums, grade_of_run, tasks.notes


@dataclass
class _Parts:
    """The report's parts (task, arm, model, prompt style) as they are summed, made on first use."""

    tasks: Tasks
    sums: dict[tuple[int, str, str, str | None], PartSums] = field(default_factory=dict)

    def of(self, task_pk: int, arm: str, model: str, run_style: str) -> PartSums:
        """The part of a run of this task, arm, model and prompt style (its own, else its task's)."""
        style = self.tasks.style(task_pk, run_style)
        key = (task_pk, arm, model, style)
        found = self.sums.get(key)
        if found is None:
            task_id, base_date, _ = self.tasks.by_pk[task_pk]
            found = self.sums[key] = PartSums(task_id, arm, model, style, base_date)  # type: ignore[arg-type]
        return found


def _add_outcomes(parts: _Parts, rows: QuerySet[ReportRow], decoded: Decoded, draft: set[int]) -> None:
    """Each part's runs counted by outcome (status, test pass, mergeable, score, checks)."""
    # In the order of the report_row_outcomes index, and counting one of its columns (not the pk): the
    # index alone answers, in its order, with no sort.
    outcomes = rows.values_list(
        "task_id", "arm", "model", "prompt_style", "revision_id", "provisional", "status", "test_pass",
        "mergeable", "merge_score", "integrity_not_measured", "checks_passed",
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
        checks,
        n,
    ) in outcomes:
        parts.of(task_pk, arm, model, run_style).add(
            n,
            status=status,
            test_pass=passed,
            mergeable=mergeable,
            provisional=provisional and (revision is None or revision in draft),
            merge_score=score,
            integrity_not_measured=decoded.value(unmeasured),
            checks_passed=checks,
        )


def _add_metrics(parts: _Parts, rows: QuerySet[ReportRow], decoded: Decoded) -> None:
    """Each part's grade.json metrics: summed by PostgreSQL, or on SQLite (small) read once per group of
    runs with the same metrics, each text decoded once."""
    if connection.vendor == "postgresql":
        for task_pk, arm, model, run_style, name, kind, n, total, true in _metric_sums(rows):
            summed = parts.of(task_pk, arm, model, run_style)
            if kind == "number":
                summed.add_metric(name, total, n)
            else:
                summed.add_flag(name, true, n)
        return
    metrics = (
        rows.exclude(status="grader_failure")
        .values_list("task_id", "arm", "model", "prompt_style", "metrics")
        .annotate(n=Count("pk"))
    )
    for task_pk, arm, model, run_style, text, n in metrics:
        parts.of(task_pk, arm, model, run_style).add_metrics(n, *decoded.metrics(text))


def _named_disagreements(
    rows: QuerySet[ReportRow], disagreeing: dict[tuple[int, bool | None, int], list[Disagreement]]
) -> tuple[list[Disagreement], dict[str, int]]:
    """A run's disagreements are its group's (the same verdicts, test outcome and task), under its name:
    the names are read for the groups that have some. Also the grade pk of each run named."""
    disagreements: list[Disagreement] = []
    grade_of_run: dict[str, int] = {}
    for grade_pk, task_pk, name, passed, verdicts_pk in rows.filter(
        verdicts__in=sorted({key[2] for key in disagreeing}), test_pass=True
    ).values_list("grade_id", "task_id", "name", "test_pass", "verdicts_id"):
        found = disagreeing.get((task_pk, passed, verdicts_pk))
        if found:
            disagreements += [
                Disagreement(run=name, task=d.task, item=d.item, primary=d.primary, second=d.second)
                for d in found
            ]
            grade_of_run[name] = grade_pk
    return disagreements, grade_of_run
