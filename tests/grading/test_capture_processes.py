"""The git processes a capture starts: their number is the capture's fixed cost on a small change
(docs/benchmarks.md, issue 34), so it is pinned here by count, not by time."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import grading.git
import grading.workspace.diff
import grading.workspace.git
from grading.workspace.diff import capture, write_snapshot
from grading.workspace.record import record_path
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


@pytest.mark.parametrize("base", ["HEAD", "head id"])
def test_an_edit_against_the_snapshots_head_takes_one_git_process(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str], base: str
) -> None:
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    head = git_repo.head()
    git_repo.write("src/a.py", "b\n")
    git_commands.clear()
    result = capture(git_repo.path, head if base == "head id" else base, snapshot, tmp_path / "run")
    assert result.files_changed == 1
    assert result.base_commit == head
    # The record holds HEAD, the object format and the index's listing (no rev-parse, no ls-files); every
    # file is tracked and the .gitignore files are the snapshot's, so nothing is new (no status); and
    # HEAD's .gitattributes (docs/ only): none applies to src/a.py, so git is not asked about them either.
    assert git_commands == ["diff"]


def _ignoring_repo(git_repo: GitRepo, tmp_path: Path) -> Path:
    git_repo.write("src/a.py", "a\n")
    git_repo.write(".gitignore", "*.log\n")
    git_repo.commit("base")
    git_repo.write("build.log", "old log\n")
    snapshot = tmp_path / "snapshot"
    write_snapshot(git_repo.path, snapshot)
    return snapshot


def test_files_ignored_before_the_run_need_no_status(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    snapshot = _ignoring_repo(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    git_repo.write("build.log", "rewritten, still ignored\n")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert git_commands == ["diff"]
    assert result.files_changed == 1
    assert result.ignored_created == []


@pytest.mark.parametrize(
    "change",
    [
        "new file",
        "new file ignored",
        "gitignore edited",
        "gitignore removed",
        "nested repository",
        "upper .GIT",
    ],
)
def test_anything_new_since_the_snapshot_is_listed_by_git(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str], change: str
) -> None:
    """Each of these could make a file untracked or newly ignored: git status lists the work tree."""
    snapshot = _ignoring_repo(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    shown: str | None = None
    if change == "new file":
        git_repo.write("src/new.py", "new\n")
        shown = "src/new.py"
    elif change == "new file ignored":
        git_repo.write("other.log", "new log\n")
    elif change == "gitignore edited":
        git_repo.write(".gitignore", "# logs are kept now\n")
        shown = "build.log"  # ignored before the run, untracked now: in the diff
    elif change == "gitignore removed":
        (git_repo.path / ".gitignore").unlink()
        shown = "build.log"
    elif change == "nested repository":
        GitRepo(git_repo.path / "vendor").write("lib.py", "lib\n")
        shown = "vendor/lib.py"
    else:
        git_repo.write(".GIT/x", "x\n")  # no diff can carry it: listed with the ignored files
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert "status" in git_commands
    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    if shown is not None:
        assert f"diff --git a/{shown} b/{shown}".encode() in diff
    if change == "new file ignored":
        assert result.ignored_created == ["other.log"]
    if change == "upper .GIT":
        assert result.unrepresentable == [".GIT/x"]


def test_another_base_is_resolved_by_git(git_repo: GitRepo, tmp_path: Path, git_commands: list[str]) -> None:
    git_repo.write("src/a.py", "a\n")
    first = git_repo.commit("first")
    git_repo.git("branch", "older")
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    git_commands.clear()
    result = capture(git_repo.path, "older", snapshot, tmp_path / "run")
    assert result.base_commit == first
    assert git_commands[0] == "rev-parse"
    assert b"+guide" in (tmp_path / "run" / "workspace.diff").read_bytes()  # added since "older"


def test_a_record_without_the_index_listing_asks_git_for_it(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    """A record written before the listing was kept: the same capture, with one more git process."""
    git_repo.write("src/a.py", "a\n")
    git_repo.commit("base")
    git_repo.git("update-index", "--assume-unchanged", "src/a.py")  # only the index listing shows this bit
    snapshot = tmp_path / "snapshot"
    write_snapshot(git_repo.path, snapshot)
    git_repo.write("src/a.py", "b\n")
    git_commands.clear()
    kept = capture(git_repo.path, "HEAD", snapshot, tmp_path / "kept")
    assert "ls-files" not in git_commands
    (record_path(snapshot) / "index-listing").unlink()
    git_commands.clear()
    asked = capture(git_repo.path, "HEAD", snapshot, tmp_path / "asked")
    assert git_commands.count("ls-files") == 1
    assert asked.files_changed == kept.files_changed == 1  # the edit the bit would hide is there
    diffs = [(tmp_path / run / "workspace.diff").read_bytes() for run in ("kept", "asked")]
    assert diffs[0] == diffs[1]


def test_a_rewritten_index_is_listed_once(git_repo: GitRepo, tmp_path: Path, git_commands: list[str]) -> None:
    """The run staged a file: .git/index holds other entries, which one ls-files of it tells."""
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    git_repo.git("add", "src/a.py")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert result.git_dir_changes == []  # staging is history work
    assert git_commands.count("ls-files") == 1


def test_the_scratch_directory_is_in_tmpdir_when_it_is_set(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = grading.workspace.git.scratch_directory

    @contextlib.contextmanager
    def seen(prefix: str) -> Iterator[str]:
        with real(prefix) as name:
            made.append(name)
            yield name

    monkeypatch.setattr(grading.workspace.diff, "scratch_directory", seen)
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "chosen"))
    (tmp_path / "chosen").mkdir()
    made.clear()
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert made and all(Path(name).parent == tmp_path / "chosen" for name in made)


def test_an_attributes_file_that_applies_is_still_looked_up(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    snapshot = _edit_after_snapshot(git_repo, tmp_path)
    git_repo.write("docs/guide.md", "guide, edited\n")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert result.files_changed == 1
    assert "ls-tree" in git_commands  # docs/.gitattributes may convert docs/guide.md on checkout


def test_the_scratch_directory_is_in_memory_when_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the tmpfs when it has the room a scratch directory may need; elsewhere tempfile's place."""
    monkeypatch.delenv("TMPDIR", raising=False)
    memory = tmp_path / "memory"
    memory.mkdir()
    monkeypatch.setattr(grading.workspace.git, "_TMPFS", str(memory))
    with grading.workspace.git.scratch_directory("rubric-test-") as name:
        assert Path(name).parent == memory
    free = os.statvfs(memory)
    monkeypatch.setattr(grading.workspace.git, "_TMPFS_MIN_FREE", free.f_bavail * free.f_frsize * 2 + 1)
    with grading.workspace.git.scratch_directory("rubric-test-") as name:
        assert Path(name).parent != memory
    monkeypatch.setattr(grading.workspace.git, "_TMPFS", str(tmp_path / "absent"))
    with grading.workspace.git.scratch_directory("rubric-test-") as name:
        assert Path(name).is_dir()


