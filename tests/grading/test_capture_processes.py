"""The git processes a capture starts: their number is the capture's fixed cost on a small change
(docs/benchmarks.md, issue 34), so it is pinned here by count, not by time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import grading.git
from grading.workspace.diff import capture, write_snapshot
from tests.gitrepo import GitRepo


@pytest.fixture
def git_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommand of every git process grading starts while the test runs, in order."""
    seen: list[str] = []
    real = grading.git.run_git

    def counted(args: Sequence[str], *rest: Any, **options: Any) -> grading.git.GitResult:
        seen.append(next(a for a in args if not a.startswith("-")))  # its subcommand
        return real(args, *rest, **options)

    monkeypatch.setattr(grading.git, "run_git", counted)
    return seen


def _edit_after_snapshot(git_repo: GitRepo, tmp_path: Path) -> Path:
    git_repo.write("src/a.py", "a\n")
    git_repo.write("docs/.gitattributes", "*.md eol=crlf\n")
    git_repo.write("docs/guide.md", "guide\n")
    git_repo.commit("base")
    snapshot = tmp_path / "snapshot"
    write_snapshot(git_repo.path, snapshot)
    return snapshot


def test_an_edit_against_the_snapshots_head_takes_four_git_processes(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert result.files_changed == 1
    # The record knows HEAD's .gitattributes (docs/ only): none applies to src/a.py, so git is not asked.
    assert git_commands == ["rev-parse", "ls-files", "status", "diff"]


def test_an_attributes_file_that_applies_is_still_looked_up(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("docs/guide.md", "guide, edited\n")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert result.files_changed == 1
    assert "ls-tree" in git_commands  # docs/.gitattributes may convert docs/guide.md on checkout
