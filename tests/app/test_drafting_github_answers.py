"""A drafting job meets GitHub answers the client does not take at their word: a rate-limit header that is
not a usable number (waited out as absent, and named on the draft, or named in the failure past the wait
limit; never "internal error: ValueError"), and a pull answered under another number (a failure naming
both). Against the local GitHub stand-in; waits are recorded, never slept."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from grading.draft import GitHubSource
from rubrics_app.access import Actor
from rubrics_app.models import Repository, RubricDraft, RubricRevision, Task
from rubrics_app.services.drafting import run as drafting
from tests.app.drafting_helpers import good_reply, pr_parts, set_up_drafting, write_prices
from tests.gitrepo import GitRepo
from tests.grading.github_server import FakeGitHub, github_fixture  # noqa: F401
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture, text  # noqa: F401

pytestmark = pytest.mark.django_db

PULL = "/repos/octo/shapes/pulls/7"


@pytest.fixture
def ready(
    fake_server: FakeProviderServer,
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    tmp_path: Path,
    repository: Repository,
    task: Task,
    git_repo: GitRepo,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_from_the_worker_env")
    monkeypatch.setenv("RUBRIC_JUDGE_PRICES", str(write_prices(tmp_path / "prices.json")))
    settings.DRAFT_GITHUB_API_URL = github.url
    set_up_drafting(repository, task, git_repo)


def serve_pull(github: FakeGitHub, answered_as: int = 7) -> None:
    parts = pr_parts()
    github.add_pull(
        7,
        parts["pull"] | {"number": answered_as},
        parts["files"],
        parts["review_comments"],
        parts["reviews"],
        parts["issue_comments"],
    )


def recording_waits(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[float]:
    """The job's GitHub client, recording its waits instead of sleeping them."""
    slept: list[float] = []

    def made(*args: Any, **kwargs: Any) -> GitHubSource:
        return GitHubSource(*args, **{**kwargs, "sleep": slept.append, **kw})

    monkeypatch.setattr(drafting, "GitHubSource", made)
    return slept


def run_job(task: Task) -> RubricDraft:
    record = drafting.start_draft(task, Actor.command_line(), pr_number=7)
    assert record.job is not None
    with contextlib.suppress(drafting.DraftFailed):  # a failure is recorded on the draft, read below
        drafting.run_draft(record.job)
    record.refresh_from_db()
    return record


@pytest.mark.usefixtures("ready")
def test_an_unreadable_retry_after_is_waited_out_and_named_on_the_draft(
    fake_server: FakeProviderServer, github: FakeGitHub, task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.script(text(json.dumps(good_reply())))
    serve_pull(github)
    github.rate_limited[PULL] = 1
    github.retry_after = "²"
    slept = recording_waits(monkeypatch)

    record = run_job(task)

    assert record.revision is not None, record.error
    assert slept == [60.0]
    assert record.problems == [
        "fetching the PR: GitHub's rate-limit header retry-after: '²' is not a usable number of seconds: "
        "read as absent (the wait went by GitHub's other header, or was 60s)"
    ]


@pytest.mark.usefixtures("ready")
def test_past_the_wait_limit_the_job_fails_naming_the_header(
    fake_server: FakeProviderServer, github: FakeGitHub, task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 5
    github.rate_limit_reset = "99999999999999"
    recording_waits(monkeypatch, max_wait=0)

    record = run_job(task)

    assert record.error == (
        "fetching the PR: GitHub: rate limited; waited 0s in all, and this fetch waits at most 0s; GitHub's "
        "x-ratelimit-reset: '99999999999999' is not a usable number of seconds (read as absent), so the wait "
        "would be 60s more: try again then"
    )
    assert not RubricRevision.objects.filter(task=task).exists()
    assert fake_server.model_calls() == []


@pytest.mark.usefixtures("ready")
def test_a_pull_answered_under_another_number_fails_the_job_naming_both(
    fake_server: FakeProviderServer, github: FakeGitHub, task: Task
) -> None:
    serve_pull(github, answered_as=8)

    record = run_job(task)

    assert record.error == "fetching the PR: GitHub: asked for PR #7 of octo/shapes, and the answer is PR #8"
    assert not RubricRevision.objects.filter(task=task).exists()
    assert fake_server.model_calls() == []
