"""The capture diffs the bytes on disk (grading/workspace/bytes.py): no line-ending or encoding
conversion adds a change the run never made or hides one it made, and a file holding a NUL byte anywhere
is a binary patch, so every captured run can be graded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.diffs import FileChange, load_diff
from grading.git_quote import path_text
from tests.gitrepo import GitRepo
from tests.grading.task_helpers import FIXED, Task
from tests.grading.workspace_helpers import apply_on_base, listing

CRLF_SCRIPT = b"#!/bin/sh\r\necho push\r\necho done\r\n"
LONG_AGO = 1_600_000_000_000_000_000  # ns


def stale(repo: GitRepo, *paths: str) -> None:
    """Give each file a stat the index does not hold, so git must read and hash it again (what a checkout
    in the same second as its index, or a copied work tree, leaves to chance)."""
    for path in paths:
        os.utime(repo.path / path, ns=(LONG_AGO, LONG_AGO))


def snapshot_and_capture(repo: GitRepo, base: str, tmp_path: Path, edit: object = None) -> Path:
    """`rubric snapshot`, then ``edit(repo)``, then `rubric capture`; the run directory."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    before = tmp_path / "before.txt"
    assert main(["snapshot", str(repo.path), "-o", str(before)]) == 0
    if callable(edit):
        edit(repo)
    run = tmp_path / "run"
    assert main(["capture", str(repo.path), "--base", base, "--before", str(before), "--out", str(run)]) == 0
    return run


def changes(run: Path) -> dict[str, FileChange]:
    return {c.new_path or c.old_path or "": c for c in load_diff(run / "workspace.diff")}


@pytest.fixture
def crlf_under_eol_lf(git_repo: GitRepo) -> tuple[GitRepo, str]:
    """libgit2's tests/resources/push.sh: a blob with CRLF endings, then `*.sh text eol=lf` committed."""
    git_repo.write("push.sh", CRLF_SCRIPT)
    git_repo.write("README", "readme\n")
    git_repo.commit("a script with CRLF line endings")
    git_repo.write(".gitattributes", "*.sh text eol=lf\n")
    git_repo.git("add", ".gitattributes")
    git_repo.git("commit", "-q", "-m", "normalise scripts")
    return git_repo, git_repo.head()


@pytest.mark.parametrize("how", ["stat made stale", "same bytes written again"])
def test_an_untouched_crlf_blob_under_eol_lf_is_not_in_the_diff(
    crlf_under_eol_lf: tuple[GitRepo, str], tmp_path: Path, how: str
) -> None:
    repo, base = crlf_under_eol_lf

    def touch(repo: GitRepo) -> None:
        if how == "same bytes written again":
            repo.write("push.sh", CRLF_SCRIPT)
        stale(repo, "push.sh")

    run = snapshot_and_capture(repo, base, tmp_path, touch)

    assert (run / "workspace.diff").read_bytes() == b""
    # The trap is live: git, hashing the file with the repository's attributes, calls it rewritten.
    assert "push.sh" in repo.git("diff", "--name-only", base)


