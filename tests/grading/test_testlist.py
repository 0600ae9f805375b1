"""Test ids are measured, not assumed (§3): `rubric capture --manifest` runs tests.list in the workspace,
`rubric list-tests` on the base, and a run without its list is a grader failure."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from grading.cli import main
from grading.testlist import ListingFailed, run_test_list
from grading.workspace import write_snapshot
from tests.grading.test_admission import Task, answers
from tests.grading.test_outcome import FIXED, answer_run

# Prints one id per test function found under tests/, as a repository's list command would.
LISTER = """\
import pathlib, re
for path in sorted(pathlib.Path("tests").rglob("test_*.py")):
    for name in re.findall(r"^def (test_\\w+)", path.read_text(), re.M):
        print(f"{path}::{name}")
"""


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("RUBRIC_JUDGE_CACHE", raising=False)
    t = Task(tmp_path)
    t.repo.write("list_tests.py", LISTER)
    t.repo.write(
        "tests/test_calc.py", "def test_zero():\n    assert True\n\ndef test_one():\n    assert True\n"
    )
    t.repo.commit("a lister")
    declare(t, f"{shlex.quote(sys.executable)} list_tests.py")
    return t


def declare(task: Task, command: str | None) -> None:
    text = 'tests:\n  globs: ["tests/**"]\n  config_globs: ["**/conftest.py"]\n'
    if command is not None:
        text += f"  list: {json.dumps(command)}\n"
    task.manifest.write_text(text)


def capture_argv(task: Task, run: Path, *extra: str) -> list[str]:
    before = task.dir.parent / "before.txt"
    if not before.exists():
        write_snapshot(task.repo.path, before)
    return ["capture", str(task.repo.path), "--base", "HEAD", "--before", str(before), "--out", str(run),
            "--manifest", str(task.manifest), *extra]  # fmt: skip


def grade(task: Task, run: Path) -> dict[str, Any]:
    task.backend()
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"scripted:{task.judge}", "--no-cache"]  # fmt: skip
    main(argv)
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def test_a_removed_test_case_is_measured_end_to_end(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    base_list = task.dir / "tests_base.txt"
    assert (
        main(["list-tests", str(task.repo.path), "--manifest", str(task.manifest), "-o", str(base_list)]) == 0
    )
    assert base_list.read_text() == "tests/test_calc.py::test_zero\ntests/test_calc.py::test_one\n"
    assert capsys.readouterr().out == f"{base_list}: 2 test id(s)\n"
    before = task.dir.parent / "before.txt"
    write_snapshot(task.repo.path, before)
    for path, text in FIXED.items():
        task.repo.write(path, text)
    task.repo.write("tests/test_calc.py", "def test_zero():\n    assert True\n")  # test_one is gone
    run = task.dir.parent / "runs" / "r"

    assert main(capture_argv(task, run)) == 0

    assert (run / "tests_list.txt").read_text() == "tests/test_calc.py::test_zero\n"
    assert f"{run / 'tests_list.txt'}: 1 test id(s)" in capsys.readouterr().out
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    answer_run(task, run, answers())
    metrics = grade(task, run)
    assert metrics["mergeable"] is False and "test-integrity check failed" in metrics["details"]["reasons"]
    assert metrics["details"]["integrity"]["violations"] == [
        {
            "rule": "test_case_removed",
            "path": "tests/test_calc.py::test_one",
            "detail": "in tests_base.txt, not in the run",
        }
    ]
    assert "test_cases" not in metrics["details"]["integrity_not_measured"]


def test_the_command_runs_without_a_shell_in_a_pinned_environment(
    task: Task, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-key-of-the-grader")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    script = (
        "import os, sys; print(sys.argv[1:]); print(os.getcwd()); print(sorted(os.environ)); "
        "print(os.environ['HOME'])"
    )
    out = tmp_path / "ids.txt"

    run_test_list(task.repo.path, [sys.executable, "-c", script, "a;touch pwned", "$HOME", "*"], out)

    argv, cwd, names, home = out.read_text().splitlines()
    assert argv == "['a;touch pwned', '$HOME', '*']"  # words, not shell syntax
    assert not (task.repo.path / "pwned").exists()
    assert Path(cwd) == task.repo.path
    assert "ANTHROPIC_API_KEY" not in names and "PYTHONPATH" not in names and "PATH" in names
    assert home != str(Path.home())


@pytest.mark.parametrize(
    ("script", "limits", "message"),
    [
        ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", {}, "exited with status 3: boom"),
        ("import time; time.sleep(60)", {"timeout": 0.3}, "did not finish within 0.3 s"),
        ("print('x' * 100000)", {"max_bytes": 1000}, "printed more than 1000 bytes"),
        ("import sys; sys.stderr.write('e' * 100000)", {"max_bytes": 1000}, "printed more than 1000 bytes"),
        ("print('a'); print('b\\0c')", {}, "printed a NUL byte (line 2)"),
    ],
)
def test_a_failed_listing_writes_nothing(
    tmp_path: Path, script: str, limits: dict[str, float], message: str
) -> None:
    out = tmp_path / "ids.txt"
    with pytest.raises(ListingFailed, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_test_list(tmp_path, [sys.executable, "-c", script], out, **limits)  # type: ignore[arg-type]
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no temp file left behind


def test_a_program_that_does_not_exist_is_a_failed_listing(tmp_path: Path) -> None:
    with pytest.raises(ListingFailed, match="cannot run './missing.sh'"):
        run_test_list(tmp_path, ["./missing.sh"], tmp_path / "ids.txt")


def test_capture_exits_1_and_removes_a_stale_list_when_the_listing_fails(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.dir.parent / "runs" / "r"
    assert main(capture_argv(task, run)) == 0
    assert (run / "tests_list.txt").exists()
    declare(task, f"{shlex.quote(sys.executable)} -c 'raise SystemExit(\"collection error\")'")
    capsys.readouterr()

    assert main(capture_argv(task, run, "--json")) == 1

    captured = capsys.readouterr()
    assert not (run / "tests_list.txt").exists() and (run / "workspace.diff").exists()
    assert json.loads(captured.out)["tests_list"] == {
        "error": f"{sys.executable!r} exited with status 1: collection error"
    }
    assert "so `rubric grade` reports a grader failure for this run" in captured.err


def test_a_run_without_its_declared_list_is_a_grader_failure(task: Task) -> None:
    run = task.make_run("r", FIXED, {"pass": False})  # no tests_list.txt
    answer_run(task, run, answers())

    metrics = grade(task, run)

    assert (metrics["mergeable"], metrics["merge_score"], metrics["grader_failure"]) == (None, None, True)
    assert metrics["details"]["reasons"] == [
        "the manifest declares tests.list but the run has no tests_list.txt "
        "(`rubric capture --manifest` writes it; see its output for why it did not)"
    ]
    assert metrics["details"]["judge"] is None


def test_without_a_declared_list_the_unmeasured_parts_are_named(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    declare(task, None)
    run = task.dir.parent / "runs" / "r"
    assert main(capture_argv(task, run)) == 0
    assert "note: the manifest declares no tests.list" in capsys.readouterr().out
    assert not (run / "tests_list.txt").exists()
    (run / "grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 0}))
    (task.dir / "oracle_grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 0}))
    answer_run(task, run, answers())

    metrics = grade(task, run)

    assert metrics["mergeable"] is True and metrics["grader_failure"] is False
    assert metrics["details"]["integrity_not_measured"] == ["test_cases"]


@pytest.mark.parametrize(
    ("manifest", "argv_extra", "message"),
    [
        ('tests:\n  list: "pytest \'--co"\n', (), "repo_manifest.yaml: tests.list: not a command line"),
        ("tests:\n  globs: []\n", (), "repo_manifest.yaml: tests.list: the manifest declares no tests.list"),
        ('tests:\n  list: "true"\n', ("--tests-timeout", "0"), "--tests-timeout: must be more than 0"),
        ('tests:\n  list: "true"\n', ("--tests-max-bytes", "0"), "--tests-max-bytes: must be at least 1"),
    ],
)
def test_list_tests_bad_input_is_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    manifest: str,
    argv_extra: tuple[str, ...],
    message: str,
) -> None:
    path = tmp_path / "repo_manifest.yaml"
    path.write_text(manifest)
    out = tmp_path / "tests_base.txt"
    assert main(["list-tests", str(tmp_path), "--manifest", str(path), "-o", str(out), *argv_extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
