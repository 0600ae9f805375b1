"""Scope check (§3) on run directories made from real git repositories, and `rubric scope`."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from grading.checks.scope import check_scope, scope_for_run
from grading.cli.rubric import main
from grading.diffs import FileChange, parse_diff
from grading.errors import InputError
from grading.schema import Scope
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import ignored_files, workspace_diff, write_run, write_task

SCOPE: dict[str, Any] = {
    "allowed_globs": ["src/**", "docs/**", "tests/**"],
    "denied_globs": [".ci/**", "src/vendor/**"],
}


def change(path: str, added: int = 1, removed: int = 0, binary: bool = False) -> FileChange:
    return FileChange(
        old_path=path, new_path=path, status="modified", added=added, removed=removed, binary=binary
    )


def rules(result: Any) -> list[tuple[str | None, str]]:
    return [(v.path, v.rule) for v in result.violations]


@pytest.fixture
def project(git_repo: GitRepo) -> tuple[GitRepo, str, set[bytes]]:
    """A repository with allowed and denied directories, its base, and the ignored files before the run."""
    r = git_repo
    r.write(".gitignore", "build/\n*.log\n")
    r.write("src/parser.py", "def parse():\n    return None\n")
    r.write("src/vendor/lib.py", "x = 1\n")
    r.write(".ci/run", "#!/bin/sh\npytest\n", executable=True)
    r.write("setup.cfg", "[tool]\n")
    r.write("legacy/old.py", "old = 1\n")
    r.write("docs/index.md", "# Docs\n")
    base = r.commit("base")
    r.write("build/already.o", b"\x00")
    return r, base, ignored_files(r)


def test_fnmatch_would_get_both_directions_wrong() -> None:
    # fnmatch's "*" crosses "/": it lets src/sub/x.py through "src/*.py" ...
    assert fnmatch.fnmatch("src/sub/x.py", "src/*.py")
    narrow = Scope(allowed_globs=["src/*.py"])
    assert rules(check_scope(narrow, [change("src/sub/x.py")], [])) == [("src/sub/x.py", "outside_allowed")]
    # ... and rejects src/x.py for "src/**/*.py", where "**/" matches zero directories.
    assert not fnmatch.fnmatch("src/x.py", "src/**/*.py")
    deep = Scope(allowed_globs=["src/**/*.py"])
    assert check_scope(deep, [change("src/x.py"), change("src/a/b/y.py")], []).in_scope
    # A denied "*.log" does not reach into directories either.
    assert check_scope(
        Scope(allowed_globs=["**"], denied_globs=["*.log"]), [change("src/a.log")], []
    ).in_scope


def test_a_run_inside_the_scope_passes(project: tuple[GitRepo, str, set[bytes]], tmp_path: Path) -> None:
    repo, base, before = project
    repo.write("src/parser.py", "def parse():\n    return []\n")
    repo.write("tests/test_parser.py", "def test_parse():\n    assert parse() == []\n")
    repo.write("build/out.o", b"\x00\x01")  # ignored build output outside allowed_globs is not a violation
    repo.write("src/debug.log", "noise\n")
    task = write_task(tmp_path / "task", SCOPE)
    run = write_run(tmp_path / "run", repo, base, before)
    result = scope_for_run(task, run)
    assert result.model_dump() == {"in_scope": True, "changed_files": 2, "changed_lines": 4, "violations": []}


def test_every_rule_of_an_out_of_scope_run(project: tuple[GitRepo, str, set[bytes]], tmp_path: Path) -> None:
    repo, base, before = project
    repo.write("src/parser.py", "def parse():\n    return []\n")  # allowed
    repo.write(".ci/run", "#!/bin/sh\ntrue\n", executable=True)  # denied (and outside allowed)
    repo.write("src/vendor/lib.py", "x = 2\n")  # allowed, but carved out by denied_globs
    (repo.path / "legacy/old.py").rename(repo.path / "src/old.py")  # the old path is outside allowed
    (repo.path / "setup.cfg").chmod(0o755)  # a mode change is a change
    repo.write("notes.md", "my plan\n")  # a note in the repository root
    repo.write(".ci/cache.log", "hidden by .gitignore\n")  # ignored, but denied
    repo.write("build/new.o", b"\x00")  # ignored, not denied: fine
    task = write_task(tmp_path / "task", SCOPE)
    run = write_run(tmp_path / "run", repo, base, before)
    result = scope_for_run(task, run)
    assert not result.in_scope
    assert sorted(rules(result), key=str) == sorted(
        [
            (".ci/run", "outside_allowed"),
            (".ci/run", "denied"),
            ("src/vendor/lib.py", "denied"),
            ("legacy/old.py", "outside_allowed"),
            ("setup.cfg", "outside_allowed"),
            ("notes.md", "outside_allowed"),
            (".ci/cache.log", "ignored_in_denied"),
        ],
        key=str,
    )
    assert result.changed_files == 7  # parser, .ci/run, vendor, legacy/old.py, src/old.py, setup.cfg, notes
    # parser, .ci/run and vendor: -1 +1 each; the move: -1 and +1; the mode change: none; notes: +1
    assert result.changed_lines == 2 + 2 + 2 + 1 + 1 + 0 + 1


def test_the_old_path_of_a_rename_is_checked_too() -> None:
    diff = "diff --git a/.ci/run b/src/run\nsimilarity index 100%\nrename from .ci/run\nrename to src/run\n"
    changes = parse_diff(diff)
    result = check_scope(Scope(allowed_globs=["src/**"], denied_globs=[".ci/**"]), changes, [])
    assert rules(result) == [(".ci/run", "outside_allowed"), (".ci/run", "denied")]


def test_size_limits_count_text_lines_and_files(git_repo: GitRepo) -> None:
    git_repo.write("src/a.py", "a\n")
    base = git_repo.commit("base")
    git_repo.write("src/a.py", "a\nb\nc\n")  # +2
    git_repo.write("src/b.py", "1\n2\n3\n")  # +3
    git_repo.write("src/blob.bin", b"\x00" * 5000)  # binary: a file, no lines
    changes = parse_diff(workspace_diff(git_repo, base))
    at_limit = Scope(allowed_globs=["src/**"], max_files=3, max_changed_lines=5)
    result = check_scope(at_limit, changes, [])
    assert (result.in_scope, result.changed_files, result.changed_lines) == (True, 3, 5)
    over = Scope(allowed_globs=["src/**"], max_files=2, max_changed_lines=4)
    assert rules(check_scope(over, changes, [])) == [(None, "too_many_files"), (None, "too_many_lines")]


def test_a_type_change_is_one_file(git_repo: GitRepo) -> None:
    git_repo.write("src/a.py", "a\n")
    base = git_repo.commit("base")
    (git_repo.path / "src/a.py").unlink()
    (git_repo.path / "src/a.py").symlink_to("/etc/passwd")
    changes = parse_diff(workspace_diff(git_repo, base))
    assert len(changes) == 2
    result = check_scope(Scope(allowed_globs=["src/**"], max_files=1), changes, [])
    assert (result.in_scope, result.changed_files, result.changed_lines) == (True, 1, 2)


def test_names_that_are_not_utf8_are_checked_and_printed(
    git_repo: GitRepo, tmp_path: Path, capsys: Any
) -> None:
    git_repo.write(".gitignore", "*.tmp\n")
    base = git_repo.commit("base")
    before = ignored_files(git_repo)
    (git_repo.path / "src").mkdir()
    (git_repo.path / os.fsdecode(b"src/caf\xe9.py")).write_bytes(b"x = '\xe9'\n")
    (git_repo.path / os.fsdecode(b".ci")).mkdir()
    (git_repo.path / os.fsdecode(b".ci/\xff.tmp")).write_bytes(b"junk\n")
    task = write_task(tmp_path / "task", {"allowed_globs": ["docs/**"], "denied_globs": [".ci/**"]})
    run = write_run(tmp_path / "run", git_repo, base, before)
    assert main(["scope", str(task), str(run), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["violations"] == [
        {"path": "src/caf\\xe9.py", "rule": "outside_allowed"},
        {"path": ".ci/\\xff.tmp", "rule": "ignored_in_denied"},
    ]


# --- `rubric scope` ----------------------------------------------------------------------------------


def test_cli_json_and_exit_codes(
    project: tuple[GitRepo, str, set[bytes]], tmp_path: Path, capsys: Any
) -> None:
    repo, base, before = project
    task = write_task(tmp_path / "task", SCOPE)
    repo.write("src/parser.py", "def parse():\n    return []\n")
    run = write_run(tmp_path / "run_ok", repo, base, before)
    assert main(["scope", str(task), str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "in_scope": True,
        "changed_files": 1,
        "changed_lines": 2,
        "violations": [],
    }
    repo.write(".ci/run", "#!/bin/sh\nexit 0\n")
    run = write_run(tmp_path / "run_bad", repo, base, before)
    assert main(["scope", str(task), str(run), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["in_scope"] is False
    assert out["violations"] == [
        {"path": ".ci/run", "rule": "outside_allowed"},
        {"path": ".ci/run", "rule": "denied"},
    ]


def test_cli_human_output(project: tuple[GitRepo, str, set[bytes]], tmp_path: Path, capsys: Any) -> None:
    repo, base, before = project
    task = write_task(tmp_path / "task", {**SCOPE, "max_files": 1})
    repo.write("src/vendor/lib.py", "x = 3\n")
    repo.write("docs/a\nb.md", "forged line\n")  # a newline in a name cannot forge an output line
    run = write_run(tmp_path / "run", repo, base, before)
    assert main(["scope", str(task), str(run)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "OUT OF SCOPE: 2 changed files, 3 changed lines",
        "  denied: 'src/vendor/lib.py' (matches denied_globs)",
        "  too_many_files: 2 files is more than max_files",
    ]


def test_a_missing_ignored_created_file_means_none(
    project: tuple[GitRepo, str, set[bytes]], tmp_path: Path
) -> None:
    repo, base, _ = project
    repo.write("src/parser.py", "pass\n")
    run = write_run(tmp_path / "run", repo, base)
    assert not (run / "ignored_created.txt").exists()
    assert scope_for_run(write_task(tmp_path / "task", SCOPE), run).in_scope


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no_rubric", r"task/rubric.json: file not found"),
        ("bad_json", r"task/rubric.json: line 1 column 2: malformed JSON"),
        ("bad_glob", r"task/rubric.json: scope.allowed_globs\[0\]: .*extglob"),
        ("no_diff", r"run/workspace.diff: file not found"),
        ("garbage_diff", r"run/workspace.diff: line 1: NUL byte"),
        ("truncated_diff", r"run/workspace.diff: line 5: the diff ends inside the hunk of line 4"),
        ("bad_ignored", r"run/ignored_created.txt: line 2: not UTF-8"),
        ("no_run_dir", r"nowhere: not a directory"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, setup: str, message: str
) -> None:
    task = write_task(tmp_path / "task", SCOPE)
    run = tmp_path / "run"
    run.mkdir()
    (run / "workspace.diff").write_text(
        "diff --git a/src/a b/src/a\n--- a/src/a\n+++ b/src/a\n@@ -1 +1 @@\n-a\n+b\n"
    )
    if setup == "no_rubric":
        (task / "rubric.json").unlink()
    elif setup == "bad_json":
        (task / "rubric.json").write_text("{,}")
    elif setup == "bad_glob":
        (task / "rubric.json").write_text(
            (task / "rubric.json").read_text().replace('"src/**"', '"src/!(vendor)/**"')
        )
    elif setup == "no_diff":
        (run / "workspace.diff").unlink()
    elif setup == "garbage_diff":
        (run / "workspace.diff").write_bytes(b"\x00\x01garbage" + os.urandom(64))
    elif setup == "truncated_diff":
        (run / "workspace.diff").write_text(
            "diff --git a/src/a b/src/a\n--- a/src/a\n+++ b/src/a\n@@ -1,2 +1,2 @@\n-a\n"
        )
    elif setup == "bad_ignored":
        (run / "ignored_created.txt").write_bytes(b"build/ok.o\nbuild/\xff.o\n")
    elif setup == "no_run_dir":
        run = tmp_path / "nowhere"
    monkeypatch.chdir(tmp_path)
    code = main(["scope", "task", os.path.relpath(run, tmp_path), "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    assert captured.err.startswith("rubric: error: ")
    assert re.search(message, captured.err), captured.err


def test_scope_for_run_raises_input_error_for_a_missing_task_dir(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        scope_for_run(tmp_path / "missing", tmp_path)


def test_end_to_end_with_rubric_snapshot_and_capture(git_repo: GitRepo, tmp_path: Path, capsys: Any) -> None:
    """The files `rubric capture` writes are what scope reads: awkward names, binary files, ignored output."""
    repo = git_repo
    repo.write(".gitignore", "*.log\nbuild/\n")
    repo.write("src/a.py", "a = 1\n")
    repo.write(".ci/run", "run\n")
    base = repo.commit("base")
    snapshot = tmp_path / "before.txt"
    assert main(["snapshot", str(repo.path), "-o", str(snapshot)]) == 0
    repo.write("src/a.py", "a = 2\n")
    repo.write("src/x b/y z.py", "x = 1\n")  # a name whose diff header git cannot write unambiguously
    repo.write("src/dé\tjà.bin", b"\x00\x01")
    (repo.path / os.fsdecode(b"src/\xff.py")).write_bytes(b"\xfe\n")
    repo.write(".ci/trace.log", "ignored, but under a denied path\n")
    repo.write("build/out.o", b"\x00")
    run = tmp_path / "run"
    assert (
        main(["capture", str(repo.path), "--base", base, "--before", str(snapshot), "--out", str(run)]) == 0
    )
    capsys.readouterr()
    task = write_task(tmp_path / "task", {"allowed_globs": ["src/**"], "denied_globs": [".ci/**"]})
    assert main(["scope", str(task), str(run), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "in_scope": False,
        "changed_files": 4,
        "changed_lines": 4,  # a.py -1 +1, "y z.py" +1, the non-UTF-8 file +1; the binary file has no lines
        "violations": [{"path": ".ci/trace.log", "rule": "ignored_in_denied"}],
    }
