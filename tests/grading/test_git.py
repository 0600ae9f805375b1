"""The one git runner: isolated from the host's config, bounded in time and output, used by every caller."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from grading.git import NO_COMMANDS_CONFIG, Git, GitError, GitTimeout
from tests.gitrepo import GitRepo

ROOT = Path(__file__).resolve().parents[2]


def test_a_command_past_its_time_is_killed_with_what_it_started(git_repo: GitRepo, tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    # An alias runs a shell: it stands in for git work that never ends, and for a child git would start.
    git = Git(git_repo.path, config=[("alias.hang", f"!sleep 3; touch {marker}")], timeout=0.5)
    started = time.monotonic()
    with pytest.raises(GitTimeout, match=r"git hang ran longer than 0.5 s"):
        git.run("hang")
    assert time.monotonic() - started < 2.5
    time.sleep(3)
    assert not marker.exists()  # the shell and its sleep died with git


def test_output_past_its_bound_is_an_error_not_a_partial_read(git_repo: GitRepo) -> None:
    git_repo.write("big.txt", "x" * 10_000)
    git_repo.commit("big")
    with pytest.raises(GitError, match=r"git cat-file printed more than 1000 bytes"):
        Git(git_repo.path, max_output=1000).run("cat-file", "blob", "HEAD:big.txt")
    assert len(Git(git_repo.path, max_output=10_000).run("cat-file", "blob", "HEAD:big.txt")) == 10_000


def test_a_head_read_stops_git_once_it_has_enough(git_repo: GitRepo) -> None:
    git_repo.write("big.txt", "".join(f"{n:09}\n" for n in range(100_000)))  # 1 MB
    git_repo.commit("big")
    git = Git(git_repo.path, max_output=1000)  # reading it whole is an error
    assert git.head("cat-file", "blob", "HEAD:big.txt", max_bytes=25) == (
        b"000000000\n000000001\n00000",
        True,
    )
    assert git.head("cat-file", "blob", "HEAD:big.txt", max_bytes=1_000_000) == (
        "".join(f"{n:09}\n" for n in range(100_000)).encode(),
        False,
    )
    with pytest.raises(GitError, match=r"git cat-file failed: fatal: path 'nope' does not exist"):
        git.head("cat-file", "blob", "HEAD:nope", max_bytes=10)
    seen: list[int] = []

    def count(chunk: bytes) -> bool:
        seen.append(len(chunk))
        return True

    result = git.result("cat-file", "blob", "HEAD:big.txt", sink=count)
    assert result.returncode == 0 and not result.stopped and result.stdout == b"" and sum(seen) == 1_000_000


def test_large_stdin_and_stdout_do_not_deadlock(git_repo: GitRepo) -> None:
    git_repo.write("a.txt", "a\n")
    git_repo.commit("a")
    names = b"".join(b"HEAD:a.txt\n" for _ in range(20_000))  # larger than a pipe's buffer, both ways
    out = Git(git_repo.path).run("cat-file", "--batch-check", stdin=names)
    assert out.count(b"\n") == 20_000


def test_the_callers_environment_and_config_play_no_part(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = git_repo.commit("base")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = From The Host\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    git = Git(git_repo.path)
    assert git.run("config", "user.name", ok_codes=(0, 1)) == b""
    assert git.run("rev-parse", "HEAD").strip().decode() == head


def test_a_repository_hook_never_runs(git_repo: GitRepo, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    git_repo.write(".git/hooks/pre-commit", f"#!/bin/sh\ntouch {marker}\n", executable=True)
    git_repo.write("a.txt", "a\n")
    git = Git(git_repo.path, {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a",
                              "GIT_COMMITTER_EMAIL": "a@x"})  # fmt: skip
    git.run("add", "a.txt")
    git.run("commit", "-q", "-m", "a")
    assert ("core.hooksPath", "/dev/null") in NO_COMMANDS_CONFIG
    assert not marker.exists()


def test_a_failure_names_the_command_and_gits_reason(git_repo: GitRepo) -> None:
    with pytest.raises(GitError, match=r"git rev-parse failed: .*"):
        Git(git_repo.path).run("--literal-pathspecs", "rev-parse", "--verify", "no-such-ref")


def test_every_git_call_of_grading_and_the_app_goes_through_the_one_runner() -> None:
    """No module but grading/git.py starts git itself (each copy was hardened differently)."""
    starts_git = re.compile(r"""\[\s*["']git["']""")
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("grading", "rubrics_app")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "grading" / "git.py" and starts_git.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
