"""What a report says of grade.json's own metrics (a true/false ``own_tests_fail_on_base`` is a rate, a
number a mean) and of runs whose test integrity was not fully measured. Runs are graded by the real
``grade_run`` on real git diffs, then reported by ``rubric report``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from grading import InputError, RunDetails, StrictMetricsFile, read_metrics
from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.judge.cache import MemoryCache
from tests.grading.task_helpers import FIXED, Task, answer_run, answers


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


def graded(task: Task, name: str, grade: dict[str, Any], *, listed: bool = False) -> Path:
    run = task.make_run(name, FIXED, grade)
    (run / "git_dir_changes.txt").write_text("")  # captured from a snapshot with its private record
    if listed:
        (run / "tests_list.txt").write_text("tests/test_calc.py::test_zero\n")
    answer_run(task, run, answers())
    grade_run(task.dir, run, task.manifest, task.backend(), cache=MemoryCache())
    return run


def report(capsys: pytest.CaptureFixture[str], runs: list[Path], fmt: str = "--json") -> Any:
    assert main(["report", *(str(r) for r in runs), fmt, "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if fmt == "--json" else out


def cell_rows(text: str) -> list[dict[str, str]]:
    return [row for row in csv.DictReader(io.StringIO(text)) if row["table"] == "cells"]


def test_a_true_false_metric_is_a_rate_and_a_number_a_mean(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        graded(task, "r1", {"pass": True, "own_tests_fail_on_base": True, "tests_passed": 4}),
        graded(task, "r2", {"pass": True, "own_tests_fail_on_base": False, "tests_passed": 6}),
        graded(task, "r3", {"pass": True, "own_tests_fail_on_base": True}),
    ]

    [cell] = report(capsys, runs)["cells"]

    assert cell["metric_rates"] == {
        "own_tests_fail_on_base": {"rate": pytest.approx(2 / 3), "true": 2, "runs": 3}
    }
    # `pass` is the test-pass rate's, and a boolean is never averaged as a number.
    assert cell["metrics"] == {"tests_passed": {"mean": 5.0, "runs": 2}}
    markdown = report(capsys, runs, "--md")
    assert "own_tests_fail_on_base true in 66.7% (2 of 3 runs)" in markdown
    assert "own_tests_fail_on_base =" not in markdown
    [row] = cell_rows(report(capsys, runs, "--csv"))
    assert row["rate:own_tests_fail_on_base"] == "0.666667"
    assert row["metric:tests_passed"] == "5"
    assert "metric:own_tests_fail_on_base" not in row


def test_a_metric_reported_both_ways_is_shown_apart_with_a_warning(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        graded(task, "r1", {"pass": True, "own_tests_fail_on_base": True}),
        graded(task, "r2", {"pass": True, "own_tests_fail_on_base": 3}),
    ]

    data = report(capsys, runs)

    [cell] = data["cells"]
    assert cell["metric_rates"]["own_tests_fail_on_base"] == {"rate": 1.0, "true": 1, "runs": 1}
    assert cell["metrics"]["own_tests_fail_on_base"] == {"mean": 3.0, "runs": 1}
    assert (
        "grade.json metric 'own_tests_fail_on_base' is true/false in 1 run and a number in 1: "
        "shown apart, as a rate and as a mean"
    ) in data["warnings"]


def test_runs_with_integrity_parts_not_measured_are_counted_per_cell_with_a_warning(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every part measurable: a tests block with a list command, the base list, the oracle's tests_skipped.
    task.manifest.write_text('tests:\n  globs: ["tests/**"]\n  list: "pytest --collect-only -q"\n')
    (task.dir / "tests_base.txt").write_text("tests/test_calc.py::test_zero\n")
    (task.dir / "oracle_grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 0}))
    full = graded(task, "full", {"pass": True, "tests_skipped": 0}, listed=True)
    assert json.loads((full / "metrics.json").read_text())["details"]["integrity_not_measured"] == []
    no_skips = graded(task, "no_skips", {"pass": True}, listed=True)
    (task.dir / "tests_base.txt").unlink()
    neither = graded(task, "neither", {"pass": True}, listed=True)

    data = report(capsys, [full, no_skips, neither])

    [cell] = data["cells"]
    assert cell["measured"] == 3
    assert cell["integrity_not_measured_runs"] == 2
    assert cell["integrity_not_measured"] == {"test_cases": 1, "tests_skipped": 2}
    assert (
        "2 measured runs were graded with test-integrity parts not measured (test_cases in 1, "
        "tests_skipped in 2): their integrity check covered only the other parts (counted per cell)"
    ) in data["warnings"]
    markdown = report(capsys, [full, no_skips, neither], "--md")
    assert "| 2 (test_cases 1, tests_skipped 2) |" in markdown
    [row] = cell_rows(report(capsys, [full, no_skips, neither], "--csv"))
    assert row["integrity_not_measured"] == "2"


def test_a_fully_measured_report_has_no_integrity_warning(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    task.manifest.write_text('tests:\n  globs: ["tests/**"]\n  list: "pytest --collect-only -q"\n')
    (task.dir / "tests_base.txt").write_text("tests/test_calc.py::test_zero\n")
    (task.dir / "oracle_grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 0}))
    run = graded(task, "full", {"pass": True, "tests_skipped": 0}, listed=True)

    data = report(capsys, [run])

    assert data["cells"][0]["integrity_not_measured_runs"] == 0
    assert not [w for w in data["warnings"] if "test-integrity" in w]


# --- read_metrics: one typed reader of metrics.json, from a path or bytes -----------------------------------


def test_read_metrics_reads_what_grade_run_wrote_from_a_path_or_bytes(task: Task) -> None:
    run = graded(task, "r1", {"pass": True, "own_tests_fail_on_base": True, "tests_passed": 4})
    path = run / "metrics.json"
    from_path, from_bytes = read_metrics(path), read_metrics(path.read_bytes())
    assert from_path == from_bytes
    assert from_path.mergeable is True and from_path.details.status == "mergeable"
    assert from_path.grade_values() == ({"tests_passed": 4.0}, {"own_tests_fail_on_base": True})


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"format": 7}, "format", "format 7 is not one this version reads (1)"),
        ({"mergeable": False}, "mergeable", "False contradicts details.status 'mergeable'"),
        ({"judge_failure": True}, "judge_failure", "True contradicts details.status 'mergeable'"),
        ({"merge_score": None}, "merge_score", "a mergeable run has a merge_score"),
        ({"merge_score": 1.5}, "merge_score", "less than or equal to 1"),
        ({"grader_failure": "no"}, "grader_failure", "a valid boolean"),
    ],
)
def test_a_bad_metrics_json_names_the_file_and_the_field(
    task: Task, change: dict[str, Any], field: str, message: str
) -> None:
    path = graded(task, "r1", {"pass": True}) / "metrics.json"
    data = json.loads(path.read_text())
    data.update(change)
    path.write_text(json.dumps(data))
    for source in (path, path.read_bytes()):
        with pytest.raises(InputError) as exc:
            read_metrics(source)
        text = str(exc.value)
        assert text.startswith(str(path) if isinstance(source, Path) else "metrics.json")
        assert field in text and message in text, text


def test_the_strict_read_is_whole_the_grader_s_details_and_a_sha256(task: Task) -> None:
    path = graded(task, "r1", {"pass": True}) / "metrics.json"
    whole = read_metrics(path, strict=True)
    assert isinstance(whole, StrictMetricsFile) and isinstance(whole.details, RunDetails)
    assert whole.details.judge is not None and whole.details.judge.verdicts
    assert whole.grade_values() == read_metrics(path).grade_values()
    data = json.loads(path.read_text())
    data["rubric_sha256"] = "abc"
    data["details"]["judge"]["verdicts"][0]["reason"] = 7
    path.write_text(json.dumps(data))
    assert read_metrics(path).rubric_sha256 == "abc"  # a report reads neither
    with pytest.raises(InputError) as exc:
        read_metrics(path, strict=True)
    text = str(exc.value)
    assert "rubric_sha256: String should match pattern" in text, text
    assert "details.judge.verdicts[0].reason: Input should be a valid string" in text, text


def test_a_metrics_json_that_is_not_an_object_or_not_json_is_refused() -> None:
    with pytest.raises(InputError, match=r"^metrics\.json: metrics\.json is a JSON object"):
        read_metrics(b"[]")
    with pytest.raises(InputError, match=r"^runs/r1/metrics\.json: .*line 1"):
        read_metrics(b'{"mergeable": true,}', "runs/r1/metrics.json")
    with pytest.raises(InputError, match="details"):
        read_metrics(
            b'{"mergeable": null, "merge_score": null, "grader_failure": false, "judge_failure": false}'
        )
