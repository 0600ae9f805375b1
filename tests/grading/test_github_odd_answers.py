"""GitHub answers the client must not take at their word: rate-limit headers that are not usable numbers
(read as absent, a bounded wait, and said), and a pull that is not the one asked for (an error naming both
numbers). Against the local GitHub stand-in, with the real HTTP client; waits are recorded, never slept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import grading.draft.pr
from grading.cli.rubric import main
from grading.draft import GitHubError, GitHubSource
from grading.draft.pr import UNREADABLE_RATE_LIMIT_WAIT
from tests.gitrepo import GitRepo
from tests.grading.draft_helpers import POLYGON, good_reply, pr_parts
from tests.grading.github_server import FakeGitHub, github_fixture  # noqa: F401

PULL = "/repos/octo/shapes/pulls/7"


def serve_pull(github: FakeGitHub, number: int = 7, answered_as: int = 7) -> None:
    parts = pr_parts()
    pull = parts["pull"] | {"number": answered_as}
    github.add_pull(number, pull, parts["files"], [], [], [])


def source(github: FakeGitHub, slept: list[float], **kw: Any) -> GitHubSource:
    return GitHubSource("octo/shapes", None, base_url=github.url, sleep=slept.append, **kw)


# --- rate-limit headers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "²",  # passes str.isdigit; float() refuses it
        "99999999999999",  # three million years
        "Wed, 21 Oct 2015 07:28:00 GMT",  # an HTTP date: GitHub sends seconds
        "-1",
        "",
    ],
)
def test_a_retry_after_that_is_not_seconds_is_read_as_absent_and_said(github: FakeGitHub, value: str) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 1
    github.retry_after = value
    slept: list[float] = []
    fetching = source(github, slept)

    pr = fetching.fetch(7)

    assert pr.number == 7
    assert slept == [UNREADABLE_RATE_LIMIT_WAIT]  # GitHub's advice: a minute
    assert fetching.notes() == [
        f"GitHub's rate-limit header retry-after: {value!r} is not a usable number of seconds: read as "
        "absent (the wait went by GitHub's other header, or was 60s)"
    ]


@pytest.mark.parametrize("value", ["99999999999999", "²", "soon", "9999999999"])
def test_a_reset_that_is_no_time_within_the_hour_is_read_as_absent_and_said(
    github: FakeGitHub, value: str
) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 1
    github.rate_limit_reset = value
    slept: list[float] = []
    fetching = source(github, slept)

    assert fetching.fetch(7).number == 7
    assert slept == [UNREADABLE_RATE_LIMIT_WAIT]
    assert f"x-ratelimit-reset: {value!r} is not a usable number of seconds" in fetching.notes()[0]


def test_a_usable_reset_is_still_waited_for_and_nothing_is_said(github: FakeGitHub) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 1
    slept: list[float] = []
    fetching = source(github, slept)
    fetching.fetch(7)
    assert len(slept) == 1 and 0 < slept[0] <= github.rate_limit_reset_in + 1
    assert fetching.notes() == []


@pytest.mark.parametrize(("header", "value"), [("retry_after", "²"), ("rate_limit_reset", "99999999999999")])
def test_past_the_wait_limit_an_unreadable_header_is_named_in_the_error(
    github: FakeGitHub, header: str, value: str
) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 5
    setattr(github, header, value)
    slept: list[float] = []
    with pytest.raises(GitHubError) as info:
        source(github, slept, max_wait=90).fetch(7)
    name = "retry-after" if header == "retry_after" else "x-ratelimit-reset"
    assert str(info.value) == (
        "GitHub: rate limited; waited 60s in all, and this fetch waits at most 90s; GitHub's "
        f"{name}: {value!r} is not a usable number of seconds (read as absent), so the wait would be 60s "
        "more: try again then"
    )
    assert slept == [60.0]


# --- the PR asked for ---------------------------------------------------------------------------------------


def test_a_pull_answered_under_another_number_is_an_error_naming_both(github: FakeGitHub) -> None:
    serve_pull(github, number=7, answered_as=8)
    with pytest.raises(GitHubError) as info:
        source(github, []).fetch(7)
    assert str(info.value) == "GitHub: asked for PR #7 of octo/shapes, and the answer is PR #8"


# --- rubric draft -------------------------------------------------------------------------------------------


@pytest.fixture
def task_and_checkout(tmp_path: Path) -> tuple[Path, Path]:
    repo = GitRepo(tmp_path / "repo")
    repo.write("shapes/polygon.py", POLYGON)
    base = repo.commit("base")
    task = tmp_path / "tasks" / "fix_area"
    task.mkdir(parents=True)
    (task / "task.json").write_text(
        json.dumps({"id": "fix_area", "prompt": "fix the area", "base_commit": base})
    )
    return task, repo.path


def rubric_draft(tmp_path: Path, task_and_checkout: tuple[Path, Path], github: FakeGitHub) -> int:
    script = tmp_path / "draft.json"
    script.write_text(json.dumps(good_reply()))
    task, checkout = task_and_checkout
    return main(
        [
            "draft",
            str(task),
            "--checkout",
            str(checkout),
            "--github",
            "octo/shapes",
            "--pr",
            "7",
            "--github-api",
            github.url,
            "--drafter",
            f"scripted:{script}",
            "--out",
            str(tmp_path / "out"),
        ]
    )


def recording_waits(monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[float]:
    """`rubric draft`'s GitHub client, recording its waits instead of sleeping them."""
    slept: list[float] = []

    def made(*args: Any, **kwargs: Any) -> GitHubSource:
        return GitHubSource(*args, **{**kwargs, "sleep": slept.append, **kw})

    monkeypatch.setattr(grading.draft.pr, "GitHubSource", made)  # where `rubric draft` reads it
    return slept


def test_rubric_draft_waits_out_an_unreadable_retry_after_and_says_so(
    github: FakeGitHub,
    task_and_checkout: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 1
    github.retry_after = "²"
    slept = recording_waits(monkeypatch)

    code = rubric_draft(tmp_path, task_and_checkout, github)

    printed = capsys.readouterr().out
    assert code in (0, 1), printed  # 1: the scripted draft's own problems against this small checkout
    assert slept == [60.0]
    assert "  note: GitHub's rate-limit header retry-after: '²' is not a usable number of seconds" in printed
    assert (tmp_path / "out" / "rubric.json").is_file()


def test_rubric_draft_past_the_wait_limit_exits_1_with_one_line(
    github: FakeGitHub,
    task_and_checkout: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    serve_pull(github)
    github.rate_limited[PULL] = 5
    github.rate_limit_reset = "99999999999999"
    recording_waits(monkeypatch, max_wait=0)

    code = rubric_draft(tmp_path, task_and_checkout, github)

    printed = capsys.readouterr()
    assert code == 1
    assert printed.out.startswith("rubric: fetching the PR: GitHub: rate limited; waited 0s in all")
    assert "x-ratelimit-reset: '99999999999999' is not a usable number" in printed.out
    assert "Traceback" not in printed.out + printed.err
    assert not (tmp_path / "out").exists()


def test_rubric_draft_of_a_pull_answered_under_another_number_exits_1(
    github: FakeGitHub,
    task_and_checkout: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    serve_pull(github, number=7, answered_as=70)
    code = rubric_draft(tmp_path, task_and_checkout, github)
    assert code == 1
    assert capsys.readouterr().out == (
        "rubric: fetching the PR: GitHub: asked for PR #7 of octo/shapes, and the answer is PR #70\n"
    )
    assert not (tmp_path / "out").exists()
