"""A run made by the SWE-bench harness (run.json ``"source": "swe-bench"``: the patch is the agent's
``model_patch``, grade.json comes from the harness's report.json, nothing was captured) through ``rubric
grade``, ``rubric integrity`` and ``rubric report``: what only a capture records is not measured, with the
harness named as the reason, never passed and never a grader failure; a patch that is not a diff is the
agent's doing and leaves the run not mergeable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grading.checks.run import make_run
from grading.cli.rubric import main
from grading.errors import InputError
from tests.grading.cli_helpers import grade_argv, own_stores
from tests.grading.task_helpers import Task, answer_run, answers, diff_of

BASE_TESTS = "tests/test_calc.py::test_zero\n"
HARNESS_PARTS = ["git_dir", "ignored_files", "test_cases", "tests_skipped"]


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    """The example task under a manifest that declares tests.list, with the base's test ids stored."""
    own_stores(tmp_path, monkeypatch)
    task = Task(tmp_path)
    task.manifest.write_text(
        'tests:\n  globs: ["tests/**"]\n  config_globs: ["**/conftest.py"]\n'
        '  list: "pytest --collect-only -q"\n'
    )
    (task.dir / "tests_base.txt").write_text(BASE_TESTS)
    return task


def harness_run(
    task: Task, name: str, *, resolved: bool, patch: bytes | None = None, marked: bool = True
) -> Path:
    """A run folder as the app's SWE-bench import writes it: the fix as model_patch (or ``patch``),
    grade.json from the report, an empty ignored_created.txt and no test list."""
    run = task.dir.parent / "runs" / name
    run.mkdir(parents=True)
    task.repo.git("reset", "-q", "--hard", "HEAD")
    task.repo.write("src/calc.py", "def add(a, b):\n    return a + b\n")
    (run / "workspace.diff").write_bytes(patch if patch is not None else diff_of(task.repo))
    record: dict[str, Any] = {"task": "fix_add", "arm": "swe-agent", "model": "claude-3-5-sonnet"}
    if marked:
        record["source"] = "swe-bench"
    (run / "run.json").write_text(json.dumps(record))
    tests_status = {"FAIL_TO_PASS": {"success": ["tests/test_calc.py::test_add"], "failure": []}}
    grade = {"pass": resolved, "patch_successfully_applied": patch is None, "tests_status": tests_status}
    (run / "grade.json").write_text(json.dumps(grade))
    (run / "ignored_created.txt").write_text("")
    return run


def grade(task: Task, run: Path) -> int:
    answer_run(task, run, answers())
    return main(grade_argv(task, run))


