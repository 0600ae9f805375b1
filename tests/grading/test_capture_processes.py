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


@pytest.mark.parametrize("change", ["new file", "new file ignored"])
def test_a_new_file_under_the_same_rules_needs_no_status(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str], change: str
) -> None:
    """The rules are the snapshot's: git add -N refuses the ignored new files itself, and check-ignore runs
    only for a new file the diff does not show."""
    snapshot = _ignoring_repo(git_repo, tmp_path)
    git_repo.write("src/a.py", "b\n")
    new = "src/new.py" if change == "new file" else "other.log"
    git_repo.write(new, "new\n")
    git_commands.clear()
    result = capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert git_commands == (["add", "diff"] if change == "new file" else ["add", "diff", "check-ignore"])
    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert (f"diff --git a/{new} b/{new}".encode() in diff) == (change == "new file")
    assert result.ignored_created == ([] if change == "new file" else ["other.log"])


def test_a_new_file_without_any_ignore_rule_is_two_git_processes(
    git_repo: GitRepo, tmp_path: Path, git_commands: list[str]
) -> None:
    git_repo.write("src/a.py", "a\n")
    git_repo.commit("base")
    snapshot = tmp_path / "snapshot"
    write_snapshot(git_repo.path, snapshot)
    git_repo.write("src/a.py", "b\n")
    git_repo.write("src/new.py", "new\n")
    git_commands.clear()
    capture(git_repo.path, "HEAD", snapshot, tmp_path / "run")
    assert git_commands == ["add", "diff"]
    assert b"diff --git a/src/new.py b/src/new.py" in (tmp_path / "run" / "workspace.diff").read_bytes()


def _odd_new_files(git_repo: GitRepo) -> None:
    """New files of every kind the rules could treat apart, names git might read as pathspecs included."""
    for rel, text in [
        ("build/out.o", "ignored directory\n"),
        ("build/keep.txt", "re-included in an excluded directory: still ignored\n"),
        ("logs/keep.log", "re-included\n"),
        ("logs/x.log", "ignored\n"),
        ("src/*.py", "a glob as a name\n"),
        ("src/:(glob)x", "magic as a name\n"),
        ("src/-dash.txt", "an option as a name\n"),
        ("src/sub/deep.tmp", "ignored by a nested .gitignore\n"),
        ("src/sub/deep.py", "new\n"),
        ("GIT~1", "the NTFS short name of .git\n"),
        ("src/empty.py", ""),
    ]:
        git_repo.write(rel, text)
    (git_repo.path / os.fsdecode(b"src/caf\xe9.txt")).write_bytes(b"latin-1 name\n")
    os.symlink("a.py", git_repo.path / "src" / "link.py")


@pytest.mark.parametrize("exclude", ["", "*.tmp\n"])
def test_new_files_are_captured_byte_for_byte_as_git_status_would_list_them(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exclude: str
) -> None:
    """The capture without git status writes the same files as with it (the scan that lists the work
    tree), and finds the same untracked, ignored and unrepresentable files."""
    git_repo.write("src/a.py", "a\n")
    git_repo.write(".gitignore", "*.log\n!logs/keep.log\nbuild/\n!build/keep.txt\n")
    git_repo.write("src/sub/.gitignore", "" if exclude else "*.tmp\n")
    git_repo.write("gone.txt", "removed from the index, left on disk\n")
    git_repo.commit("base")
    (git_repo.path / ".git" / "info").mkdir(exist_ok=True)
    (git_repo.path / ".git" / "info" / "exclude").write_text(exclude)
    git_repo.git("rm", "-q", "--cached", "gone.txt")  # untracked, and equal to its base blob
    git_repo.write("old.log", "ignored before the run\n")
    snapshot = tmp_path / "snapshot"
    write_snapshot(git_repo.path, snapshot)
    git_repo.write("src/a.py", "b\n")
    _odd_new_files(git_repo)
    fast = capture(git_repo.path, "HEAD", snapshot, tmp_path / "fast")
    monkeypatch.setattr(grading.workspace.diff, "_scan_unchanged", lambda *args: None)
    slow = capture(git_repo.path, "HEAD", snapshot, tmp_path / "slow")
    for name in ("workspace.diff", "ignored_created.txt", "git_dir_changes.txt"):
        assert (tmp_path / "fast" / name).read_bytes() == (tmp_path / "slow" / name).read_bytes(), name
    fast.diff_path = slow.diff_path
    assert fast == slow
    assert "build/keep.txt" in fast.ignored_created and "src/sub/deep.tmp" in fast.ignored_created
    diff = (tmp_path / "fast" / "workspace.diff").read_bytes()
    assert b"b/src/*.py" in diff and b"b/logs/keep.log" in diff and b"src/link.py" in diff


@pytest.mark.parametrize(
    "change",
    [
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
