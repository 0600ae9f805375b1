"""The task page lists its runs a page at a time, as the review queue does (issue 21 §7): only one page of
rows is rendered, the counts are over every run, and the page links lead on."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import AgentRun, Repository, Task
from tests.app.report_rows import bulk_runs

pytestmark = pytest.mark.django_db

RUN_LINK = re.compile(r'href="/repos/\d+/runs/(\d+)/">')


@pytest.fixture
def task(repository: Repository, settings: Any) -> Task:
    """One task with 2 arms x 1 model x 260 repetitions = 520 runs, 50 to a page."""
    settings.RUNS_QUEUE_PAGE_SIZE = 50
    task = Task.objects.create(
        repository=repository, task_id="many-runs", spec_prompt="x", base_date="2025-03-01"
    )
    assert bulk_runs([task], ["a", "b"], ["claude-x"], 260) == 520
    return task


def page(client: Client, task: Task, **params: str) -> str:
    url = reverse("rubrics:task_detail", args=[task.repository.pk, task.pk])
    response = client.get(url, params)
    assert response.status_code == 200
    return str(response.content.decode())


def test_the_task_page_renders_one_page_of_runs(task: Task, reviewer: User) -> None:
    client = Client()
    client.force_login(reviewer)
    order = list(
        AgentRun.objects.filter(task=task)
        .order_by("arm", "model", "repetition", "pk")
        .values_list("pk", flat=True)
    )
    first = page(client, task)
    assert [int(pk) for pk in RUN_LINK.findall(first)] == order[:50]
    assert "runs 1 to 50 of 520 · page 1 of 11" in first
    assert "520 runs, each with its current grade" in first
    url = reverse("rubrics:task_detail", args=[task.repository.pk, task.pk])
    assert f'href="{url}?page=2#agent-runs" rel="next"' in first
    assert 'rel="prev"' not in first
    # Following the links walks every run once, in order.
    seen: list[int] = []
    html = first
    for _ in range(20):
        seen += [int(pk) for pk in RUN_LINK.findall(html)]
        following = re.search(r'href="([^"]+)" rel="next"', html)
        if following is None:
            break
        html = client.get(following.group(1).replace("&amp;", "&")).content.decode()
    assert seen == order
    assert "runs 501 to 520 of 520 · page 11 of 11" in html
    assert f'href="{url}?page=10#agent-runs" rel="prev"' in html


def test_odd_page_numbers_are_the_first_or_the_last_page(task: Task, reviewer: User) -> None:
    client = Client()
    client.force_login(reviewer)
    for odd in ("²", "x", "-1", "0", "9" * 40):
        assert "runs 1 to 50 of 520" in page(client, task, page=odd)
    assert "runs 501 to 520 of 520" in page(client, task, page="99")


def test_a_run_names_its_judge_by_model_id_with_the_spec_on_hover(task: Task, reviewer: User) -> None:
    """Issue 35: the model id, not the spec, in the list (a scripted judge's is "scripted", the demo's)."""
    client = Client()
    client.force_login(reviewer)
    first = page(client, task)
    judge = '<span class="muted judge" title="anthropic:claude-judge">claude-judge</span>'
    assert first.count(judge) == 50
    assert first.count("anthropic:claude-judge") == 50  # in the title only
