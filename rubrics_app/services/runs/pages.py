"""What the repository, task and run pages show of agent runs: counts, a page of runs, a run's grades.

Read only, for the views: runs counted or listed a page at a time, their diffs never loaded.
"""

from __future__ import annotations

from typing import Any

from rubrics_app.models import AgentRun, Repository, RubricRevision, RunGrade, Task
from rubrics_app.services.paging import Page, page_of


def repository_runs_summary(repository: Repository) -> dict[str, Any]:
    """Runs per task (counted, never loading a diff), queue sizes, and the tasks whose admitted revision
    needs re-review. Runs are counted once each, however many grades they have; graded: the runs with a
    grade, so with a current one (``RunGrade.objects.current()``: a run with any grade has one)."""
    from django.db.models import Count, Q

    from rubrics_app.models import RevisionStatus
    from rubrics_app.services.rubrics.rereview import needs_re_review
    from rubrics_app.services.runs.queue import disagreement_counts

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
