"""Drafting on a real Celery worker: `manage.py draft --wait`, the task page's "Draft from PR" with an export,
and a drafting that fails at a step. The worker process talks to the local Messages API and GitHub servers
of this test process, with the API key and the GitHub token in its own environment."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import Job, JobKind, JobStatus, Repository, RubricDraft, Task
from rubrics_app.services.drafting import run as drafting
from tests.app.drafting_helpers import (
    MODEL,
    bad_reply,
    export_json,
    good_reply,
    pr_parts,
    set_up_drafting,
    write_prices,
)
from tests.app.worker_helpers import wait_for
from tests.gitrepo import GitRepo
from tests.grading.github_server import FakeGitHub
from tests.grading.judge.fake_servers import FakeProviderServer, text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeProviderServer, FakeGitHub]]:
    """The local servers, and the worker's environment pointing at them (set before the worker starts)."""
    provider = FakeProviderServer().start()
    github = FakeGitHub().start()
    parts = pr_parts()
    github.add_pull(
        7, parts["pull"], parts["files"], parts["review_comments"], parts["reviews"], parts["issue_comments"]
    )
    prices = write_prices(tmp_path_factory.mktemp("prices") / "prices.json")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("ANTHROPIC_BASE_URL", provider.anthropic_base_url)
        env.setenv("ANTHROPIC_API_KEY", "test-key-123456")
        env.setenv("GITHUB_TOKEN", "ghp_only_in_the_worker_env")
        env.setenv("RUBRIC_JUDGE_PRICES", str(prices))
        env.setenv("DRAFT_GITHUB_API_URL", github.url)
        try:
            yield provider, github
        finally:
            provider.stop()
            github.stop()


@pytest.fixture
def drafting_worker(
    servers: tuple[FakeProviderServer, FakeGitHub],
    worker: Path,
    repository: Repository,
    task: Task,
    git_repo: GitRepo,
) -> Iterator[tuple[FakeProviderServer, Path]]:
    provider, github = servers
    provider.requests.clear()
    github.requests.clear()
    set_up_drafting(repository, task, git_repo)
    # This test process never calls GitHub or the model itself: only the worker does, with its environment.
    saved = {k: os.environ.pop(k) for k in ("GITHUB_TOKEN", "ANTHROPIC_API_KEY")}
    try:
        yield provider, worker
    finally:
        os.environ.update(saved)


def test_manage_draft_wait_drafts_on_the_worker(
    drafting_worker: tuple[FakeProviderServer, Path], repository: Repository, task: Task
) -> None:
    provider, _ = drafting_worker
    provider.script(text(json.dumps(good_reply())))
    out = io.StringIO()

    call_command(
        "draft", "--repository", repository.name, "--task", task.task_id, "--pr", "7", "--wait", stdout=out
    )

    printed = out.getvalue()
    record = RubricDraft.objects.get()
    assert record.revision is not None
    assert f"drafted by {MODEL}" in printed and f"{task.task_id} revision 1 (draft)" in printed
    assert "no problems found" in printed
    job = Job.objects.get(kind=JobKind.DRAFT_RUBRIC)
    assert (job.status, job.progress) == (JobStatus.DONE, 100)
    assert job.result is not None and job.result["revision"] == record.revision.pk
    assert job.result["cost_usd"] == record.cost_usd > 0
    assert record.revision.validation_errors() == []
    assert len(provider.model_calls()) == 1


def test_the_task_page_drafts_a_faulty_export_on_the_worker(
    drafting_worker: tuple[FakeProviderServer, Path], task: Task, maintainer: User
) -> None:
    provider, log = drafting_worker
    provider.script(text(json.dumps(bad_reply())))
    client = Client()
    client.force_login(maintainer)
    upload = SimpleUploadedFile("pr.json", export_json())

    response = client.post(
        reverse("rubrics:draft_start", args=[task.repository_id, task.pk]), {"pr_export": upload}
    )

    assert response.status_code == 302
    job = wait_for(Job.objects.get(kind=JobKind.DRAFT_RUBRIC), log)
    assert job.status == JobStatus.DONE, job.error
    record = RubricDraft.objects.get(job=job)
    assert record.revision is not None and len(record.problems) == 5
    page = client.get(response["Location"]).content.decode()
    assert "Draft a rubric from the merged PR" in page and "5 problems" in page
    assert f"revision {record.revision.number}" in page and "checking the draft" not in page
    assert f"${record.cost_usd:.4f}" in page


