"""``rubric report``: run directories graded by the real ``grade_run`` (real git diffs, the scripted judge
through the real runner), the three output formats, and exit 2 on bad input."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from tests.grading.cli_report_helpers import Graded, expect_error, report_json


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    return Graded(tmp_path_factory.mktemp("report"))


def test_every_outcome_is_accounted_for(graded: Graded, capsys: pytest.CaptureFixture[str]) -> None:
    data = report_json(capsys, graded.args())
    assert data["format"] == 4  # label weighting came with 4, per-task estimands with 3, contrasts with 2
    [cell] = data["cells"]
    assert (cell["arm"], cell["model"], cell["prompt_style"]) == ("a", "m", None)
    assert (cell["runs"], cell["tasks"], cell["measured"]) == (6, 1, 3)
    assert (cell["not_measured"], cell["grader_failures"], cell["judge_failures"]) == (1, 1, 1)
    # Measured: good (mergeable), blocked (tests pass, blocker fails), red (tests fail).
    assert cell["test_pass_rate"]["value"] == pytest.approx(2 / 3)
    assert cell["mergeable_rate"]["value"] == pytest.approx(1 / 3)
    assert cell["difference"]["value"] == pytest.approx(1 / 3)
    assert cell["mergeable_rate"]["ci"] is None  # one task: nothing to resample
    assert cell["mean_merge_score"] == pytest.approx(2 / 3)
    assert cell["provisional"] is True  # today's metrics.json does not say the rubric was admitted
    assert cell["metrics"]["own_tests_fail_on_base"] == {"mean": 0.5, "runs": 2}
    assert data["tasks"] == [{"task": "fix_add", "runs": 6, "judged": 2, "failed_blockers": {"B1": 1}}]
    assert data["by_contamination"] == []
    assert data["repeat_agreement"] is None


def test_agreement_and_disagreements_from_the_second_judge(
    graded: Graded, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_json(capsys, graded.args())
    mergeable = data["agreement"]["mergeable"]
    # Both judged good and blocked; the second judge failed B1 on both, so it is constant.
    assert (mergeable["kappa"], mergeable["raw"], mergeable["n"]) == (None, 0.5, 2)
    assert mergeable["undefined_reason"] == "the second judge gave 'fail' on all 2 runs"
    assert set(data["agreement"]["items"]) == {"fix_add/B1", "fix_add/B2"}
    assert data["disagreements"] == [
        {
            "run": str(graded.runs["good"]),
            "task": "fix_add",
            "item": "B1",
            "primary": "pass",
            "second": "fail",
        },
        {
            "run": str(graded.runs["good"]),
            "task": "fix_add",
            "item": "N1",
            "primary": "fail",
            "second": "pass",
        },
    ]
    assert all(j["scripted"] for j in data["judges"])
    assert any("scripted judge" in w for w in data["warnings"])


def test_tasks_dir_gives_prompt_style_and_base_date_for_cutoffs(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cutoffs = tmp_path / "cutoffs.json"
    cutoffs.write_text(json.dumps({"m": "2025-06-30"}))
    data = report_json(capsys, graded.args("--tasks", str(graded.tasks), "--cutoffs", str(cutoffs)))
    assert [(c["prompt_style"], c["runs"]) for c in data["by_prompt_style"]] == [("issue", 6)]
    assert [(c["split"], c["runs"]) for c in data["by_contamination"]] == [("before_cutoff", 6)]
    cutoffs.write_text(json.dumps({"m": "2024-12-31"}))
    data = report_json(capsys, graded.args("--tasks", str(graded.tasks), "--cutoffs", str(cutoffs)))
    assert [c["split"] for c in data["by_contamination"]] == ["after_cutoff"]
    # Without --tasks nothing says the prompt style (run.json does not): one cell of unknown style.
    data = report_json(capsys, graded.args())
    assert [c["prompt_style"] for c in data["by_prompt_style"]] == [None]


def test_labels_file(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    labels = tmp_path / "labels.json"
    good = Path("..") / graded.runs["good"].relative_to(graded.root.parent)
    labels.write_text(json.dumps({str(graded.runs["blocked"]): False, str(good): True, "elsewhere/r9": True}))
    data = report_json(capsys, graded.args("--labels", str(labels)))
    assert data["judge_accuracy"]["labelled"] == 2
    assert data["judge_accuracy"]["undefined_reason"] == "2 labelled runs; at least 20 are needed (18 more)"
    assert f"1 label in {labels} for runs not in this report: ignored" in data["warnings"]


def test_the_same_seed_gives_the_same_report(graded: Graded, capsys: pytest.CaptureFixture[str]) -> None:
    first = report_json(capsys, graded.args("--seed", "3", "--bootstrap", "50"))
    second = report_json(capsys, graded.args("--seed", "3", "--bootstrap", "50"))
    # The generation time is the one field that may differ: the two calls can straddle a second.
    for data in (first, second):
        del data["provenance"]["generated_at"]
    assert first == second
    assert (first["seed"], first["bootstrap"]) == (3, 50)


def test_csv_has_one_row_per_cell(graded: Graded, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(graded.args("--csv")) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["table"] for r in rows] == ["cells", "by_prompt_style"]
    assert rows[0]["measured"] == "3" and float(rows[0]["mergeable_rate"]) == pytest.approx(1 / 3)
    assert rows[0]["metric:own_tests_fail_on_base"] == "0.5"
    assert rows[0]["mergeable_rate_lo"] == ""  # no interval


def test_markdown_is_the_default_and_puts_warnings_first(
    graded: Graded, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(graded.args()) == 0
    out = capsys.readouterr().out
    assert out.index("## Warnings") < out.index("## Per arm and model")
    assert "33.3% (provisional)" in out
    assert "(scripted)" in out
    assert main(graded.args("--md")) == 0
    assert capsys.readouterr().out == out


def test_untrusted_names_are_escaped_in_csv_and_markdown(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = tmp_path / "odd"
    shutil.copytree(graded.runs["good"], run)
    (run / "run.json").write_text(
        json.dumps({"task": "fix_add", "arm": "=HYPERLINK(1)", "model": "a|b\x1b[2J"})
    )
    assert main(["report", str(run), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["arm"] == "'=HYPERLINK(1)"
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    # The pipe cannot break the table, the escape sequence reaches no terminal (shown as \x1b).
    assert "a\\|b\\\\x1b\\[2J" in out and "\x1b" not in out


# --- bad input: exit 2, one line naming the file and the field, nothing on stdout ------------------------


def broken_run(graded: Graded, tmp_path: Path, name: str = "good") -> Path:
    run = tmp_path / name
    shutil.copytree(graded.runs[name], run)
    return run


def test_missing_run_json(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = broken_run(graded, tmp_path)
    (run / "run.json").unlink()
    expect_error(capsys, ["report", str(run)], f"{run / 'run.json'}: file not found")


def test_a_directory_of_runs_says_to_give_the_runs(
    graded: Graded, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = graded.runs["good"].parent
    expect_error(
        capsys, ["report", str(runs)], f"{runs / 'run.json'}: file not found; to report the runs inside"
    )


def test_missing_metrics_json(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = broken_run(graded, tmp_path)
    (run / "metrics.json").unlink()
    expect_error(capsys, ["report", str(run)], f"{run / 'metrics.json'}: file not found")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"mergeable": "yes"}, "mergeable"),
        ({"merge_score": 1.5}, "merge_score"),
        ({"grader_failure": True}, "grader_failure"),
        ({"mergeable": False}, "mergeable"),  # contradicts details.status "mergeable"
        ({"format": 2}, "format"),
        ({"format": True}, "format"),
        ({"provisional": "no"}, "provisional"),
        ({"details": {"status": "fine"}}, "details.status"),
        ({"details": None}, "details"),
    ],
)
def test_bad_metrics_json_names_the_field(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    run = broken_run(graded, tmp_path)
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, **change}))
    expect_error(capsys, ["report", str(run)], f"{run / 'metrics.json'}: {field}: ")


def test_bad_verdict_in_metrics_json(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = broken_run(graded, tmp_path)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["details"]["judge"]["verdicts"][1]["verdict"] = "maybe"
    (run / "metrics.json").write_text(json.dumps(metrics))
    expect_error(capsys, ["report", str(run)], "metrics.json: details.judge.verdicts[1].verdict: ")


def test_malformed_metrics_json(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = broken_run(graded, tmp_path)
    (run / "metrics.json").write_text('{"mergeable": true,')
    expect_error(capsys, ["report", str(run)], "metrics.json: line 1 column", "malformed JSON")


def test_older_metrics_json_without_provisional_or_format_reads(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = broken_run(graded, tmp_path)
    metrics = json.loads((run / "metrics.json").read_text())
    # What core-judge adds (format, rubric_sha256, provisional, judge_families) is read when present.
    metrics.update(format=1, rubric_sha256="0" * 64, provisional=False)
    metrics["details"]["judge_families"] = {"primary": "claude", "second": None}
    # As if a Claude model had judged through an OpenAI-compatible server: the family names the vendor.
    metrics["details"]["judge"].update(judge="openai:proxy-model-1.0", scripted=False)
    metrics["details"]["something_new"] = {"x": 1}
    (run / "metrics.json").write_text(json.dumps(metrics))
    data = report_json(capsys, ["report", str(run)])
    assert data["cells"][0]["provisional"] is False
    assert [j["vendor"] for j in data["judges"] if j["role"] == "primary"] == ["anthropic"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('["m"]', "expected a JSON object"),
        ('{"m": "June 2025"}', ": m: 'June 2025' is not a date (YYYY-MM-DD)"),
        ('{"m": 20250601}', ": m: 20250601 is not a date"),
        ('{"m": "2025-06-01", "m": "2025-07-01"}', "duplicate key 'm'"),
    ],
)
def test_bad_cutoffs_file(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, fragment: str
) -> None:
    cutoffs = tmp_path / "cutoffs.json"
    cutoffs.write_text(content)
    expect_error(
        capsys, graded.args("--tasks", str(graded.tasks), "--cutoffs", str(cutoffs)), str(cutoffs), fragment
    )


def test_cutoffs_need_tasks(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cutoffs = tmp_path / "cutoffs.json"
    cutoffs.write_text("{}")
    expect_error(capsys, graded.args("--cutoffs", str(cutoffs)), "--cutoffs: needs --tasks")


def test_bad_labels_file(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({str(graded.runs["good"]): "yes"}))
    expect_error(
        capsys, graded.args("--labels", str(labels)), f"{labels}: {graded.runs['good']}: 'yes' is not"
    )


def test_task_not_under_tasks_dir(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expect_error(capsys, graded.args("--tasks", str(tmp_path)), "run.json: task: no fix_add/task.json under")


def test_bad_base_date(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(graded.tasks, tasks)
    task = json.loads((tasks / "fix_add" / "task.json").read_text())
    (tasks / "fix_add" / "task.json").write_text(json.dumps({**task, "base_date": "yesterday"}))
    expect_error(
        capsys, graded.args("--tasks", str(tasks)), "task.json: base_date: 'yesterday' is not a date"
    )


def test_a_task_id_that_is_a_path(graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = broken_run(graded, tmp_path)
    (run / "run.json").write_text(json.dumps({"task": "../../etc", "arm": "a", "model": "m"}))
    expect_error(
        capsys, ["report", str(run), "--tasks", str(graded.tasks)], "run.json: task: '../../etc' is not"
    )


def test_a_run_given_twice(graded: Graded, capsys: pytest.CaptureFixture[str]) -> None:
    good = str(graded.runs["good"])
    expect_error(capsys, ["report", good, good + "/"], "given twice")


def test_bad_bootstrap_count(graded: Graded, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(graded.args("--bootstrap", "-5"))
    assert exc.value.code == 2
    assert "--bootstrap: -5 is negative" in capsys.readouterr().err


def test_html_writes_one_self_contained_file_beside_the_output(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from grading.report.html import render_report_html
    from grading.report.models import Report
    from grading.report.provenance import Provenance

    out = tmp_path / "report.html"
    data = report_json(capsys, graded.args("--html", str(out)))
    body = out.read_text()
    provenance = Provenance.model_validate(data["provenance"])
    assert body == render_report_html(Report.model_validate(data), provenance=provenance)
    assert "Provenance</h2>" in body and f"commit {provenance.commit}" in body
    assert body.startswith("<!DOCTYPE html>") and "<style>" in body and "<svg" in body
    assert "<script" not in body and "<link" not in body and "src=" not in body
    assert "fix_add" in body and data["format"] == 4


def test_html_to_a_missing_directory_is_refused(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "nowhere" / "report.html"
    expect_error(capsys, graded.args("--html", str(out)), "--html", "existing directory")
    assert not out.parent.exists()
    expect_error(capsys, graded.args("--html", str(tmp_path)), "--html")


def test_runs_out_and_items_out_write_every_run_and_verdict_with_the_provenance(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from grading import ItemRow, RunRow, read_rows

    runs_out, items_out = tmp_path / "runs.csv", tmp_path / "items.jsonl"
    data = report_json(capsys, graded.args("--runs-out", str(runs_out), "--items-out", str(items_out)))
    provenance, runs = read_rows(runs_out.read_text(), RunRow)
    assert provenance.model_dump(mode="json") == data["provenance"]
    assert {r.run for r in runs} == {str(r) for r in graded.runs.values()}
    by_name = {Path(r.run).name: r for r in runs}
    assert by_name["good"].measured and by_name["good"].excluded is None
    assert by_name["grader"].excluded is not None and by_name["grader"].excluded.startswith("grader_failure")
    assert by_name["judge"].excluded is not None and by_name["judge"].excluded.startswith("judge_failure")
    assert sum(r.measured for r in runs) == sum(c["measured"] for c in data["cells"])
    items = read_rows(items_out.read_text(), ItemRow)[1]
    blocked = [i for i in items if Path(i.run).name == "blocked" and i.item_id == "B1"]
    assert {(i.role, i.verdict) for i in blocked} == {("primary", "fail"), ("second", "fail")}
    assert all(i.reason and i.human_label is None for i in blocked)


def test_a_rows_file_of_another_kind_is_refused(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    expect_error(capsys, graded.args("--runs-out", str(tmp_path / "runs.txt")), "--runs-out", ".jsonl")
    expect_error(capsys, graded.args("--items-out", str(tmp_path / "none" / "i.csv")), "--items-out")
    assert not (tmp_path / "runs.txt").exists()
