"""manage.py export_rubrics --pull-request --wait: the job runs (Celery's eager mode, in this process, after
the command's transaction commits) and the command prints the pull request it opened on the stand-in."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import ExportResult, Job, JobKind, RubricRevision
from rubrics_app.services.rubrics.pull_requests import set_remote_setting
from tests.git_http_server import GitHttpServer, PullsStandIn, bare_repository
from tests.gitrepo import GitRepo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

TOKEN = "ghp_command-token-7"


@pytest.fixture
def github(
    tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[GitHttpServer, PullsStandIn]]:
    bare_repository(tmp_path / "served" / "octo" / "shapes.git")
    git_server = GitHttpServer(tmp_path / "served", password=TOKEN).start()
    pulls = PullsStandIn().start()
    settings.GITHUB_WEB_URL = git_server.url
    settings.DRAFT_GITHUB_API_URL = pulls.url
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    try:
        yield git_server, pulls
    finally:
        git_server.stop()
        pulls.stop()


def export(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("export_rubrics", *args, stdout=out, stderr=io.StringIO())
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_the_command_sends_a_pull_request_and_waits_for_it(
    admitted_revision: RubricRevision,
    maintainer: User,
    github: tuple[GitHttpServer, PullsStandIn],
    tmp_path: Path,
) -> None:
    repository = admitted_revision.task.repository
    checkout = GitRepo(Path(repository.checkout_path))
    checkout.write("README.md", "hello\n")
    head = checkout.commit("base")
    set_remote_setting(
        repository, by=Actor.member(maintainer), remote="octo/shapes", token_env="GITHUB_TOKEN"
    )
    code, out = export("--repository", repository.name, "--pull-request", "--wait", "--timeout", "60")
    assert code == 0, out
    job = Job.objects.get(kind=JobKind.EXPORT_REVISION)
    result = job.result_as(ExportResult)
    assert result is not None and result.pull_request_url == "https://github.example/octo/shapes/pull/1"
    assert f"sent job {job.pk} (pull request of example-project fix_fraction_gt1 r1)" in out
    assert f"pull request {result.pull_request_url} (branch {result.branch})" in out
    pushed = subprocess.run(
        [
            "git",
            "--git-dir",
            str(tmp_path / "served/octo/shapes.git"),
            "rev-parse",
            f"refs/heads/{result.branch}",
        ],
        capture_output=True,
        check=True,
    )
    assert pushed.stdout.decode().strip() == result.commit and checkout.head() == head
    assert github[1].pulls[0].authorization == f"Bearer {TOKEN}"


def test_wrong_combinations_are_refused_before_any_job(admitted_revision: RubricRevision) -> None:
    name = admitted_revision.task.repository.name
    assert export("--repository", name, "--wait")[0] == 2  # the plain export writes in the foreground
    code, out = export("--repository", name, "--pull-request", "--private")
    assert code == 2 and "not with --out or --private" in out
    code, out = export("--repository", name, "--pull-request")
    assert code == 2 and "names no remote" in out
    assert not Job.objects.filter(kind=JobKind.EXPORT_REVISION).exists()