def metrics(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def test_rubric_grade_leaves_what_the_harness_cannot_tell_not_measured(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = harness_run(task, "harness", resolved=True)
    assert grade(task, run) == 0
    graded = metrics(run)
    assert (graded["mergeable"], graded["grader_failure"]) == (True, False)
    assert graded["details"]["integrity_not_measured"] == HARNESS_PARTS
    integrity = graded["details"]["integrity"]
    assert integrity["ok"] is True and integrity["measured"] == ["deleted_files"]
    assert all("SWE-bench harness" in integrity["not_measured"][part] for part in HARNESS_PARTS)

    capsys.readouterr()
    assert main(["integrity", str(task.dir), str(run), "--manifest", str(task.manifest)]) == 0
    out = capsys.readouterr().out
    assert "not measured: test_cases (the SWE-bench harness lists no test ids" in out
    assert "not measured: ignored_files (the SWE-bench harness records no ignored files" in out

    assert main(["report", str(run), "--json", "--bootstrap", "0"]) == 0
    (cell,) = json.loads(capsys.readouterr().out)["cells"]
    assert (cell["runs"], cell["measured"], cell["grader_failures"]) == (1, 1, 0)
    assert cell["integrity_not_measured_runs"] == 1
    assert cell["integrity_not_measured"] == dict.fromkeys(HARNESS_PARTS, 1)


def test_without_the_marker_a_missing_test_list_is_still_a_grader_failure(task: Task) -> None:
    run = harness_run(task, "captured", resolved=True, marked=False)
    assert grade(task, run) == 1
    graded = metrics(run)
    assert graded["grader_failure"] is True and graded["details"]["status"] == "grader_failure"
    assert (
        "the manifest declares tests.list but the run has no tests_list.txt"
        in graded["details"]["reasons"][0]
    )


def test_a_harness_patch_that_is_not_a_diff_is_not_mergeable(task: Task) -> None:
    prose = b"I looked at calc.py and the function already seems correct.\n"
    # Resolved all the same (the tests were already passing): still no change a reviewer could read.
    run = harness_run(task, "prose", resolved=True, patch=prose)
    assert grade(task, run) == 1
    graded = metrics(run)
    assert (graded["mergeable"], graded["merge_score"], graded["grader_failure"]) == (False, 0.0, False)
    assert graded["details"]["status"] == "not_mergeable"
    assert graded["details"]["reasons"] == [
        "the patch is not a diff that can be reviewed (line 1: not a diff: no file header ('diff --git' or "
        "'---'/'+++') found)"
    ]
    assert graded["details"]["judge"] is None  # no verdict could change it
    assert graded["details"]["integrity_not_measured"] == ["deleted_files", *HARNESS_PARTS]

    unresolved = harness_run(task, "nul", resolved=False, patch=b"diff --git a/x b/x\n\x00\n")
    assert grade(task, unresolved) == 1
    assert metrics(unresolved)["details"]["reasons"] == ["pass is false"]


def test_a_diff_that_does_not_parse_is_still_bad_input_for_a_captured_run() -> None:
    """`rubric capture` writes workspace.diff from git: one that does not parse is a broken input."""
    for run_json in (None, b'{"task": "fix_add"}'):
        with pytest.raises(InputError, match="not a diff"):
            make_run("run", grade_json=b'{"pass": true}', diff=b"prose\n", run_json=run_json)
    harness = make_run(
        "run", grade_json=b'{"pass": true}', diff=b"prose\n", run_json=b'{"task": "t", "source": "swe-bench"}'
    )
    assert harness.changes == [] and harness.unreadable_patch is not None


def test_an_infrastructure_failure_of_the_harness_is_not_measured(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    """grade.json as the app's import writes it from a report with ``infra_failure: true``: the harness's
    environment broke, so ``pass: false`` measured nothing of the patch: not measured, the judge not called,
    and ``rubric report`` leaves it out of the measured runs."""
    run = harness_run(task, "oom", resolved=False)
    grade_json = json.loads((run / "grade.json").read_text())
    grade_json |= {"patch_is_None": False, "patch_exists": True, "infra_failure": True}
    grade_json["infra_failure_reason"] = "out_of_memory"
    (run / "grade.json").write_text(json.dumps(grade_json))
    grade(task, run)
    graded = metrics(run)
    assert (graded["mergeable"], graded["merge_score"], graded["grader_failure"]) == (None, None, False)
    assert graded["details"]["status"] == "not_measured"
    assert graded["details"]["reasons"] == [
        "not measured: the SWE-bench harness's infrastructure failed: out_of_memory "
        "(infra_failure in its report)"
    ]
    assert graded["details"]["judge"] is None
    capsys.readouterr()
    assert main(["report", str(run), "--json", "--bootstrap", "0"]) == 0
    (cell,) = json.loads(capsys.readouterr().out)["cells"]
    assert (cell["runs"], cell["measured"]) == (1, 0)

    # The key means nothing in a grader's own grade.json: a captured run that says pass false failed.
    captured = harness_run(task, "captured", resolved=False, marked=False)
    (captured / "grade.json").write_text(json.dumps(grade_json))
    (captured / "tests_list.txt").write_text(BASE_TESTS)
    grade(task, captured)
    assert metrics(captured)["details"]["status"] == "not_mergeable"