def test_the_scratch_directory_in_memory_is_removed_with_all_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made and removed without tempfile: git's read-only object files, nested directories and a symbolic
    link (not followed) go with it, also when the work inside fails."""
    monkeypatch.delenv("TMPDIR", raising=False)
    memory = tmp_path / "memory"
    memory.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("kept\n")
    monkeypatch.setattr(grading.workspace.git, "_TMPFS", str(memory))
    with pytest.raises(RuntimeError), grading.workspace.git.scratch_directory("rubric-test-") as name:
        scratch = Path(name)
        assert scratch.parent == memory and scratch.stat().st_mode & 0o777 == 0o700
        (scratch / "gitdir" / "objects" / "ab").mkdir(parents=True)
        blob = scratch / "gitdir" / "objects" / "ab" / "cdef"
        blob.write_bytes(b"x")
        blob.chmod(0o444)
        (scratch / "link").symlink_to(outside, target_is_directory=True)
        raise RuntimeError("git failed")
    assert list(memory.iterdir()) == []
    assert (outside / "kept").read_text() == "kept\n"


def test_a_copied_index_keeps_its_mtime(tmp_path: Path) -> None:
    """The scratch index's mtime decides which entries git takes for racily clean: it must be the index's."""
    index = tmp_path / "index"
    index.write_bytes(b"DIRC")
    os.utime(index, ns=(1_000_000_000, 2_000_000_123))
    grading.workspace.git.copy_file(index, tmp_path / "copy", keep_mtime=True)
    assert (tmp_path / "copy").read_bytes() == b"DIRC"
    assert os.stat(tmp_path / "copy").st_mtime_ns == 2_000_000_123
