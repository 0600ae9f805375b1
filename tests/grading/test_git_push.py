"""Pushing a branch (grading.push_branch) and opening a pull request (grading.open_pull_request) against
local stand-ins: a bare repository by path, a smart-HTTP git server (git http-backend) that asks for a
password, and GitHub's pulls API. The token reaches only the configured origin."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from grading import GitError, GitHubError, InputError, open_pull_request, parse_remote, push_branch
from grading.git_credential import answer
from tests.git_http_server import GitHttpServer, PullsStandIn, bare_repository, serving_shapes
from tests.gitrepo import GitRepo

TOKEN = "ghp_test-token-0123456789"


@pytest.fixture
def checkout(git_repo: GitRepo) -> GitRepo:
    git_repo.write("README.md", "hello\n")
    git_repo.commit("base")
    git_repo.git("branch", "rubrics/one")
    return git_repo


def branch_of(bare: Path, branch: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(bare), "rev-parse", f"refs/heads/{branch}"], capture_output=True, check=False
    )
    return done.stdout.decode().strip()


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitHttpServer]:
    with serving_shapes(tmp_path / "served", TOKEN) as server:
        yield server


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[GitHttpServer]:
    server = GitHttpServer(tmp_path / "nothing").start()
    yield server
    server.stop()


def test_a_path_remote_gets_the_branch(checkout: GitRepo, tmp_path: Path) -> None:
    bare = bare_repository(tmp_path / "remote.git")
    push_branch(checkout.path, parse_remote(str(bare)), "rubrics/one", None)
    assert branch_of(bare, "rubrics/one") == checkout.head()


def test_the_token_is_given_through_the_helper_to_the_remote_that_asks(
    checkout: GitRepo, git_server: GitHttpServer, tmp_path: Path
) -> None:
    remote = parse_remote(f"{git_server.url}/octo/shapes.git")
    push_branch(checkout.path, remote, "rubrics/one", TOKEN)
    assert branch_of(tmp_path / "served/octo/shapes.git", "rubrics/one") == checkout.head()
    sent = {s.authorization for s in git_server.requests}
    expected = "Basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert sent == {None, expected}  # the first ask without, then with the helper's answer
    assert all(TOKEN not in s.path for s in git_server.requests)


def test_without_the_token_the_push_is_refused_and_says_so(
    checkout: GitRepo, git_server: GitHttpServer
) -> None:
    with pytest.raises(GitError, match="git push to .* failed"):
        push_branch(checkout.path, parse_remote(f"{git_server.url}/octo/shapes.git"), "rubrics/one", None)


def test_a_redirect_to_another_origin_is_not_followed_and_gets_no_token(
    checkout: GitRepo, git_server: GitHttpServer, elsewhere: GitHttpServer
) -> None:
    git_server.redirect_to = elsewhere.url
    with pytest.raises(GitError):
        push_branch(checkout.path, parse_remote(f"{git_server.url}/octo/shapes.git"), "rubrics/one", TOKEN)
    assert elsewhere.requests == []
    assert all(s.authorization is None for s in git_server.requests)


def test_the_helper_answers_only_a_get_for_its_own_origin() -> None:
    env = {"RUBRICS_GIT_CREDENTIAL_TOKEN": TOKEN, "RUBRICS_GIT_CREDENTIAL_ORIGIN": "https://git.example:8443"}
    asked = "protocol=https\nhost=git.example:8443\npath=octo/shapes.git\n"
    assert answer("get", asked, env) == f"username=x-access-token\npassword={TOKEN}\n"
    assert answer("get", "protocol=https\nhost=evil.example\n", env) == ""
    assert answer("get", "protocol=http\nhost=git.example:8443\n", env) == ""
    assert answer("store", asked, env) == ""
    assert answer("get", asked, {}) == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ext::sh%-c%touch%/tmp/pwned", "transport helper"),
        ("https://user:secret@git.example/x.git", "no user or password"),
        ("https://user@git.example/x.git", "no user or password"),
        ("ftp://git.example/x.git", "'ftp' is not one of"),
        ("-uhoh", "starts with '-'"),
        ("octo/../x", "OWNER/NAME"),
        ("https://git.example/x.git?token=1", "no query"),
        ("relative/path/x", "OWNER/NAME"),
        ("https://git.example/a b", "spaces"),
    ],
)
def test_a_bad_remote_is_refused_naming_the_field(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem) as caught:
        parse_remote(text)
    assert caught.value.field == "remote"


def test_owner_name_is_a_github_remote() -> None:
    remote = parse_remote("octo/shapes", "https://github.example/")
    assert (remote.url, remote.github) == ("https://github.example/octo/shapes.git", "octo/shapes")
    assert remote.token_origin == "https://github.example"
    assert parse_remote("git@host.example:octo/shapes.git").github is None
    assert parse_remote("ssh://git@host.example/octo/shapes.git").token_origin is None


@pytest.fixture
def pulls() -> Iterator[PullsStandIn]:
    server = PullsStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def other_pulls() -> Iterator[PullsStandIn]:
    server = PullsStandIn().start()
    yield server
    server.stop()


def test_it_opens_the_pull_request_with_the_token_at_the_api(pulls: PullsStandIn) -> None:
    opened = open_pull_request(
        "octo/shapes", TOKEN, head="rubrics/one", base="main", title="T", body="B", api_url=pulls.url
    )
    assert (opened.number, opened.url) == (1, "https://github.example/octo/shapes/pull/1")
    [pull] = pulls.pulls
    assert pull.repository == "octo/shapes" and pull.authorization == f"Bearer {TOKEN}"
    assert pull.payload == {"title": "T", "head": "rubrics/one", "base": "main", "body": "B"}


def test_a_redirect_to_another_origin_is_refused_before_the_token_leaves(
    pulls: PullsStandIn, other_pulls: PullsStandIn
) -> None:
    pulls.redirect_to = other_pulls.url
    with pytest.raises(GitHubError, match="outside the configured API"):
        open_pull_request("octo/shapes", TOKEN, head="b", base="main", title="T", body="B", api_url=pulls.url)
    assert other_pulls.requests == []


def test_what_github_refuses_is_said(pulls: PullsStandIn) -> None:
    pulls.status = 422
    pulls.error = {"message": "Validation Failed", "errors": [{"message": "A pull request already exists"}]}
    with pytest.raises(GitHubError, match="HTTP 422 .*A pull request already exists"):
        open_pull_request("octo/shapes", TOKEN, head="b", base="main", title="T", body="B", api_url=pulls.url)


def test_an_answer_without_an_http_link_is_refused(pulls: PullsStandIn) -> None:
    pulls.html_url = "javascript:alert(1)"
    with pytest.raises(GitHubError, match="no http"):
        open_pull_request("octo/shapes", TOKEN, head="b", base="main", title="T", body="B", api_url=pulls.url)


def test_no_helper_the_checkout_configures_is_asked(
    checkout: GitRepo, git_server: GitHttpServer, tmp_path: Path
) -> None:
    marker = tmp_path / "asked"
    checkout.git("config", "credential.helper", f"!touch {marker}; false")
    push_branch(checkout.path, parse_remote(f"{git_server.url}/octo/shapes.git"), "rubrics/one", TOKEN)
    assert not marker.exists()


def test_a_checkout_s_own_grading_package_does_not_answer_for_the_helper(
    checkout: GitRepo, git_server: GitHttpServer, tmp_path: Path
) -> None:
    marker = tmp_path / "shadowed"
    checkout.write("grading/__init__.py", "")
    checkout.write("grading/git_credential.py", f"open({str(marker)!r}, 'w').close()\n")
    push_branch(checkout.path, parse_remote(f"{git_server.url}/octo/shapes.git"), "rubrics/one", TOKEN)
    assert not marker.exists()
    assert branch_of(tmp_path / "served/octo/shapes.git", "rubrics/one") == checkout.head()
