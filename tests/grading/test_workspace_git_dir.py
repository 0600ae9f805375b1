"""A damaged .git still captures exactly (§3): the snapshot's private record holds what the capture needs,
and what the run changed under .git is named in git_dir_changes.txt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.errors import InputError
from grading.path_lists import read_path_list
from grading.run_files import GIT_DIR_CHANGES_NAME
from grading.workspace.diff import capture, write_snapshot
from grading.workspace.record import record_path
from tests.gitrepo import GitRepo
from tests.grading.workspace_helpers import agent_edits, apply_on_base, base_repo, listing


@pytest.fixture
def workspace(git_repo: GitRepo) -> tuple[GitRepo, str]:
    return git_repo, base_repo(git_repo)


def snapshot(repo: GitRepo, tmp_path: Path) -> Path:
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    return before


def reproduced(repo: GitRepo, base: str, run: Path, tmp_path: Path, source: GitRepo | None = None) -> None:
    """`git apply` of the capture on a clean checkout of base gives the workspace's files."""
    clone = apply_on_base(source or repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def changes(run: Path) -> list[str]:
    return read_path_list(run / GIT_DIR_CHANGES_NAME)


def pristine(repo: GitRepo, tmp_path: Path) -> GitRepo:
    """A copy of the repository before the run, to build the expected tree from when .git is damaged."""
    copy = GitRepo.__new__(GitRepo)
    copy.path = tmp_path / "pristine"
    shutil.copytree(repo.path / ".git", copy.path / ".git", symlinks=True)
    return copy


@pytest.mark.parametrize(
    "damage",
    ["garbage_index", "broken_config", "removed_git_dir", "deleted_objects", "git_dir_is_a_file"],
)
def test_a_damaged_git_dir_still_captures_exactly(
    workspace: tuple[GitRepo, str], tmp_path: Path, damage: str
) -> None:
    repo, base = workspace
    source = pristine(repo, tmp_path)
    before = snapshot(repo, tmp_path)
    agent_edits(repo)
    git_dir = repo.path / ".git"
    if damage == "garbage_index":
        (git_dir / "index").write_bytes(b"garbage, not an index\n")
        expected = [".git/index"]
    elif damage == "broken_config":
        (git_dir / "config").write_text("this is not [ a config\n")
        expected = [".git/config"]
    elif damage == "removed_git_dir":
        shutil.rmtree(git_dir)
        expected = [".git"]
    elif damage == "deleted_objects":
        shutil.rmtree(git_dir / "objects")
        (git_dir / "objects").mkdir()
        expected = []
    else:
        shutil.rmtree(git_dir)
        git_dir.write_text("gitdir: /nowhere\n")
        expected = [".git"]
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    reproduced(repo, base, run, tmp_path, source)
    assert result.base_commit == base
    got = changes(run)
    assert got == result.git_dir_changes
    if expected:
        assert all(p in got for p in expected)
    if damage == "deleted_objects":
        assert any(p.startswith(".git/objects/") for p in got)


@pytest.mark.parametrize(
    "damage", ["exclude_fifo", "exclude_to_dev_zero", "packed_refs_fifo", "sparse_terabyte"]
)
def test_what_the_run_left_under_git_never_blocks_the_capture(
    workspace: tuple[GitRepo, str], tmp_path: Path, deadline: None, damage: str
) -> None:
    """Opening a FIFO blocks, /dev/zero never ends and a sparse terabyte takes an hour to hash: each is
    named at once, and the diff is taken as for any run."""
    repo, base = workspace
    git_dir = repo.path / ".git"
    grown = git_dir / "description"
    grown.write_text("a file that is there before the run\n")
    assert not (git_dir / "packed-refs").exists()  # so the run's packed-refs is a new path
    source = pristine(repo, tmp_path)
    before = snapshot(repo, tmp_path)
    repo.write("modify.txt", "edited\n")
    if damage == "exclude_fifo":
        (git_dir / "info" / "exclude").unlink()
        os.mkfifo(git_dir / "info" / "exclude")
        expected = ".git/info/exclude"
    elif damage == "exclude_to_dev_zero":
        (git_dir / "info" / "exclude").unlink()
        (git_dir / "info" / "exclude").symlink_to("/dev/zero")
        expected = ".git/info/exclude"
    elif damage == "packed_refs_fifo":
        os.mkfifo(git_dir / "packed-refs")
        expected = ".git/packed-refs"
    else:
        os.truncate(grown, 1 << 40)
        expected = ".git/description"
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    assert result.git_dir_changes == [expected] and changes(run) == [expected]
    reproduced(repo, base, run, tmp_path, source)


def test_damage_without_the_change_failed_capture(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    """The record is what makes this work: without it (a v3 snapshot) git cannot read the repository."""
    repo, base = workspace
    before = snapshot(repo, tmp_path)
    shutil.rmtree(record_path(before))
    with pytest.raises(InputError, match="private record is missing"):
        capture(repo.path, base, before, tmp_path / "run")


def test_an_untouched_git_dir_has_no_changes_even_after_git_status(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = snapshot(repo, tmp_path)
    repo.write("modify.txt", "edited\n")
    repo.write("new.txt", "new\n")
    index = repo.path / ".git" / "index"
    old_index = index.read_bytes()
    os.utime(repo.path / "keep.txt", (1_900_000_000, 1_900_000_000))  # same content, new stat
    repo.git("status", "--porcelain")  # refreshes the index's stat cache, and rewrites it
    repo.git("diff")
    repo.git("log", "--oneline")
    assert index.read_bytes() != old_index

    result = capture(repo.path, base, before, tmp_path / "run")

    assert result.git_dir_changes == [] and changes(tmp_path / "run") == []
    reproduced(repo, base, tmp_path / "run", tmp_path)


def test_what_the_run_wrote_under_git_is_named(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = workspace
    before = snapshot(repo, tmp_path)
    repo.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", executable=True)
    repo.git("config", "core.fsmonitor", "evil")
    repo.write(".git/objects/info/alternates", "/elsewhere/objects\n")
    repo.git("replace", "-f", base, repo.git("commit-tree", "-m", "fake", f"{base}^{{tree}}").strip())
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    got = changes(run)
    assert ".git/hooks/pre-commit" in got and ".git/config" in got
    assert ".git/objects/info/alternates" in got
    assert any(p.startswith(".git/refs/replace/") for p in got)
    assert result.base_commit == base
    reproduced(repo, base, run, tmp_path)


def test_history_work_under_git_is_not_a_change(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    """Staging, committing, resetting, branching, tagging, stashing and deleting a packed branch are what a
    developer does with git: the diff is still against the base, and nothing under .git is named."""
    repo, base = workspace
    repo.git("branch", "old-feature")
    repo.git("pack-refs", "--all")
    before = snapshot(repo, tmp_path)
    repo.write("stashed.txt", "s\n")
    repo.git("add", "stashed.txt")
    repo.git("stash")
    repo.write("staged.txt", "x\n")
    repo.git("add", "staged.txt")
    repo.git("commit", "-q", "-m", "agent")
    repo.write("dropped.txt", "committed, then reset away\n")
    repo.git("add", "dropped.txt")
    repo.git("commit", "-q", "-m", "dropped")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.git("checkout", "-q", "-b", "agent/work")
    repo.git("tag", "agent-tag")
    repo.git("branch", "-D", "old-feature")
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    assert changes(run) == []
    assert result.base_commit == base
    reproduced(repo, base, run, tmp_path)


def test_a_rewritten_object_or_a_replace_ref_in_packed_refs_is_named(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = snapshot(repo, tmp_path)
    loose = sorted(p for p in (repo.path / ".git" / "objects").glob("??/*"))[0]
    loose.chmod(0o644)
    loose.write_bytes(b"not the object it was")
    packed = repo.path / ".git" / "packed-refs"
    packed.write_text(f"# pack-refs with: peeled fully-peeled sorted\n{base} refs/replace/{base}\n")
    run = tmp_path / "run"

    capture(repo.path, base, before, run)

    got = changes(run)
    assert loose.relative_to(repo.path).as_posix() in got
    assert ".git/packed-refs" in got


def test_a_base_older_than_head_is_read_from_the_workspace_objects(git_repo: GitRepo, tmp_path: Path) -> None:
    old = base_repo(git_repo)
    git_repo.write("later.txt", "after the base\n")
    git_repo.commit("later")
    before = snapshot(git_repo, tmp_path)
    git_repo.write("keep.txt", "edited\n")

    result = capture(git_repo.path, old, before, tmp_path / "run")

    assert result.base_commit == old
    assert "later.txt" in (tmp_path / "run" / "workspace.diff").read_text(errors="replace")


def test_snapshot_inside_the_workspace_is_refused(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, _ = workspace
    with pytest.raises(InputError, match="inside the workspace"):
        write_snapshot(repo.path, repo.path / "before.txt")
    assert not (repo.path / "before.txt").exists()


def test_cli_names_git_dir_changes(
    workspace: tuple[GitRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    assert main(["snapshot", str(repo.path), "-o", str(before)]) == 0
    (repo.path / ".git" / "index").write_bytes(os.urandom(64))
    capsys.readouterr()
    run = tmp_path / "run"
    assert main(["capture", str(repo.path), "--base", base, "--before", str(before), "--out", str(run)]) == 0
    assert "note: the run changed 1 path under .git: .git/index" in capsys.readouterr().out


def test_integrity_names_each_changed_path_up_to_a_cap_then_counts(tmp_path: Path) -> None:
    from grading.checks.integrity import GIT_DIR_VIOLATIONS_MAX, check_integrity

    paths = [f".git/objects/{i:02x}/x" for i in range(GIT_DIR_VIOLATIONS_MAX + 3)]
    result = check_integrity(None, [], None, None, None, None, git_dir_changes=paths)
    assert not result.ok and "git_dir" in result.measured
    assert [v.path for v in result.violations] == [*paths[:GIT_DIR_VIOLATIONS_MAX], None]
    assert "and 3 more paths under .git" in result.violations[-1].detail
    clean = check_integrity(None, [], None, None, None, None, git_dir_changes=[])
    assert clean.ok and "git_dir" in clean.measured
    unknown = check_integrity(None, [], None, None, None, None)
    assert "git_dir" not in unknown.measured
