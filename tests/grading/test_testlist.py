"""Test ids are measured, not assumed (§3): `rubric capture --manifest` runs tests.list in the workspace,
`rubric list-tests` on the base, and a run without its list is a grader failure."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from grading.workspace.diff import write_snapshot
from grading.workspace.testlist import ListingFailed, run_test_list, write_listing_error
from tests.grading.cli_helpers import own_stores
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

# Prints one id per test function found under tests/, as a repository's list command would.
LISTER = """\
import pathlib, re
for path in sorted(pathlib.Path("tests").rglob("test_*.py")):
    for name in re.findall(r"^def (test_\\w+)", path.read_text(), re.M):
        print(f"{path}::{name}")
"""


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
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
    assert capsys.readouterr().out == f"{base_list}: 2 test ids\n"
    before = task.dir.parent / "before.txt"
    write_snapshot(task.repo.path, before)
    for path, text in FIXED.items():
        task.repo.write(path, text)
    task.repo.write("tests/test_calc.py", "def test_zero():\n    assert True\n")  # test_one is gone
    run = task.dir.parent / "runs" / "r"

    assert main(capture_argv(task, run)) == 0

    assert (run / "tests_list.txt").read_text() == "tests/test_calc.py::test_zero\n"
    assert f"{run / 'tests_list.txt'}: 1 test id" in capsys.readouterr().out
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


def test_capture_records_a_failed_listing_and_removes_a_stale_list(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.dir.parent / "runs" / "r"
    assert main(capture_argv(task, run)) == 0
    assert (run / "tests_list.txt").exists()
    declare(task, f"{shlex.quote(sys.executable)} -c 'raise SystemExit(\"collection error\")'")
    capsys.readouterr()

    assert main(capture_argv(task, run, "--json")) == 0

    captured = capsys.readouterr()
    assert not (run / "tests_list.txt").exists() and (run / "workspace.diff").exists()
    message = f"{sys.executable!r} exited with status 1: collection error"
    assert json.loads(captured.out)["tests_list"] == {
        "error": message,
        "error_file": str(run / "tests_list.error"),
    }
    assert (run / "tests_list.error").read_text() == f"{message}\ncollection error\n"
    assert "makes the run not mergeable (test_listing_broken)" in captured.err

    # A later capture whose listing works removes the stale error.
    declare(task, f"{shlex.quote(sys.executable)} list_tests.py")
    assert main(capture_argv(task, run)) == 0
    assert (run / "tests_list.txt").exists() and not (run / "tests_list.error").exists()


def test_a_listing_that_cannot_run_is_exit_1_and_a_grader_failure(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    (task.dir / "tests_base.txt").write_text("tests/test_calc.py::test_zero\n")
    declare(task, "no-such-lister-on-path --collect")
    run = task.dir.parent / "runs" / "r"

    assert main(capture_argv(task, run)) == 1

    assert "so `rubric grade` reports a grader failure" in capsys.readouterr().err
    assert not (run / "tests_list.txt").exists() and not (run / "tests_list.error").exists()
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    answer_run(task, run, answers())
    metrics = grade(task, run)
    assert (metrics["mergeable"], metrics["grader_failure"]) == (None, True)


BROKEN_TEST = "def test_two(:\n    assert True\n"  # a syntax error: the lister cannot even import it
IMPORTING_LISTER = """\
import importlib.util, pathlib, sys
for path in sorted(pathlib.Path("tests").rglob("test_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in sorted(n for n in vars(module) if n.startswith("test_")):
        print(f"{path}::{name}")
"""


def _broken_listing_run(task: Task) -> Path:
    task.repo.write("list_tests.py", IMPORTING_LISTER)
    task.repo.commit("a lister that imports the tests")
    base_list = task.dir / "tests_base.txt"
    assert (
        main(["list-tests", str(task.repo.path), "--manifest", str(task.manifest), "-o", str(base_list)]) == 0
    )
    before = task.dir.parent / "before.txt"
    write_snapshot(task.repo.path, before)
    for path, text in FIXED.items():
        task.repo.write(path, text)
    task.repo.write("tests/test_more.py", BROKEN_TEST)
    run = task.dir.parent / "runs" / "r"
    assert main(capture_argv(task, run)) == 0  # the listing failed, and that is recorded: not a fault
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    answer_run(task, run, answers())
    return run


def test_a_test_file_that_breaks_the_listing_makes_the_run_not_mergeable(task: Task) -> None:
    run = _broken_listing_run(task)
    error = (run / "tests_list.error").read_text()
    assert "exited with status 1: SyntaxError" in error and "def test_two(:" in error

    metrics = grade(task, run)

    assert (metrics["mergeable"], metrics["merge_score"], metrics["grader_failure"]) == (False, 0.0, False)
    [violation] = metrics["details"]["integrity"]["violations"]
    assert violation["rule"] == "test_listing_broken"
    assert violation["detail"].startswith("tests.list succeeds on the base and fails in the workspace: ")
    reasons = metrics["details"]["reasons"]
    assert reasons[0] == "test-integrity check failed"
    assert "SyntaxError" in reasons[1] and "test_more.py" in reasons[1]  # the listing's last stderr lines
    assert "test_cases" not in metrics["details"]["integrity_not_measured"]


def test_a_failed_listing_without_a_base_list_is_a_grader_failure(task: Task) -> None:
    run = _broken_listing_run(task)
    (task.dir / "tests_base.txt").unlink()

    metrics = grade(task, run)

    assert (metrics["mergeable"], metrics["grader_failure"]) == (None, True)
    assert metrics["details"]["reasons"] == [
        "tests.list failed in the workspace (tests_list.error) and the task has no tests_base.txt to show "
        "it works on the base (`rubric list-tests` writes it)"
    ]


def test_stderr_in_the_failure_is_its_last_lines_capped(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "for i in range(5000):\n"
        "    print(f'line {i} ' + 'x' * 500 if i % 100 == 99 else f'line {i}', file=sys.stderr)\n"
        "sys.exit(2)"
    )
    with pytest.raises(ListingFailed) as info:
        run_test_list(tmp_path, [sys.executable, "-c", script], tmp_path / "ids.txt")
    lines = info.value.stderr_tail.split("\n")
    assert len(lines) == 20 and lines[0] == "line 4980" and lines[-1].startswith("line 4999 x")
    assert all(len(x) <= 300 for x in lines)
    assert info.value.in_workspace
    error = tmp_path / "tests_list.error"
    write_listing_error(error, info.value)
    assert error.stat().st_size < 8000


def test_a_missing_program_inside_the_checkout_is_the_workspace_s_failure(tmp_path: Path) -> None:
    with pytest.raises(ListingFailed) as info:
        run_test_list(tmp_path, ["./scripts/list.sh"], tmp_path / "ids.txt")
    assert info.value.in_workspace  # the agent deleted the repository's own script
    with pytest.raises(ListingFailed) as info:
        run_test_list(tmp_path, ["no-such-lister-on-path"], tmp_path / "ids.txt")
    assert not info.value.in_workspace  # the harness's PATH lacks it


def test_two_test_list_files_in_one_run_are_refused(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = _broken_listing_run(task)
    (run / "tests_list.txt").write_text("tests/test_calc.py::test_zero\n")
    task.backend()
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"scripted:{task.judge}", "--no-cache"]  # fmt: skip
    assert main(argv) == 2
    assert "tests_list.error: beside tests_list.txt" in capsys.readouterr().err


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
        (
            'tests:\n  list: "pytest --co -q | grep ::"\n',
            (),
            "repo_manifest.yaml: tests.list: '|' is shell syntax, and tests.list runs no shell (its words "
            'are run directly); to use a shell, write it as sh -c "..." or name a script',
        ),
        ('tests:\n  list: "make venv && pytest --co"\n', (), "tests.list: '&&' is shell syntax"),
        ('tests:\n  list: "pytest --co > ids.txt"\n', (), "tests.list: '>' is shell syntax"),
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
