"""The queue's filter choices (the tasks, items, arms and models with verdicts) read the verdicts once for
all four filters: one query at any size, where a pass per filter cost four joins over every verdict (seconds
each at 100,000 runs: benchmarks/report_at_scale.py)."""

from __future__ import annotations

from typing import Any

import pytest

from rubrics_app.models import ItemVerdict, Repository, RunGrade, Task
from rubrics_app.services.runs.queue import filter_choices
from tests.app.report_rows import bulk_runs

pytestmark = pytest.mark.django_db


def _tasks(repository: Repository, n: int) -> list[Task]:
    return Task.objects.bulk_create(
        Task(repository=repository, task_id=f"task-{i:03d}", spec_prompt="x") for i in range(n)
    )


def _expected(repository: Repository) -> dict[str, list[str]]:
    current = RunGrade.objects.filter(run__task__repository=repository).current()
    rows = ItemVerdict.objects.filter(judge__grade__in=current).values_list(
        "judge__grade__run__task__task_id", "item_id", "judge__grade__run__arm", "judge__grade__run__model"
    )
    return {name: sorted({row[i] for row in rows}) for i, name in enumerate(["task", "item", "arm", "model"])}


def test_one_query_gives_every_filters_values_at_two_sizes(
    repository: Repository, other_repository: Repository, django_assert_num_queries: Any
) -> None:
    bulk_runs(_tasks(repository, 2), ["a"], ["claude-x"], 2)
    bulk_runs(_tasks(other_repository, 12), ["a", "b", "c"], ["claude-x", "gpt-y"], 5)
    for repo, tasks in ((repository, 2), (other_repository, 12)):
        with django_assert_num_queries(1):
            choices = filter_choices(repo)
        assert choices == _expected(repo)
        assert len(choices["task"]) == tasks
    assert filter_choices(other_repository)["arm"] == ["a", "b", "c"]
    assert filter_choices(other_repository)["item"] == ["B1", "N1"]


def test_a_repository_without_verdicts_has_no_choices(repository: Repository) -> None:
    assert filter_choices(repository) == {"task": [], "item": [], "arm": [], "model": []}
