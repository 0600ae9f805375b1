"""Human labels weighted by how they were drawn (issue 31 §3): a run's inclusion probability from its labels,
sensitivity and specificity as inverse-probability-weighted (Hájek) ratios, ``rubric report --labels`` with
and without the probability column, and a small run of benchmarks/label_weighting.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from grading import run_inclusion_probability
from grading.cli.rubric import main
from grading.report.build import build_report
from grading.report.html import render_report_html
from grading.report.models import FORMAT, GradedRun
from grading.report.render import report_markdown
from tests.grading.cli_report_helpers import Graded, expect_error, report_json

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


# --- a run's inclusion probability ------------------------------------------------------------------------


def test_queue_pairs_multiply_and_an_audit_draw_counts_once() -> None:
    # Disagreements are always offered, agreed pairs each with its own draw: the run needs all of them.
    assert run_inclusion_probability(["B1", "B2"], {"B1": [("judges", 1.0)], "B2": [("agreed", 0.1)]}) == 0.1
    both_agreed = {"B1": [("agreed", 0.2)], "B2": [("agreed", 0.2)]}
    assert run_inclusion_probability(["B1", "B2"], both_agreed) == pytest.approx(0.04)
    # The audit draws the run whole: its probability once, not once per blocker.
    audited = {"B1": [("audit", 0.25)], "B2": [("audit", 0.25)]}
    assert run_inclusion_probability(["B1", "B2"], audited) == pytest.approx(0.25)
    # Either route completes the run: 1 − (1 − audit)(1 − queues).
    either = {"B1": [("audit", 0.25), ("judges", 1.0)], "B2": [("audit", 0.25), ("agreed", 0.1)]}
    assert run_inclusion_probability(["B1", "B2"], either) == pytest.approx(1 - 0.75 * 0.9)
    # A blocker only the audit offered: only the audit could have completed the run.
    assert run_inclusion_probability(["B1", "B2"], {"B1": [("audit", 0.3)], "B2": [("judges", 1.0)]}) == 0.3
    assert run_inclusion_probability(["B1", "B2"], {"B1": [("judges", 1.0)]}) is None


# --- Hájek sensitivity and specificity --------------------------------------------------------------------


def _labelled(task: str, n: int, called: bool, human: bool, probability: float | None) -> list[GradedRun]:
    status = "mergeable" if called else "not_mergeable"
    return [
        GradedRun(
            run=f"{task}/{status}/{human}/{probability}/{i}",
            task=task,
            status=status,
            test_pass=True,
            mergeable=called,
            checks_passed=True,
            human_mergeable=human,
            label_probability=probability,
        )
        for i in range(n)
    ]


def _design(probability: float | None) -> list[GradedRun]:
    """Per task: 4 right calls drawn with ``probability`` (an agreed sample), and 2 wrong calls, one each
    way, drawn with certainty (disagreements)."""
    runs = []
    for t in range(6):
        task = f"t{t}"
        runs += _labelled(task, 2, True, True, probability) + _labelled(task, 2, False, False, probability)
        runs += _labelled(task, 1, False, True, None if probability is None else 1.0)
        runs += _labelled(task, 1, True, False, None if probability is None else 1.0)
    return runs


def test_sensitivity_and_specificity_weigh_each_run_by_one_over_its_probability() -> None:
    weighted = build_report(_design(0.1), bootstrap=0).judge_accuracy
    # Per side: 2 right at weight 10 and 1 wrong at weight 1, in each of 6 tasks: 120 / 126.
    assert weighted.sensitivity == pytest.approx(20 / 21) and weighted.specificity == pytest.approx(20 / 21)
    assert weighted.weighting == "inclusion_probability" and weighted.labelled == 36
    # Kish: (Σw)² / Σw² over 24 runs at 10 and 12 at 1.
    assert weighted.effective_labelled == pytest.approx(252**2 / 2412)
    uniform = build_report(_design(None), bootstrap=0)
    assert uniform.judge_accuracy.sensitivity == pytest.approx(2 / 3)
    assert uniform.judge_accuracy.weighting == "uniform_assumed"
    said = [w for w in uniform.warnings if w.startswith("human labels: ")]
    assert len(said) == 1 and "uniform sampling is assumed" in said[0]
    said = [w for w in build_report(_design(0.1), bootstrap=0).warnings if w.startswith("human labels: ")]
    assert len(said) == 1 and "each labelled run weighs 1 / its inclusion probability" in said[0]
    assert "uniform sampling" not in said[0]


def test_the_corrected_rate_uses_the_weighted_accuracy_and_its_interval_resamples_the_weights() -> None:
    # Per task: 3 right mergeable calls and 1 right not-mergeable call drawn at 0.1, one wrong call each way
    # drawn with certainty; 4 more runs fail the tests. Weighted Se = 30/31, Sp = 10/11 (unweighted 3/4, 1/2).
    runs = []
    for t in range(6):
        task = f"t{t}"
        runs += _labelled(task, 3, True, True, 0.1) + _labelled(task, 1, False, False, 0.1)
        runs += _labelled(task, 1, False, True, 1.0) + _labelled(task, 1, True, False, 1.0)
        runs += [
            GradedRun(
                run=f"{task}/red/{i}",
                task=task,
                status="not_mergeable",
                test_pass=False,
                mergeable=False,
                checks_passed=True,
            )
            for i in range(4)
        ]
    report = build_report(runs, bootstrap=400)
    corrected = report.cells[0].corrected_mergeable_rate
    assert corrected is not None and corrected.value is not None and corrected.ci is not None
    se, sp = 30 / 31, 10 / 11
    merged, judged = 4 / 10, 6 / 10
    assert corrected.value == pytest.approx((merged - (1 - sp) * judged) / (se + sp - 1))
    assert corrected.ci[0] <= corrected.value <= corrected.ci[1]
    assert report.format == FORMAT == 4
    page = report_markdown(report)
    assert "each labelled run weighs 1 / its inclusion probability" in page
    assert "each labelled run weighs 1 / its inclusion probability" in render_report_html(report)


# --- rubric report --labels ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    return Graded(tmp_path_factory.mktemp("weighting"))


def _diff_sha(run: Path) -> str:
    metrics = json.loads((run / "metrics.json").read_text())
    return str(metrics.get("diff_sha256") or "0" * 64)


def _rows(graded: Graded, probability: float | None) -> list[dict[str, Any]]:
    """A label on every blocker the judge decided on the judged runs: good passes B1 and B2 (the second
    judge disagrees on B1: drawn with certainty), blocked fails B1 (agreed: drawn with ``probability``)."""
    rows = []
    for name, verdicts, chance in (
        ("good", {"B1": "pass", "B2": "pass"}, (1.0, probability)),
        ("blocked", {"B1": "fail", "B2": "pass"}, (probability, probability)),
    ):
        run = graded.runs[name]
        for (item, verdict), p in zip(verdicts.items(), chance, strict=True):
            row: dict[str, Any] = {
                "run": str(run),
                "task": "fix_add",
                "repetition": 0,
                "item": item,
                "diff_sha256": "a" * 64,
                "verdict": verdict,
                "time": "2026-01-01T00:00:00Z",
                "queue": "judges" if p == 1.0 else "agreed",
            }
            if probability is not None:
                row["inclusion_probability"] = p
            rows.append(row)
    return rows


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rubric_report_weighs_the_labels_file_by_its_probabilities(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    given = _write_jsonl(tmp_path / "given.jsonl", _rows(graded, 0.2))
    data = report_json(capsys, graded.args("--labels", str(given)))
    accuracy = data["judge_accuracy"]
    assert accuracy["labelled"] == 2 and accuracy["weighting"] == "inclusion_probability"
    # good: B1 certain × B2 at 0.2 -> 0.2; blocked: two agreed pairs at 0.2 -> 0.04. Weights 5 and 25.
    assert accuracy["effective_labelled"] == pytest.approx(30**2 / (25 + 625))
    assert not [w for w in data["warnings"] if "uniform sampling" in w]

    absent = _write_jsonl(tmp_path / "absent.jsonl", _rows(graded, None))
    data = report_json(capsys, graded.args("--labels", str(absent)))
    assert data["judge_accuracy"]["weighting"] == "uniform_assumed"
    assert data["judge_accuracy"]["effective_labelled"] == pytest.approx(2.0)
    assert [w for w in data["warnings"] if w.startswith("human labels: ") and "uniform sampling" in w]
    html = tmp_path / "report.html"
    assert main([*graded.args("--labels", str(absent)), "--html", str(html)]) == 0
    assert "uniform sampling is assumed" in capsys.readouterr().out
    assert "uniform sampling is assumed" in html.read_text()


def test_the_per_run_summary_carries_the_probability_too(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    summary = tmp_path / "labels.json"
    summary.write_text(
        json.dumps(
            {
                str(graded.runs["good"]): {"mergeable": True, "inclusion_probability": 0.2},
                str(graded.runs["blocked"]): {"mergeable": False, "inclusion_probability": 0.04},
            }
        )
    )
    accuracy = report_json(capsys, graded.args("--labels", str(summary)))["judge_accuracy"]
    assert accuracy["weighting"] == "inclusion_probability"
    assert accuracy["effective_labelled"] == pytest.approx(30**2 / (25 + 625))
    summary.write_text(
        json.dumps(
            {
                str(graded.runs["good"]): {"mergeable": True, "inclusion_probability": 0.2},
                str(graded.runs["blocked"]): False,
            }
        )
    )
    expect_error(
        capsys,
        graded.args("--labels", str(summary)),
        f"{summary}: {graded.runs['blocked']}.inclusion_probability: missing",
    )
    never = {"mergeable": True, "inclusion_probability": 0}
    summary.write_text(json.dumps({str(graded.runs["good"]): never}))
    expect_error(
        capsys,
        graded.args("--labels", str(summary)),
        f"{graded.runs['good']}.inclusion_probability: 0 is not a probability in (0, 1]",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "inclusion_probability: Input should be greater than 0"),
        (1.5, "inclusion_probability: Input should be less than or equal to 1"),
        ("often", "inclusion_probability: Input should be a valid number"),
        (None, "inclusion_probability: missing, while other rows give it"),
    ],
)
def test_a_bad_probability_is_named_by_file_line_and_field(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path, value: Any, message: str
) -> None:
    rows = _rows(graded, 0.2)
    if value is None:
        del rows[2]["inclusion_probability"]
    else:
        rows[2]["inclusion_probability"] = value
    path = _write_jsonl(tmp_path / "labels.jsonl", rows)
    expect_error(capsys, graded.args("--labels", str(path)), f"{path}:3: {message}")


def test_a_csv_without_the_column_assumes_uniform_and_a_csv_with_an_empty_cell_is_refused(
    graded: Graded, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import csv

    def write(rows: list[dict[str, Any]], fields: list[str]) -> Path:
        path = tmp_path / "labels.csv"
        with path.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        return path

    rows = _rows(graded, None)
    path = write(rows, list(rows[0]))
    assert report_json(capsys, graded.args("--labels", str(path)))["judge_accuracy"]["weighting"] == (
        "uniform_assumed"
    )
    rows = _rows(graded, 0.2)
    rows[1]["inclusion_probability"] = ""
    path = write(rows, list(rows[0]))
    expect_error(capsys, graded.args("--labels", str(path)), f"{path}:3: inclusion_probability: missing")


# --- the benchmark, small ---------------------------------------------------------------------------------


def test_weighted_labels_are_unbiased_where_unweighted_ones_are_not() -> None:
    # benchmarks/label_weighting.py over 120 data sets of 100 tasks (seeds 0-119; the agreed pairs sampled
    # at 10, 15 and 20% in turn): the labels as the queue draws them make the judge look worse than it is
    # unweighted (its Se and Sp 10+ points low, the corrected rate several points high); weighted, each is
    # within a point or two of the truth.
    from benchmarks.label_weighting import study, true_accuracy, true_rate

    figures = study(120, 100, 0)
    sensitivity, specificity = true_accuracy()
    truth = true_rate()
    unweighted, weighted = figures["unweighted"], figures["weighted"]
    assert unweighted.bias(unweighted.sensitivity, sensitivity) < -0.08
    assert unweighted.bias(unweighted.specificity, specificity) < -0.08
    assert unweighted.bias(unweighted.corrected, truth) > 0.015
    assert abs(weighted.bias(weighted.sensitivity, sensitivity)) < 0.02
    assert abs(weighted.bias(weighted.specificity, specificity)) < 0.02
    assert abs(weighted.bias(weighted.corrected, truth)) < 0.01
    assert len(weighted.corrected) >= 115


def test_the_weighted_corrected_interval_covers() -> None:
    from benchmarks.label_weighting import study

    weighted = study(120, 40, 300, first_seed=1000)["weighted"]
    assert len(weighted.covered) >= 110 and sum(weighted.covered) / len(weighted.covered) >= 0.88
