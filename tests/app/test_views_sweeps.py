"""The sweep button and page: maintainers send; reviewers and viewers see progress and no button;
outsiders get 404. The page polls while the job runs and stops when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import Job, JobStatus, Repository, RubricRevision, Sweep, Task
from rubrics_app.services.sweeps import run as sweeps
from tests.app.sweep_helpers import import_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def runs(admitted_revision: RubricRevision, repository: Repository, tmp_path: Path) -> None:
    import_runs(repository, tmp_path / "runs", 2)


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def test_a_maintainer_sends_a_sweep_of_a_task_from_its_page(
    runs: None, client: Client, maintainer: User, repository: Repository, task: Task
) -> None:
    page = logged_in(client, maintainer).get(reverse("rubrics:task_detail", args=[repository.pk, task.pk]))
    assert b"Sweep this task" in page.content
    response = client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {"task": task.pk})
    sweep = Sweep.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "rubrics:sweep_detail", args=[repository.pk, sweep.pk]
    )
    assert sweep.task == task and sweep.total_runs == 2 and sweep.job.kind == "sweep"
    assert sweep.created_by == maintainer and sweep.job.status == JobStatus.QUEUED


@pytest.mark.parametrize("who", ["reviewer", "viewer"])
def test_reviewers_and_viewers_see_progress_but_no_button(
    runs: None, client: Client, request: pytest.FixtureRequest, who: str, repository: Repository,
    maintainer: User, task: Task,
) -> None:  # fmt: skip
    sweep = sweeps.new_sweep(repository, Actor.member(maintainer), sweeps.SweepRequest())
    logged_in(client, request.getfixturevalue(who))
    for url in (
        reverse("rubrics:repository_detail", args=[repository.pk]),
        reverse("rubrics:task_detail", args=[repository.pk, task.pk]),
    ):
        page = client.get(url)
        assert page.status_code == 200 and b"Sweep</button>" not in page.content
        assert b"Sweep this task" not in page.content
        assert f"#{sweep.pk}".encode() in page.content
    page = client.get(reverse("rubrics:sweep_detail", args=[repository.pk, sweep.pk]))
    assert page.status_code == 200 and b"0 of 2" in page.content and b'hx-trigger="every 2s"' in page.content
    response = client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {})
    assert response.status_code == 403 and Sweep.objects.count() == 1


def test_outsiders_get_404(
    runs: None, client: Client, outsider: User, maintainer: User, repository: Repository
) -> None:
    sweep = sweeps.new_sweep(repository, Actor.member(maintainer), sweeps.SweepRequest())
    logged_in(client, outsider)
    assert client.get(reverse("rubrics:sweep_detail", args=[repository.pk, sweep.pk])).status_code == 404
    assert client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {}).status_code == 404
    assert Sweep.objects.count() == 1


def test_the_progress_partial_stops_polling_when_the_job_ends(
    runs: None, client: Client, viewer: User, maintainer: User, repository: Repository
) -> None:
    sweep = sweeps.new_sweep(repository, Actor.member(maintainer), sweeps.SweepRequest())
    url = reverse("rubrics:sweep_detail", args=[repository.pk, sweep.pk])
    logged_in(client, viewer)
    running = client.get(url, headers={"HX-Request": "true"})
    assert running.status_code == 200 and b"<h1>" not in running.content and b"0 of 2" in running.content
    done = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    finished = client.get(
        reverse("rubrics:sweep_detail", args=[repository.pk, done.pk]), headers={"HX-Request": "true"}
    )
    assert finished.status_code == 286 and b"2 of 2" in finished.content
    assert b"hx-trigger" not in finished.content and b"scripted judge" in finished.content
    assert Job.objects.get(pk=done.job_id).status == JobStatus.DONE


def test_a_sweep_that_cannot_start_says_why_and_stores_nothing(
    client: Client, maintainer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    response = logged_in(client, maintainer).post(
        reverse("rubrics:sweep_start", args=[repository.pk]), {"arm": "x" * 300}, follow=True
    )
    assert b"The sweep was not sent: arm:" in response.content
    response = client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {}, follow=True)
    assert b"The sweep was not sent: no run to grade" in response.content
    assert not Sweep.objects.exists()


def test_the_judges_page_chooses_batch_sweeps_and_sweeps_follow_it(
    runs: None, client: Client, maintainer: User, repository: Repository
) -> None:
    url = reverse("rubrics:judge_settings", args=[repository.pk])
    page = logged_in(client, maintainer).get(url)
    assert b"batch (cheaper, slower)" in page.content
    form = {"judge": "anthropic:claude-sonnet-4-5-20250929", "second_judge": "openai:gpt-4o-2024-08-06"}
    response = client.post(url, {**form, "sweep_mode": "batch"})
    assert response.status_code == 302, response.content.decode()
    assert b"batch (cheaper, slower): judge calls go through" in client.get(url).content
    client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {})
    assert Sweep.objects.get().batch

    # A judge with no batch API is refused on the page, naming the choice; nothing changes.
    response = client.post(
        url, {**form, "judge": "claude-code:claude-sonnet-4-5-20250929", "sweep_mode": "batch"}
    )
    assert (
        response.status_code == 400
        and b"batch mode is available for anthropic and openai" in response.content
    )
    assert client.post(url, {**form, "sweep_mode": "interactive"}).status_code == 302
    client.post(reverse("rubrics:sweep_start", args=[repository.pk]), {})
    assert not Sweep.objects.order_by("-pk").first().batch  # type: ignore[union-attr]


def test_an_ended_sweep_gives_its_final_cost_and_leads_to_the_report_and_the_queue(
    runs: None, client: Client, maintainer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    request = sweeps.SweepRequest(task=admitted_revision.task)
    sweep = sweeps.new_sweep(repository, Actor.member(maintainer), request)
    url = reverse("rubrics:sweep_detail", args=[repository.pk, sweep.pk])
    running = logged_in(client, maintainer).get(url).content.decode()
    assert " so far" in running and "the review queue" not in running
    done = sweeps.sweep_now(repository, Actor.member(maintainer), request, cache=MemoryCache())
    page = client.get(reverse("rubrics:sweep_detail", args=[repository.pk, done.pk])).content.decode()
    assert " so far" not in page and f"${done.cost_usd:.4f} in all" in page
    task_id = admitted_revision.task.task_id
    assert f'href="{reverse("rubrics:report", args=[repository.pk])}?task={task_id}"' in page
    assert f'href="{reverse("rubrics:queue", args=[repository.pk])}?task={task_id}"' in page
    assert "Every run is graded." in page


def test_a_sweep_with_nothing_to_do_says_why(
    runs: None, client: Client, maintainer: User, repository: Repository
) -> None:
    sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    again = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    assert again.graded_runs == 0
    page = logged_in(client, maintainer).get(reverse("rubrics:sweep_detail", args=[repository.pk, again.pk]))
    text = " ".join(page.content.decode().split())
    assert "Nothing to do: 2 runs already graded with this rubric and judge, so no judge was called." in text
    assert "Every run is graded" not in text and "the report</a>" in text


def test_a_sweep_job_page_leads_back_to_its_task(
    runs: None, client: Client, maintainer: User, repository: Repository, admitted_revision: RubricRevision
) -> None:
    task = admitted_revision.task
    sweep = sweeps.new_sweep(repository, Actor.member(maintainer), sweeps.SweepRequest(task=task))
    page = logged_in(client, maintainer).get(
        reverse("rubrics:job_detail", args=[repository.pk, sweep.job_id])
    )
    task_url = reverse("rubrics:task_detail", args=[repository.pk, task.pk])
    assert f'<a href="{task_url}">{task.task_id}</a> / job {sweep.job_id}' in page.content.decode()
