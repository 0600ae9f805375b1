"""A FIFO, socket or device the run left in the work tree (§3): git cannot hash it, so the capture leaves it
out of the diff without reading it, and names it (integrity rule special_file) so the run is not mergeable
and never ungradeable."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from grading.checks.integrity import SPECIAL_FILE_VIOLATIONS_MAX, check_integrity, integrity_for_run
from grading.cli.rubric import main
from grading.path_lists import read_ignored_created, read_path_list
from grading.workspace.diff import capture, write_snapshot
from tests.gitrepo import GitRepo
from tests.grading.workspace_helpers import agent_edits, apply_on_base, base_repo, listing

MANIFEST = 'name: example\ntests:\n  globs: ["**/tests/**"]\n'


def make_special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:  # /dev/zero's numbers: read, it never ends
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("making a device node needs root")
    else:
        # bind() leaves the socket file behind; relative to the directory, the path stays under 108 bytes
        cwd = os.getcwd()
        os.chdir(path.parent)
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(path.name)
        finally:
            os.chdir(cwd)


@pytest.fixture
def workspace(git_repo: GitRepo) -> tuple[GitRepo, str]:
    git_repo.write("shapes/__init__.py", "from .circle import Circle\n")
    git_repo.write("shapes/circle.py", "class Circle:\n    pass\n")
    return git_repo, base_repo(git_repo)


@pytest.mark.parametrize(
    ("where", "kind", "deleted"),
    [
        ("shapes/__init__.py", "fifo", True),  # a tracked file replaced
        ("shapes/__init__.py", "socket", True),
        ("shapes/__init__.py", "device", True),
        ("shapes/new_pipe", "fifo", False),  # a new untracked one
        ("new.sock", "socket", False),
        ("build/ignored_pipe", "fifo", False),  # under an ignored directory
        # git opens these by name in every directory it visits: a FIFO must read as empty, not block
        (".gitignore", "fifo", True),
        ("shapes/.gitattributes", "fifo", False),
        (".gitmodules", "fifo", False),
    ],
)
def test_a_special_file_is_absent_from_the_diff_and_named(
    workspace: tuple[GitRepo, str], tmp_path: Path, deadline: None, where: str, kind: str, deleted: bool
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    target = repo.path / where
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    make_special(target, kind)
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    assert result.special_files == [where]
    assert read_ignored_created(run / "ignored_created.txt").special_files == [where]
    assert where not in read_path_list(run / "ignored_created.txt")  # a comment: not an ignored file
    diff = (run / "workspace.diff").read_text()
    if deleted:
        assert f"diff --git a/{where} b/{where}\ndeleted file mode 100644\n" in diff
    else:
        assert where not in diff
    # Without the special file, `git apply` on the base gives the workspace back.
    target.unlink()
    assert listing(apply_on_base(repo, base, run / "workspace.diff", tmp_path / "clone").path) == listing(
        repo.path
    )


def test_symlinks_to_a_fifo_or_a_device_are_diffed_as_links_never_followed(
    workspace: tuple[GitRepo, str], tmp_path: Path, deadline: None
) -> None:
    """git records a link's target: a link to /dev/zero or to a FIFO is an ordinary change."""
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    (repo.path / "shapes" / "__init__.py").unlink()
    (repo.path / "shapes" / "__init__.py").symlink_to("/dev/zero")
    pipe = tmp_path / "outside_pipe"
    os.mkfifo(pipe)
    (repo.path / "to_pipe").symlink_to(pipe)
    run = tmp_path / "run"

    result = capture(repo.path, base, before, run)

    assert result.special_files == []
    diff = (run / "workspace.diff").read_text()
    assert "+/dev/zero\n" in diff and f"+{pipe}\n" in diff
    clone = apply_on_base(repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def test_without_the_fix_git_cannot_hash_a_tracked_fifo(workspace: tuple[GitRepo, str]) -> None:
    """What the capture works around: plain `git diff` fails on a tracked file that became a FIFO."""
    repo, base = workspace
    (repo.path / "shapes" / "__init__.py").unlink()
    os.mkfifo(repo.path / "shapes" / "__init__.py")
    with pytest.raises(RuntimeError, match="cannot hash"):
        repo.git("diff", base)


def test_the_run_fails_integrity_and_the_cli_says_why(
    workspace: tuple[GitRepo, str], tmp_path: Path, deadline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    assert main(["snapshot", str(repo.path), "-o", str(before)]) == 0
    (repo.path / "shapes" / "__init__.py").unlink()
    os.mkfifo(repo.path / "shapes" / "__init__.py")
    run = tmp_path / "run"
    capsys.readouterr()

    assert main(["capture", str(repo.path), "--base", base, "--before", str(before), "--out", str(run)]) == 0

    out = capsys.readouterr().out
    assert "note: the run left 1 FIFO, socket or device in the work tree" in out
    assert "shapes/__init__.py" in out
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    task = tmp_path / "task"
    task.mkdir()
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text(MANIFEST)
    result = integrity_for_run(task, run, manifest)
    assert not result.ok
    assert [(v.rule, v.path) for v in result.violations] == [("special_file", "shapes/__init__.py")]


def test_special_file_violations_are_capped_then_counted() -> None:
    paths = [f"pipe{i:02d}" for i in range(SPECIAL_FILE_VIOLATIONS_MAX + 2)]
    result = check_integrity(None, [], None, None, None, None, special_files=paths)
    assert not result.ok
    assert [v.path for v in result.violations] == [*paths[:SPECIAL_FILE_VIOLATIONS_MAX], None]
    assert "and 2 more such paths" in result.violations[-1].detail
    assert check_integrity(None, [], None, None, None, None).ok
