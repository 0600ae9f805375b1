"""Admitted rubrics sent to their repository (§6 export): "Send as a pull request" commits the branch
without touching the checkout, pushes it to a local smart-HTTP git server (git http-backend) that asks for
the token, and opens the pull request on a local stand-in of GitHub's pulls API; a plain git remote gets
the push and no pull request. The token is read from the worker's environment by the variable's name."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.test import Client
from django.urls import reverse

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    ExportResult,
    Job,
    JobKind,
    JobStatus,
    RemoteSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.rubrics import rereview
from rubrics_app.services.rubrics.exports import export_revision_to_checkout
from rubrics_app.services.rubrics.pull_requests import code, fenced, set_remote_setting
from tests.app.conftest import MakeRevision
from tests.git_http_server import GitHttpServer, PullsStandIn, bare_repository, serving_shapes
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db

TOKEN = "ghp_pull-request-token-42"
# Anyone's text: it must reach GitHub as data, never as Markdown that closes the fence or pings someone.
REASON = "B1 is wrong.\n```\n# Approved! [click](https://evil.example) @octo/maintainers\n````"


@pytest.fixture
def checkout(repository: Repository) -> GitRepo:
    repo = GitRepo(Path(repository.checkout_path))
    repo.write("src/fraction.py", "def fraction(x):\n    return x\n")
    repo.commit("base")
    repo.write("notes.txt", "the maintainer's own work in progress\n")
    return repo


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitHttpServer]:
    with serving_shapes(tmp_path / "served", TOKEN) as server:
        yield server


@pytest.fixture
def pulls() -> Iterator[PullsStandIn]:
    server = PullsStandIn(web_url="https://github.example").start()
    yield server
    server.stop()


@pytest.fixture
def github(
    git_server: GitHttpServer, pulls: PullsStandIn, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[GitHttpServer, PullsStandIn]:
    settings.GITHUB_WEB_URL = git_server.url
    settings.DRAFT_GITHUB_API_URL = pulls.url
    monkeypatch.setenv("GITHUB_TOKEN_SHAPES", TOKEN)
    return git_server, pulls


@pytest.fixture
def admitted(make_revision: MakeRevision, maintainer: User) -> RubricRevision:
    """Admitted on a calibration that ran the injection suite, with B1 disputed since."""
    revision = make_revision(RevisionStatus.APPROVED)
    run = calibration.calibrate_now(
        revision, Actor.member(maintainer), cache=MemoryCache(), admit=True, injection_suite=True
    )
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED, run.reason
    rereview.open_dispute(revision.items.get(item_id="B1"), Actor.member(maintainer), REASON)
    return revision


def state(repo: GitRepo) -> tuple[str, str, str, bytes]:
    return (
        repo.head(),
        repo.git("symbolic-ref", "HEAD"),
        repo.git("status", "--porcelain=v1", "--untracked-files=all"),
        (repo.path / ".git" / "index").read_bytes(),
    )


def ref_in(bare: Path, branch: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
        capture_output=True,
        check=False,
    )
    return done.stdout.decode().strip()


def exports_jobs() -> QuerySet[Job]:
    return Job.objects.filter(kind=JobKind.EXPORT_REVISION)


def send(client: Client, revision: RubricRevision, **data: str) -> Job:
    """Press "Send as a pull request" (confirming the disputed blocker) and run the job it queued here (a
    `db` test never commits, so the job is never sent to a worker)."""
    url = reverse("rubrics:export_pull_request", args=[revision.task.repository_id, revision.pk])
    asked = client.post(url, data)
    assert asked.status_code == 409 and "<code>B1</code> is disputed" in asked.content.decode()
    assert not exports_jobs().exists()
    answer = client.post(url, {**data, "confirm_disputed": "1"})
    job = exports_jobs().get()
    assert answer.status_code == 302 and answer["Location"].endswith(f"/jobs/{job.pk}/")
    export_revision_to_checkout(job.pk)
    job.refresh_from_db()
    return job


def test_an_admitted_revision_becomes_a_pull_request(
    admitted: RubricRevision,
    checkout: GitRepo,
    github: tuple[GitHttpServer, PullsStandIn],
    maintainer: User,
    tmp_path: Path,
) -> None:
    git_server, pulls = github
    set_remote_setting(
        admitted.task.repository,
        by=Actor.member(maintainer),
        remote="octo/shapes",
        token_env="GITHUB_TOKEN_SHAPES",
    )
    client = Client()
    client.force_login(maintainer)
    before = state(checkout)
    job = send(client, admitted, branch="rubrics/fix-fraction")
    assert job.status == JobStatus.DONE, job.error
    result = job.result_as(ExportResult)
    assert result is not None and result.pull_request_url == "https://github.example/octo/shapes/pull/1"

    # The bare repository holds the branch, and the checkout's HEAD, index and files did not move.
    assert ref_in(tmp_path / "served/octo/shapes.git", "rubrics/fix-fraction") == result.commit
    assert state(checkout) == before
    assert checkout.git("rev-parse", "refs/heads/rubrics/fix-fraction").strip() == result.commit

    # The token went to the git server through the helper and to the API, nowhere in what is kept.
    [pull] = pulls.pulls
    assert pull.authorization == f"Bearer {TOKEN}" and pull.repository == "octo/shapes"
    assert (pull.payload["head"], pull.payload["base"]) == ("rubrics/fix-fraction", "main")
    assert any(s.authorization and s.authorization.startswith("Basic ") for s in git_server.requests)
    kept = json.dumps([job.result, job.params, job.error]) + json.dumps(
        list(AuditEvent.objects.values_list("detail", flat=True))
    )
    assert TOKEN not in kept

    body = pull.payload["body"]
    assert "task `fix_fraction_gt1`, revision 1" in body and admitted.content_sha256 in body
    assert "Revision approved by `maintainer`" in body and "admitted by `maintainer`" in body
    assert "- blocker `B1`: approved by `maintainer`" in body
    run = admitted.calibrations.get()
    held = run.rows.filter(holds=True).count()
    assert f"Calibration #{run.pk} with `{run.judge}`: {held} of {run.rows.count()} rows held" in body
    attacks, benign = run.attacks_measured, run.benign_measured
    assert f"attack success 0 of {attacks} (0.0%)" in body
    assert f"benign drift {run.benign_drifts} of {benign} ({run.benign_drifts / benign:.1%})" in body
    # The overridden dispute, its reason fenced longer than any backtick run in it.
    assert "Blocker `B1`, disputed by `maintainer`" in body and "sent anyway" in body
    assert "`````text\n" + REASON + "\n`````" in body
    assert body.count("@octo") == 1 and body.count("[click]") == 1

    # The job page links the pull request.
    page = client.get(reverse("rubrics:job_detail", args=[job.repository_id, job.pk])).content.decode()
    assert '<a href="https://github.example/octo/shapes/pull/1" rel="noopener noreferrer">#1</a>' in page

    # The audit trail names the pull request, its branch and the dispute overridden with its reason.
    sent = AuditEvent.objects.get(revision=admitted, verb=AuditVerb.EXPORTED, detail__as="pull request")
    assert sent.detail["target"] == (
        "pull request https://github.example/octo/shapes/pull/1 from branch rubrics/fix-fraction"
    )
    assert sent.detail["overridden"] == [{"item_id": "B1", "reason": REASON, "opened_by": "maintainer"}]


def test_a_plain_git_remote_gets_the_push_and_no_pull_request(
    admitted: RubricRevision,
    checkout: GitRepo,
    pulls: PullsStandIn,
    maintainer: User,
    settings: Any,
    tmp_path: Path,
) -> None:
    settings.DRAFT_GITHUB_API_URL = pulls.url
    bare = bare_repository(tmp_path / "plain.git")
    set_remote_setting(admitted.task.repository, by=Actor.member(maintainer), remote=str(bare))
    client = Client()
    client.force_login(maintainer)
    before = state(checkout)
    job = send(client, admitted)
    assert job.status == JobStatus.DONE, job.error
    result = job.result_as(ExportResult)
    assert result is not None and result.pull_request_url is None
    branch = f"rubrics/fix_fraction_gt1-r1-job{job.pk}"
    assert result.branch == branch and ref_in(bare, branch) == result.commit
    assert state(checkout) == before
    assert pulls.requests == []
    assert "plain git remote, not a GitHub repository: no pull request was opened" in result.note
    page = client.get(reverse("rubrics:job_detail", args=[job.repository_id, job.pk])).content.decode()
    assert "no pull request was opened" in page
    revision_page = client.get(reverse("rubrics:revision_detail", args=[job.repository_id, admitted.pk]))
    assert "Send as a pull request</button>" in revision_page.content.decode()


def test_a_missing_token_stops_the_job_before_anything_is_written(
    admitted: RubricRevision,
    checkout: GitRepo,
    github: tuple[GitHttpServer, PullsStandIn],
    maintainer: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_remote_setting(
        admitted.task.repository,
        by=Actor.member(maintainer),
        remote="octo/shapes",
        token_env="GITHUB_TOKEN_SHAPES",
    )
    monkeypatch.delenv("GITHUB_TOKEN_SHAPES")
    client = Client()
    client.force_login(maintainer)
    job = send(client, admitted)
    assert job.status == JobStatus.FAILED
    assert job.error == "Nothing was written: GITHUB_TOKEN_SHAPES is not set in the worker's environment"
    assert "refs/heads/rubrics/" not in checkout.git("for-each-ref")
    assert github[0].requests == [] and github[1].requests == []
    page = client.get(reverse("rubrics:job_detail", args=[job.repository_id, job.pk])).content.decode()
    assert page.count("Nothing was written") == 1


def test_a_dispute_opened_after_the_confirmation_stops_the_job(
    admitted: RubricRevision, checkout: GitRepo, maintainer: User, tmp_path: Path
) -> None:
    bare = bare_repository(tmp_path / "plain.git")
    set_remote_setting(admitted.task.repository, by=Actor.member(maintainer), remote=str(bare))
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:export_pull_request", args=[admitted.task.repository_id, admitted.pk])
    client.post(url, {"confirm_disputed": "1"})
    job = exports_jobs().get()
    rereview.open_dispute(admitted.items.get(item_id="B2"), Actor.member(maintainer), "B2 too")
    export_revision_to_checkout(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("Nothing was written: B2 disputed (needs re-review)")
    assert "refs/heads/rubrics/" not in checkout.git("for-each-ref")


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"remote": "ext::sh%-c%id"}, "remote", "transport helper"),
        ({"remote": "https://me:pw@git.example/x.git"}, "remote", "no user or password"),
        ({"remote": "octo/shapes", "token_env": "ANTHROPIC_API_KEY"}, "token_env", "GITHUB_TOKEN"),
        # A maintainer names the remote, not where the worker's secrets go.
        (
            {"remote": "https://git.example/x.git", "token_env": "GITHUB_TOKEN"},
            "token_env",
            "REMOTE_TOKEN_ORIGINS",
        ),
        ({"remote": "octo/shapes", "base_branch": "-x"}, "base_branch", "letters, digits"),
    ],
)
def test_the_remote_page_refuses_a_bad_setting_naming_the_field(
    repository: Repository, maintainer: User, data: dict[str, str], field: str, message: str
) -> None:
    client = Client()
    client.force_login(maintainer)
    answer = client.post(reverse("rubrics:remote_settings", args=[repository.pk]), data)
    assert answer.status_code == 400
    assert message in " ".join(str(e) for e in answer.context["form"].errors[field])
    assert not RemoteSetting.objects.exists()


def test_a_listed_origin_may_get_the_token_and_the_page_shows_the_setting(
    repository: Repository, maintainer: User, viewer: User, settings: Any
) -> None:
    settings.REMOTE_TOKEN_ORIGINS = ["https://git.example"]
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:remote_settings", args=[repository.pk])
    data = {"remote": "https://git.example/x.git", "token_env": "GITHUB_TOKEN_X", "base_branch": "trunk"}
    assert client.post(url, data).status_code == 302
    setting = RemoteSetting.objects.get()
    assert (setting.remote, setting.token_env, setting.base_branch) == tuple(data.values())
    client.force_login(viewer)
    page = client.get(url).content.decode()
    assert "<code>https://git.example/x.git</code>" in page and "<code>GITHUB_TOKEN_X</code>" in page
    assert client.post(url, {"remote": ""}).status_code == 403


def test_markdown_of_untrusted_text_stays_data() -> None:
    assert code("a`b") == "`` a`b ``" and code("plain") == "`plain`"
    assert fenced("```\nx") == "````text\n```\nx\n````"
    assert fenced("\x1b[31mred\x07") == "```text\n[31mred\n```"


def test_saving_and_removing_the_remote_is_audited(
    repository: Repository, maintainer: User, viewer: User
) -> None:
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:remote_settings", args=[repository.pk])
    assert client.post(url, {"remote": "octo/shapes", "base_branch": "main"}).status_code == 302
    assert client.post(url, {"remote": "octo/shapes", "base_branch": "trunk"}).status_code == 302
    assert client.post(url, {"remote": ""}).status_code == 302
    # A refused value and a viewer's attempt change nothing and record nothing.
    assert client.post(url, {"remote": "ext::sh%-c%id"}).status_code == 400
    client.force_login(viewer)
    assert client.post(url, {"remote": "octo/other"}).status_code == 403
    rows = AuditEvent.objects.filter(repository=repository, verb=AuditVerb.REMOTE_SET).order_by("pk")
    first = {"remote": "octo/shapes", "token_env": "", "base_branch": "main"}
    second = {**first, "base_branch": "trunk"}
    assert [(row.actor, row.detail) for row in rows] == [
        (maintainer, {"before": None, "after": first}),
        (maintainer, {"before": first, "after": second}),
        (maintainer, {"before": second, "after": None}),
    ]
    assert str(rows[0]) == f"maintainer set the remote of {repository.name}"