def test_an_edit_to_a_crlf_file_is_diffed_byte_for_byte(
    crlf_under_eol_lf: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = crlf_under_eol_lf

    def edit(repo: GitRepo) -> None:
        repo.write("push.sh", CRLF_SCRIPT.replace(b"echo push", b"echo pushed"))

    run = snapshot_and_capture(repo, base, tmp_path, edit)

    push = changes(run)["push.sh"]
    assert (push.added, push.removed) == (1, 1)  # the one line, not every line made LF
    assert b"+echo pushed\r\n" in (run / "workspace.diff").read_bytes()
    clone = apply_on_base(repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def test_line_endings_git_would_normalise_away_are_in_the_diff(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write(".gitattributes", "*.sh text eol=lf\n")
    git_repo.write("push.sh", CRLF_SCRIPT.replace(b"\r\n", b"\n"))
    base = git_repo.commit("base")

    def to_crlf(repo: GitRepo) -> None:
        repo.write("push.sh", CRLF_SCRIPT)
        repo.write("new.sh", b"echo new\r\n")

    run = snapshot_and_capture(git_repo, base, tmp_path, to_crlf)

    found = changes(run)
    assert (found["push.sh"].added, found["push.sh"].removed) == (3, 3)
    assert b"+echo new\r\n" in (run / "workspace.diff").read_bytes()
    clone = apply_on_base(git_repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(git_repo.path)
    # What git alone says: nothing changed in push.sh, since its clean filter gives back the base blob.
    assert "push.sh" not in git_repo.git("diff", "--name-only", base)


def test_a_file_the_checkout_of_the_base_converted_is_in_the_diff_only_once_edited(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    # A checkout writes other bytes than the blob for these: CRLF, an expanded $Id$, UTF-16.
    git_repo.write(".gitattributes", "*.bat text eol=crlf\n*.c ident\n*.u16 working-tree-encoding=UTF-16LE\n")
    git_repo.write("make.bat", "@echo off\nbuild\n")
    git_repo.write("main.c", "/* $Id$ */\nint main(void) { return 0; }\n")
    git_repo.write("names.u16", "ünï\ncödé\n".encode("utf-16-le"))
    base = git_repo.commit("base")
    converted = ("make.bat", "main.c", "names.u16")
    for path in converted:
        (git_repo.path / path).unlink()
    git_repo.git("checkout", "--", ".")
    assert (git_repo.path / "make.bat").read_bytes() == b"@echo off\r\nbuild\r\n"

    run = snapshot_and_capture(git_repo, base, tmp_path, lambda repo: stale(repo, *converted))
    assert (run / "workspace.diff").read_bytes() == b""

    def edit(repo: GitRepo) -> None:
        repo.write("make.bat", "@echo off\r\nbuild all\r\n")
        stale(repo, *converted)

    run = snapshot_and_capture(git_repo, base, tmp_path / "edited", edit)
    assert sorted(changes(run)) == ["make.bat"]
    clone = apply_on_base(git_repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(git_repo.path)


def late_nul(text: str) -> bytes:
    """Text whose first NUL byte is at offset 9,000, past the 8,000 bytes git looks at."""
    head = text.encode()
    return head + b"#" * (9000 - len(head)) + b"\0 more text\n"


ODD = 'odd *[x] "q"?.dat'
ODDER = os.fsdecode(b"#new\nline\\ \xe9 [!x].dat")  # quoted by git: a newline, a backslash, not UTF-8
ODDER_SHOWN = path_text(os.fsencode(ODDER))  # as the diff reader names it


def test_a_late_nul_byte_makes_a_binary_patch_on_either_side(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write("notes.txt", "plain text\n")
    git_repo.write("logo.ai", late_nul("%!PS-Adobe-3.0\n"))
    git_repo.write("odd *[x] other.dat", "a name the pattern must not catch\n")
    (git_repo.path / "link").symlink_to("notes.txt")
    base = git_repo.commit("base")

    def edit(repo: GitRepo) -> None:
        repo.write("notes.txt", late_nul("plain text\n"))  # text made binary
        repo.write("logo.ai", "%!PS-Adobe-3.0\n")  # binary made text: the NUL is on the old side only
        repo.write(ODD, late_nul("new\n"))
        repo.write(ODDER, late_nul("new\n"))
        repo.write("odd *[x] other.dat", "changed, still text\n")
        (repo.path / "link").unlink()
        repo.write("link", late_nul("a symbolic link made a file\n"))  # a type change: two sections

    run = snapshot_and_capture(git_repo, base, tmp_path, edit)

    diff = (run / "workspace.diff").read_bytes()
    assert b"\0" not in diff
    found = changes(run)
    assert set(found) == {"logo.ai", "notes.txt", "odd *[x] other.dat", ODD, ODDER_SHOWN, "link"}
    assert {p for p, c in found.items() if c.binary} == {"logo.ai", "notes.txt", ODD, ODDER_SHOWN, "link"}
    assert diff.count(b"GIT binary patch") == 5
    clone = apply_on_base(git_repo, base, run / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(git_repo.path)
    # The trap is live: git alone writes a text hunk holding the NUL byte.
    assert "\0" in git_repo.git("diff", base, "--", "notes.txt")


def test_a_run_that_wrote_a_late_nul_byte_grades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    task = Task(tmp_path)
    repo = task.repo

    def edit(repo: GitRepo) -> None:
        for path, text in FIXED.items():
            repo.write(path, text)
        repo.write("src/table.bin", late_nul("header\n"))
        repo.write("tests/test_calc.py", late_nul("def test_zero():\n    assert True\n"))

    run = snapshot_and_capture(repo, "HEAD", tmp_path, edit)
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    assert {p for p, c in changes(run).items() if c.binary} == {"src/table.bin", "tests/test_calc.py"}

    assert main(["scope", str(task.dir), str(run)]) == 0
    task.backend()  # writes the scripted judge file
    judge = f"scripted:{task.judge}"
    assert main(["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", judge]) in (
        0,
        1,
    )
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["mergeable"] is not None  # graded: neither a judge nor a grader failure
