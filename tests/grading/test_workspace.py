"""The workspace diff (§3) against real git repositories: `git apply` of the capture reproduces the tree."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.diffs import load_diff
from grading.errors import InputError
from grading.git_quote import path_text
from grading.path_lists import (
    SNAPSHOT_HEADER,
    SNAPSHOT_HEADER_V1,
    SNAPSHOT_HEADER_V2,
    quote_path,
    read_path_list,
    read_snapshot,
    unquote_path,
)
from grading.workspace.diff import capture, snapshot_ignored, write_snapshot
from tests.gitrepo import GIT_ENV, GitRepo
from tests.grading.workspace_helpers import ODD_NAME, agent_edits, apply_on_base, base_repo, listing

V1 = SNAPSHOT_HEADER_V1.encode()
V2 = SNAPSHOT_HEADER_V2.encode() + b'\n# info/exclude: ""'


def tree_of(repo: GitRepo) -> str:
    """The tree git would commit for the work tree, built in a throwaway index (the real one is untouched)."""
    index = repo.path.parent / f"tree-index-{os.urandom(4).hex()}"
    env = {"GIT_INDEX_FILE": str(index)}
    repo.git("read-tree", "HEAD", env=env)
    repo.git("add", "-A", env=env)
    return repo.git("write-tree", env=env).strip()


@pytest.fixture
def workspace(git_repo: GitRepo) -> tuple[GitRepo, str]:
    base = base_repo(git_repo)
    return git_repo, base


def test_git_apply_of_capture_reproduces_the_workspace_tree(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)

    result = capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert result.diff_bytes == len(diff)
    assert result.base_commit == base
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert tree_of(clone) == tree_of(repo)
    assert listing(clone.path) == listing(repo.path)
    # the agent's commit counts, a move is a deletion plus an addition, binary content is in the patch
    assert b"diff --git a/committed.txt b/committed.txt" in diff
    assert b"deleted file mode 100644" in diff and b"diff --git a/moved/src.txt b/moved/src.txt" in diff
    assert b"rename from" not in diff
    assert b"old mode 100644\nnew mode 100755" in diff
    assert b"GIT binary patch" in diff
    assert b"new file mode 120000" in diff
    assert b'"a/dir with space/na\\303\\257ve caf\\303\\251.txt"' in diff
    sections = [
        "committed.txt", "modify.txt", "delete_me.txt", "script.sh", "blob.bin", "new_binary.dat",
        "new untracked.txt", "empty_new.txt", "dir with space/second naïve.txt", ODD_NAME, "link",
        "new_link", "moved/src.txt", "moved/dst.txt", "staged.txt", "crlf.txt", "-dash.txt", "star*[x].txt",
        "new\nline\tand tab.txt", "latin1-\udce9.txt", "file_to_dir", "file_to_dir/inner.txt",
        # a type change is a deletion plus an addition
        "file_to_link", "file_to_link", "link_to_file", "link_to_file",
    ]  # fmt: skip
    assert result.files_changed == len(sections)


def test_capture_never_touches_the_real_index_status_or_objects(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    nested = repo.path / "nested"
    nested.mkdir()
    GitRepo(nested)
    (nested / "inner.txt").write_text("inside\n")

    def state() -> tuple[bytes, str, list[str]]:
        index = (repo.path / ".git" / "index").read_bytes()
        status = repo.git(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", env={"GIT_OPTIONAL_LOCKS": "0"}
        )
        objects = sorted(str(p) for p in (repo.path / ".git" / "objects").rglob("*") if p.is_file())
        return index, status, objects

    start = state()
    assert (
        "new untracked.txt" in start[1]
    )  # the status really lists untracked files, so the check means something
    result = capture(repo.path, base, before, tmp_path / "run")
    assert result.files_changed > 0
    assert state() == start


def test_repository_config_cannot_change_or_hijack_the_diff(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    marker = tmp_path / "ran"
    tool = tmp_path / "tool.sh"
    tool.write_text(f"#!/bin/sh\necho ran \"$0\" >> '{marker}'\ncat\n")
    tool.chmod(0o755)
    repo.write(".gitattributes", "*.txt diff=conv filter=evil\n")
    repo.commit("attributes")
    base = repo.head()
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    for key, value in [
        ("diff.noprefix", "true"),
        ("diff.mnemonicPrefix", "true"),
        ("color.ui", "always"),
        ("color.diff", "always"),
        ("diff.external", str(tool)),
        ("diff.conv.textconv", str(tool)),
        ("diff.conv.command", str(tool)),
        ("filter.evil.clean", f"{tool}; tr a-z A-Z"),
        ("filter.evil.process", str(tool)),
        ("core.fsmonitor", str(tool)),
        ("core.autocrlf", "true"),
        ("core.quotePath", "false"),
        ("diff.relative", "true"),
        ("diff.context", "0"),
        ("diff.renames", "copies"),
        ("status.showUntrackedFiles", "no"),
        ("core.fileMode", "false"),
    ]:
        repo.git("config", key, value)
    hook = repo.path / ".git" / "hooks" / "post-index-change"
    hook.write_text(tool.read_text())
    hook.chmod(0o755)

    capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert not marker.exists(), marker.read_text()
    assert b"\x1b[" not in diff
    assert diff.startswith(b"diff --git a/")
    assert b"+++ b/modify.txt" in diff and b" one\n-two\n+TWO\n three\n" in diff  # context 3, raw content
    assert b"old mode 100644\nnew mode 100755" in diff  # core.fileMode=false would hide it
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)
    # the hostile config is live: plain git runs the agent's commands and colours its output
    repo.git("diff", "HEAD")
    assert marker.exists()
    plain = repo.git("diff", "--no-ext-diff", "--no-textconv", "HEAD")
    assert "\x1b[" in plain and "modify.txt" in plain and "a/modify.txt" not in plain


def test_callers_environment_and_user_config_are_ignored(
    workspace: tuple[GitRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = workspace
    agent_edits(repo)
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.txt\n")  # read by git even without any config
    (home / ".gitconfig").write_text("[diff]\n\tnoprefix = true\n[color]\n\tui = always\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "other-index"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)

    result = capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert b"diff --git a/new untracked.txt b/new untracked.txt" in diff  # not hidden by ~/.config/git/ignore
    assert result.ignored_created == []
    assert not (tmp_path / "other-index").exists()


def test_nested_repositories_are_captured_as_their_files(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    empty = GitRepo(repo.path / "vendor" / "empty")  # no commit yet
    (empty.path / "a.txt").write_text("in a repo without commits\n")
    (empty.path / "debug.log").write_text("ignored by the outer *.log\n")
    full = GitRepo(repo.path / "full")
    full.write("src/b.py", "print('b')\n")
    full.write("tool", "#!/bin/sh\n", executable=True)
    full.commit("inner")
    deeper = GitRepo(full.path / "deeper")
    deeper.write("c.txt", "two levels down\n")

    result = capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert sorted(result.nested_repositories) == ["full", "vendor/empty"]
    assert b"Subproject commit" not in diff and b"/.git/" not in diff
    for path in ("vendor/empty/a.txt", "full/src/b.py", "full/tool", "full/deeper/c.txt"):
        assert f"diff --git a/{path} b/{path}".encode() in diff
    assert b"new file mode 100755" in diff
    assert result.ignored_created == ["vendor/empty/debug.log"]
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    expected = listing(repo.path)
    del expected["vendor/empty/debug.log"]
    assert listing(clone.path) == expected


def test_a_nested_repository_staged_or_committed_as_a_gitlink_is_captured_as_its_files(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    inner = GitRepo(repo.path / "lib")
    inner.write("lib.c", "int lib;\n")
    inner.commit("inner")
    staged = GitRepo(repo.path / "staged")
    staged.write("s.c", "int s;\n")
    staged.commit("staged")
    repo.git("add", "lib", "staged")  # git warns about an embedded repository and adds gitlinks
    repo.git("commit", "-q", "-m", "agent commits a gitlink", "--", "lib")
    assert "160000" in repo.git("ls-files", "--stage", "lib", "staged")
    real_index = (repo.path / ".git" / "index").read_bytes()

    result = capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert b"Subproject commit" not in diff and b"160000" not in diff
    assert b"diff --git a/lib/lib.c b/lib/lib.c" in diff and b"diff --git a/staged/s.c b/staged/s.c" in diff
    assert sorted(result.nested_repositories) == ["lib", "staged"]
    assert (repo.path / ".git" / "index").read_bytes() == real_index
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def test_a_submodule_the_base_already_has_stays_a_gitlink(git_repo: GitRepo, tmp_path: Path) -> None:
    upstream = GitRepo(tmp_path / "upstream")
    upstream.write("u.txt", "one\n")
    first = upstream.commit("one")
    upstream.write("u.txt", "two\n")
    second = upstream.commit("two")
    git_repo.write("top.txt", "top\n")
    git_repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream.path), "sub")
    git_repo.git("-C", "sub", "checkout", "-q", first)
    git_repo.git("add", "sub")
    base = git_repo.commit("base with a submodule")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    git_repo.git("-C", "sub", "checkout", "-q", second)  # the agent moves the submodule

    result = capture(git_repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert f"-Subproject commit {first}\n+Subproject commit {second}".encode() in diff
    assert result.nested_repositories == [] and result.files_changed == 1


def test_names_git_guards_against_do_not_abort_the_capture(git_repo: GitRepo, tmp_path: Path) -> None:
    base = git_repo.commit("base")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    git_repo.write(".GIT/config", "git refuses this name anywhere\n")
    git_repo.write("GIT~1/y.txt", "an NTFS short name for .git\n")
    git_repo.write("back\\slash.txt", "a backslash\n")
    git_repo.write("ok.txt", "ordinary\n")
    nested = GitRepo(git_repo.path / "nested")
    nested.write(".Git/inner", "refused inside a nested repository too\n")
    nested.write("fine.txt", "fine\n")

    result = capture(git_repo.path, base, before, tmp_path / "run")

    assert result.unrepresentable == [".GIT/config", "nested/.Git/inner"]
    assert read_path_list(tmp_path / "run" / "ignored_created.txt") == [".GIT/config", "nested/.Git/inner"]
    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    for name in (b"GIT~1/y.txt", b'"a/back\\\\slash.txt"', b"ok.txt", b"nested/fine.txt"):
        assert name in diff
    assert result.files_changed == 4
    # applied where git's checkout protections are off, the diff reproduces everything git can track
    clone = apply_on_base(
        git_repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone", unprotected=True
    )
    expected = listing(git_repo.path)
    del expected[".GIT/config"], expected["nested/.Git/inner"]
    assert listing(clone.path) == expected


def test_ignored_files_are_compared_file_by_file(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = workspace
    repo.write("build/old.o", b"\0old")
    repo.write("old.log", "old\n")
    before = tmp_path / "before.txt"
    assert write_snapshot(repo.path, before) == 2
    repo.write("build/new.o", b"\0new")  # inside a directory that was already ignored
    repo.write("build/deep/er/x.o", b"x")
    repo.write("src/run.log", "new\n")
    dep = GitRepo(repo.path / "build" / "_deps" / "dep")  # a build step cloned a repository
    dep.write("dep.c", "int x;\n")

    result = capture(repo.path, base, before, tmp_path / "run")

    expected = ["build/_deps/dep/dep.c", "build/deep/er/x.o", "build/new.o", "src/run.log"]
    assert result.ignored_created == expected
    assert read_path_list(tmp_path / "run" / "ignored_created.txt") == expected
    assert (tmp_path / "run" / "ignored_created.txt").read_text() == "".join(p + "\n" for p in expected)
    assert (tmp_path / "run" / "workspace.diff").read_bytes() == b""
    assert result.files_changed == 0 and result.nested_repositories == []


ODD_NAMES = [
    "plain.txt",
    "with space.txt",
    " leading space",
    "trailing space ",
    "new\nline",
    "tab\there",
    'quote"d',
    "back\\slash",
    "#hash",
    "naïve café.txt",
    "日本語/ファイル",
    os.fsdecode(b"latin1-\xe9-not-utf8"),
    "bell\x07\x7f",
]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_path_list_quoting_round_trips(name: str) -> None:
    line = quote_path(name)
    assert "\n" not in line
    assert unquote_path(line) == name
    # names a plain line can carry stay readable; the others are quoted
    assert (line == name) == (name in ("plain.txt", "with space.txt", "naïve café.txt", "日本語/ファイル"))


def test_snapshot_and_capture_keep_odd_ignored_names(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write(".gitignore", "out/\n")
    base = git_repo.commit("base")
    old = ["out/" + n for n in ODD_NAMES[:6]]
    new = ["out/x/" + n for n in ODD_NAMES]
    for rel in old:
        (git_repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo.path / rel).write_bytes(b"old")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    assert read_snapshot(before) == sorted(old)
    assert before.read_bytes().startswith(SNAPSHOT_HEADER.encode() + b"\n")
    for rel in new:
        (git_repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo.path / rel).write_bytes(b"new")

    result = capture(git_repo.path, base, before, tmp_path / "run")

    assert result.ignored_created == sorted(new)
    assert read_path_list(tmp_path / "run" / "ignored_created.txt") == sorted(new)
    assert sorted(snapshot_ignored(git_repo.path)) == sorted(old + new)


def test_assume_unchanged_and_skip_worktree_do_not_hide_edits(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    repo.write("modify.txt", "hidden edit\n")
    repo.write("keep.txt", "another hidden edit\n")
    repo.git("update-index", "--assume-unchanged", "modify.txt")
    repo.git("update-index", "--skip-worktree", "keep.txt")
    assert repo.git("diff", "--name-only") == ""  # plain git diff is fooled

    result = capture(repo.path, base, before, tmp_path / "run")

    diff = (tmp_path / "run" / "workspace.diff").read_bytes()
    assert b"+hidden edit" in diff and b"+another hidden edit" in diff
    assert result.files_changed == 2
    assert "h modify.txt" in repo.git("ls-files", "-v")  # the real index keeps its bits


def test_linked_worktree_is_captured_without_touching_its_index(
    workspace: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = workspace
    wt_path = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "--detach", str(wt_path), base)
    wt = GitRepo.__new__(GitRepo)
    wt.path = wt_path
    before = tmp_path / "before.txt"
    write_snapshot(wt.path, before)
    agent_edits(wt)
    index = Path(wt.git("rev-parse", "--git-path", "index").strip())
    index = index if index.is_absolute() else wt.path / index
    index_bytes = index.read_bytes()

    capture(wt.path, base, before, tmp_path / "run")

    assert index.read_bytes() == index_bytes
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(wt.path)


# ---- bad input ---------------------------------------------------------------------------------------


def test_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="not a git work tree"):
        snapshot_ignored(tmp_path / "plain")
    with pytest.raises(InputError, match="not a directory"):
        snapshot_ignored(tmp_path / "missing")


def test_a_subdirectory_of_a_checkout_is_refused(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, _ = workspace
    with pytest.raises(InputError, match="not the top level"):
        snapshot_ignored(repo.path / "moved")


@pytest.mark.parametrize("rev", ["no-such-branch", "--output=/tmp/x", "HEAD~5", "0" * 40])
def test_unknown_base_revision(workspace: tuple[GitRepo, str], tmp_path: Path, rev: str) -> None:
    repo, _ = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    with pytest.raises(InputError, match="unknown revision") as info:
        capture(repo.path, rev, before, tmp_path / "run")
    assert info.value.field == "--base"
    assert not (tmp_path / "run").exists()


def test_base_may_be_a_tag_or_branch_name(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = workspace
    repo.git("tag", "-a", "-m", "annotated", "v1", base)
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    assert capture(repo.path, "v1", before, tmp_path / "run").base_commit == base


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a snapshot"),
        (b"build/a.o\n", "not a snapshot"),
        (b'{"schema": "repo_rubric.v1"}\n', "not a snapshot"),
        (V1 + b'\n"unterminated\n', "line 2: quoted name without its closing quote"),
        (V1 + b'\nok\n"bad \\q escape"\n', "line 3: bad escape"),
        (V1 + b"\n../outside\n", "line 2: path with an empty"),
        (V1 + b"\n/etc/passwd\n", "line 2: absolute path"),
        (V1 + b"\n\n", "line 2: empty path"),
        (V1 + b"\nbad-\xff-bytes\n", "line 2: not UTF-8"),
        (V1 + b"\r\nwindows.o\r\n", "not a snapshot"),
        (V1 + b"\nwindows.o\r\n", "line 2: control character"),
        (V2 + b'\n"unterminated\n', "line 3: quoted name without its closing quote"),
        (V2 + b"\n../outside\n", "line 3: path with an empty"),
        (V2 + b"\nbad-\xff-bytes\n", "line 3: not UTF-8"),
        (SNAPSHOT_HEADER.encode() + b"\n", "line 2: second line must be # info/exclude: "),
        (SNAPSHOT_HEADER.encode() + b"\nbuild/a.o\n", "line 2: second line must be # info/exclude: "),
        (SNAPSHOT_HEADER.encode() + b"\n# info/exclude: NOTES.md\n", "line 2: second line must be"),
        (SNAPSHOT_HEADER.encode() + b'\n# info/exclude: "NOTES.md\n', "line 2: info/exclude: quoted name"),
        (SNAPSHOT_HEADER.encode() + b'\n# info/exclude: "a\\qb"\n', "line 2: info/exclude: bad escape"),
        (b"# rubric snapshot v5\n", "not a snapshot"),
    ],
)
def test_malformed_snapshot(
    workspace: tuple[GitRepo, str], tmp_path: Path, content: bytes, message: str
) -> None:
    repo, base = workspace
    before = tmp_path / "before.txt"
    before.write_bytes(content)
    with pytest.raises(InputError, match=message):
        capture(repo.path, base, before, tmp_path / "run")


def test_missing_snapshot(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = workspace
    with pytest.raises(InputError, match="file not found"):
        capture(repo.path, base, tmp_path / "absent.txt", tmp_path / "run")


# ---- the CLI -----------------------------------------------------------------------------------------


def test_cli_snapshot_then_capture(
    workspace: tuple[GitRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = workspace
    repo.write("build/pre.o", b"pre")
    before = tmp_path / "before.txt"
    assert main(["snapshot", str(repo.path), "-o", str(before)]) == 0
    assert "1 ignored file" in capsys.readouterr().out
    agent_edits(repo)
    repo.write("build/post.o", b"post")
    run = tmp_path / "run"

    assert main(["capture", str(repo.path), "--base", base, "--before", str(before), "--out", str(run)]) == 0

    out = capsys.readouterr().out
    assert "26 files changed" in out
    assert (run / "ignored_created.txt").read_text() == "build/post.o\n"
    digest = hashlib.sha256((run / "workspace.diff").read_bytes()).hexdigest()
    # capturing again gives the same bytes: nothing in the first capture changed the workspace
    assert (
        main(
            ["capture", str(repo.path), "--base", base, "--before", str(before), "--out", str(run), "--json"]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["files_changed"] == 26 and report["ignored_created"] == ["build/post.o"]
    assert hashlib.sha256((run / "workspace.diff").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["snapshot", "{plain}", "-o", "{tmp}/s.txt"], "not a git work tree"),
        (
            ["capture", "{repo}", "--base", "nope", "--before", "{tmp}/before.txt", "--out", "{tmp}/run"],
            "--base",
        ),
        (
            ["capture", "{repo}", "--base", "HEAD", "--before", "{tmp}/absent", "--out", "{tmp}/run"],
            "not found",
        ),
        (
            ["capture", "{repo}", "--base", "HEAD", "--before", "{repo}/keep.txt", "--out", "{tmp}/run"],
            "snapshot",
        ),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(
    workspace: tuple[GitRepo, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    repo, _ = workspace
    (tmp_path / "plain").mkdir()
    write_snapshot(repo.path, tmp_path / "before.txt")
    args = [a.format(plain=tmp_path / "plain", tmp=tmp_path, repo=repo.path) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rubric: error: ") and message in err
    assert "Traceback" not in err


def test_cli_json_carries_names_that_are_not_utf8(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git_repo.write(".gitignore", "out/\n")
    base = git_repo.commit("base")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    git_repo.write("out/" + os.fsdecode(b"caf\xe9.o"), b"x")
    git_repo.write("out/naïve.o", b"x")

    argv = [
        "capture",
        str(git_repo.path),
        "--base",
        base,
        "--before",
        str(before),
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*argv, "--json"]) == 0

    report = json.loads(capsys.readouterr().out)
    assert report["ignored_created"] == ["out/caf\\xe9.o", "out/naïve.o"]
    assert (tmp_path / "r" / "ignored_created.txt").read_bytes() == b'"out/caf\\351.o"\nout/na\xc3\xafve.o\n'


@pytest.mark.parametrize("layout", ["split-index", "index-v4", "untracked-cache", "shared-clone"])
def test_unusual_repository_layouts(workspace: tuple[GitRepo, str], tmp_path: Path, layout: str) -> None:
    repo, base = workspace
    if layout == "shared-clone":
        # objects come from another repository through .git/objects/info/alternates
        subprocess.run(
            ["git", "clone", "-q", "--shared", str(repo.path), str(tmp_path / "shared")],
            check=True,
            env={**os.environ, **GIT_ENV},
            capture_output=True,
        )
        repo = GitRepo.__new__(GitRepo)
        repo.path = tmp_path / "shared"
        assert (repo.path / ".git" / "objects" / "info" / "alternates").exists()
    elif layout == "split-index":
        repo.git("update-index", "--split-index")
        assert list((repo.path / ".git").glob("sharedindex.*"))
    elif layout == "index-v4":
        repo.git("update-index", "--index-version", "4")
    else:
        repo.git("config", "core.untrackedCache", "true")
        repo.git("update-index", "--untracked-cache")
        repo.git("status", "--porcelain")
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    git_dir = sorted((p.name, p.read_bytes()) for p in (repo.path / ".git").iterdir() if p.is_file())

    capture(repo.path, base, before, tmp_path / "run")

    assert sorted((p.name, p.read_bytes()) for p in (repo.path / ".git").iterdir() if p.is_file()) == git_dir
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def test_capture_parses_into_the_changes_git_reports(workspace: tuple[GitRepo, str], tmp_path: Path) -> None:
    """The diff the capture writes is the one scope and integrity read: every path survives parsing."""
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    capture(repo.path, base, before, tmp_path / "run")

    changes = load_diff(tmp_path / "run" / "workspace.diff")
    # what git itself says changed: tracked changes plus every untracked file
    env = {"GIT_INDEX_FILE": str(tmp_path / "idx")}
    repo.git("read-tree", "HEAD", env=env)
    repo.git("add", "-A", env=env)
    expected = {
        path_text(p)
        for p in repo.git("diff", "--cached", "--no-renames", "--name-only", "-z", base, env=env)
        .encode("utf-8", "surrogateescape")
        .split(b"\0")
        if p
    }
    assert {p for c in changes for p in c.paths()} == expected
    added = {c.new_path for c in changes if c.status == "added"}
    assert {"empty_new.txt", "dir with space/second naïve.txt", "moved/dst.txt"} <= added
    deleted = {c.old_path for c in changes if c.status == "deleted"}
    assert {"delete_me.txt", "moved/src.txt"} <= deleted


def test_a_run_directory_named_in_bytes_that_are_not_utf8(git_repo: GitRepo, tmp_path: Path) -> None:
    # Under a UTF-8 locale Python's stdout is strict: printing the name was a UnicodeEncodeError traceback,
    # and --json wrote the raw byte, which is not UTF-8, into the JSON.
    base = git_repo.commit("base")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    git_repo.write("new.txt", "x\n")
    run = tmp_path / os.fsdecode(b"run\xff")
    argv = ["capture", str(git_repo.path), "--base", base, "--before", str(before), "--out", str(run)]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    for extra in ([], ["--json"]):
        result = subprocess.run(
            [sys.executable, "-m", "grading", *argv, *extra], env=env, capture_output=True, check=False
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        out = result.stdout.decode("utf-8")  # valid UTF-8 in both forms
        if extra:
            assert json.loads(out)["diff_path"] == str(tmp_path) + "/run\\xff/workspace.diff"
        else:
            assert "1 file changed" in out
    assert (run / "workspace.diff").is_file()


@pytest.mark.parametrize("where", [".git/info/attributes", ".gitattributes"])
def test_attributes_cannot_turn_a_text_change_into_a_binary_patch(
    workspace: tuple[GitRepo, str], tmp_path: Path, where: str
) -> None:
    # `*.txt binary` (or -diff) would show modify.txt as a GIT binary patch: nothing for the judge to read
    # and no line for max_changed_lines. .git/info/attributes is not even in the diff. `* diff` would
    # force a real binary file into a text diff that no parser or `git apply` can take.
    repo, base = workspace
    before = tmp_path / "before.txt"
    write_snapshot(repo.path, before)
    agent_edits(repo)
    (repo.path / where).parent.mkdir(exist_ok=True)
    (repo.path / where).write_text("*.txt binary\n* diff\n")

    capture(repo.path, base, before, tmp_path / "run")

    changes = {c.new_path or c.old_path: c for c in load_diff(tmp_path / "run" / "workspace.diff")}
    assert not changes["modify.txt"].binary and (
        changes["modify.txt"].added,
        changes["modify.txt"].removed,
    ) == (1, 1)
    assert changes["blob.bin"].binary and changes["new_binary.dat"].binary
    clone = apply_on_base(repo, base, tmp_path / "run" / "workspace.diff", tmp_path / "clone")
    assert listing(clone.path) == listing(repo.path)


def test_a_same_size_edit_right_after_the_index_was_written_is_in_the_diff(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """git's racily-clean rule: an entry whose file is not older than the index is checked by content.
    The capture's copy of the index must keep the index's mtime, or such an edit looks unchanged."""
    past = 1_700_000_000_000_000_000  # ns; the file and the index look written in the same second
    git_repo.write("calc.py", "a - b\n")
    base = git_repo.commit("base")
    before = tmp_path / "before.txt"
    write_snapshot(git_repo.path, before)
    target, index = git_repo.path / "calc.py", git_repo.path / ".git" / "index"
    for _ in range(5):  # the file's ctime (not settable) must stay in the second the index recorded
        start = int(time.time())
        git_repo.write("calc.py", "a - b\n")
        os.utime(target, ns=(past, past))
        git_repo.git("add", "calc.py")
        git_repo.write("calc.py", "a + b\n")  # same size, same inode
        os.utime(target, ns=(past, past))
        os.utime(index, ns=(past, past))
        if int(time.time()) == start:
            break

    capture(git_repo.path, base, before, tmp_path / "run")

    assert b"+a + b" in (tmp_path / "run" / "workspace.diff").read_bytes()