def test_a_drafting_that_fails_says_at_which_step_and_why(
    drafting_worker: tuple[FakeProviderServer, Path], repository: Repository, task: Task, viewer: User
) -> None:
    provider, _ = drafting_worker
    with pytest.raises(CommandError) as info:
        call_command(
            "draft",
            "--repository",
            repository.name,
            "--task",
            task.task_id,
            "--pr",
            "99",
            "--wait",
            stdout=io.StringIO(),
        )
    assert info.value.returncode == 1
    assert "drafting failed: fetching the PR: GitHub: not found" in str(info.value)
    job = Job.objects.get(kind=JobKind.DRAFT_RUBRIC)
    assert job.status == JobStatus.FAILED and job.error.startswith("fetching the PR: GitHub: not found")
    assert RubricDraft.objects.get().revision is None and provider.model_calls() == []
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("rubrics:job_detail", args=[repository.pk, job.pk])).content.decode()
    assert "fetching the PR: GitHub: not found" in page


def test_a_click_while_the_worker_drafts_joins_it_and_a_click_after_drafts_again(
    drafting_worker: tuple[FakeProviderServer, Path], task: Task, maintainer: User
) -> None:
    provider, log = drafting_worker
    provider.script(text(json.dumps(good_reply())), text(json.dumps(good_reply())))
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:draft_start", args=[task.repository_id, task.pk])
    provider.latency = 3.0  # the model takes a while: the second click comes while the worker drafts
    try:
        first = client.post(url, {"pr_number": 7})
        job = Job.objects.get(kind=JobKind.DRAFT_RUBRIC)
        deadline = time.monotonic() + 30
        while job.status == JobStatus.QUEUED and time.monotonic() < deadline:
            time.sleep(0.05)
            job.refresh_from_db()
        assert job.status == JobStatus.RUNNING, log.read_text(errors="replace")

        second = client.post(url, {"pr_number": 7}, follow=True)

        assert second.redirect_chain[-1][0] == first["Location"]
        assert "is already running: this request joined it" in second.content.decode()
        assert RubricDraft.objects.count() == 1
        job = wait_for(job, log)
    finally:
        provider.latency = 0.0
    assert job.status == JobStatus.DONE, job.error

    third = client.post(url, {"pr_number": 7})

    assert third["Location"] != first["Location"]
    again = wait_for(Job.objects.exclude(pk=job.pk).get(kind=JobKind.DRAFT_RUBRIC), log)
    assert again.status == JobStatus.DONE, again.error
    numbers = sorted(RubricDraft.objects.values_list("revision__number", flat=True))
    assert numbers == [1, 2] and len(provider.model_calls()) == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the task row's lock is PostgreSQL's")
def test_a_request_made_while_another_is_being_committed_waits_and_joins_it(
    repository: Repository, task: Task, git_repo: GitRepo
) -> None:
    set_up_drafting(repository, task, git_repo)
    sent, release = threading.Event(), threading.Event()
    results: dict[str, tuple[RubricDraft, bool]] = {}

    def first() -> None:
        try:
            with transaction.atomic():  # the first request's transaction, held open until released
                results["first"] = drafting.request_draft(task, Actor.command_line(), pr_number=7)
                sent.set()
                release.wait(20)
        finally:
            connection.close()

    def second() -> None:
        try:
            results["second"] = drafting.request_draft(task, Actor.command_line(), pr_number=7)
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert sent.wait(20)
    two = threading.Thread(target=second)
    two.start()
    two.join(1.0)
    waited = two.is_alive()  # on the task's row, until the first request commits
    release.set()
    one.join(20)
    two.join(20)
    assert waited
    draft, created = results["first"]
    assert created and results["second"] == (draft, False)
    assert RubricDraft.objects.count() == 1 and Job.objects.count() == 1
