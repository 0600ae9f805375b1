"""How the report reads (issue 35): one row per contrast with the rates as columns, grouped by kind; a
reason said once under its table; the charts' legends in their own .svg files; counts that pluralise."""

from __future__ import annotations

import re

from grading.report.charts import blocker_histogram, forest_plot, rates_chart, standalone
from grading.report.html import render_report_html
from grading.report.models import GradedRun, Report
from grading.report.render import (
    CONTRAST_KINDS,
    METRIC_NAMES,
    contrast_table,
    metric_lines,
    report_markdown,
)
from grading.words import counted
from tests.grading.report_helpers import report, run


def two_arms_two_models() -> Report:
    """Arms a and b, models m and n, three tasks each with a mergeable and a blocked run; arm b's model n
    fails the tests on t3 (so its rates differ). Contrasts: two of arms (one per model), two of models
    (one per arm), each over the three metrics."""
    runs: list[GradedRun] = []
    for arm in ("a", "b"):
        for model in ("m", "n"):
            for task in ("t1", "t2", "t3"):
                second = "tests_fail" if (arm, model, task) == ("b", "n", "t3") else "blocker"
                runs += [
                    run(task, "mergeable", arm=arm, model=model),
                    run(task, second, arm=arm, model=model),
                ]
    return report(runs)


def test_the_contrasts_table_has_one_row_per_pair_with_the_rates_as_columns() -> None:
    built = two_arms_two_models()
    assert len(built.contrasts) == 4 * len(METRIC_NAMES)  # the JSON keeps one contrast per metric
    groups, notes = contrast_table(built.contrasts)
    assert [title for title, _ in groups] == [CONTRAST_KINDS["arm"], CONTRAST_KINDS["model"]]
    rows = [row for _, lines in groups for row, _, _ in lines]
    assert [(r.kind, r.within, f"{r.b} − {r.a}") for r in rows] == [
        ("arm", "model m", "b − a"),
        ("arm", "model n", "b − a"),
        ("model", "arm a", "n − m"),
        ("model", "arm b", "n − m"),
    ]
    for _, lines in groups:
        for row, cells, _ in lines:
            assert len(cells) == len(METRIC_NAMES)
            assert set(row.by_metric) == set(METRIC_NAMES)
    # Arm b − a for model n: test-pass drops by a sixth on average (t3 fails the tests in arm b).
    _, cells, _ = groups[0][1][1]
    assert cells[0][0].startswith("−16.7 pp [")

    # The HTML file: one row per pair (2 group headers + 4 rows + the header row), the rates as columns.
    page = render_report_html(built)
    table = page.split('<h2 id="contrasts">')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 4 and table.count('<tr class="group">') == 2
    assert "<th>Test-pass</th><th>Mergeable</th><th>Difference</th>" in table
    # Markdown: the same rows.
    markdown = report_markdown(built).split("## Contrasts")[1].split("##")[0]
    assert sum(line.startswith("| b − a (model") or line.startswith("| n − m (arm") for line in
               markdown.splitlines()) == 4  # fmt: skip


def test_a_reason_is_said_once_under_its_table() -> None:
    # One task per cell: no interval anywhere, for the same reason.
    built = report([run("t1", arm=arm, model="m") for arm in ("a", "b") for _ in range(3)])
    page = render_report_html(built)
    cells = page.split("<h2>Per arm and model</h2>")[1].split("<svg")[0]  # the table and its notes
    visible = re.sub(r"<[^>]+>", " ", cells)
    assert visible.count("one task only: nothing to resample") == 1
    assert '<sup class="note">1</sup>' in cells  # each rate without an interval points at it
    contrasts = page.split('<h2 id="contrasts">')[1].split("<h2>")[0]
    assert re.sub(r"<[^>]+>", " ", contrasts).count("no interval: one shared task") <= 1


def test_standalone_charts_carry_their_legend() -> None:
    built = two_arms_two_models()
    rates = standalone(rates_chart(built.cells, built.bootstrap))
    legend = rates.split('<g class="legend">')[1]
    assert "■</tspan> test-pass" in legend and "●</tspan> mergeable" in legend and "95% interval" in legend
    forest = standalone(forest_plot(built.contrasts))
    legend = forest.split('<g class="legend">')[1]
    assert "b − a (pp)" in legend and "○</tspan> fewer than 10 shared tasks" in legend
    histogram = standalone(blocker_histogram(built.tasks[0]))
    assert "failed, of the runs the judge decided" in histogram.split('<g class="legend">')[1]
    # A cell without an interval is marked, and the legend says why, once.
    one_task = report([run("t1", arm="a", model="m")] * 2)
    chart = rates_chart(one_task.cells, one_task.bootstrap)
    assert chart.count("no interval") == 2  # the row's <title> and the legend; not on the row's line
    assert "* no interval: one task only" in chart.split('<g class="legend">')[1]


def test_the_forest_plot_keeps_its_labels_short_with_the_full_title_on_hover() -> None:
    long = "a-model-with-a-very-long-identifier-20250929"
    built = report([run(t, o, arm=arm, model=long) for arm in ("base", "guided") for t in ("t1", "t2")
                    for o in ("mergeable", "blocker")])  # fmt: skip
    forest = forest_plot(built.contrasts)
    labels = re.findall(r'<text x="0" y="[\d.]+" stroke="#fff"[^>]*>([^<]*)</text>', forest)
    assert labels and all(len(label) <= 46 for label in labels)
    assert f"guided − base (model {long})" in forest  # in the row's <title>


def test_counts_pluralise() -> None:
    assert (counted(1, "run"), counted(2, "run"), counted(0, "run")) == ("1 run", "2 runs", "0 runs")
    assert counted(1, "match", "matches") == "1 match" and counted(3, "match", "matches") == "3 matches"
    one = report([run("t1", arm="a", model="m", metrics={"tests_added": 2.0})])
    assert metric_lines(one.cells) == [("a / m", "tests_added", "= 2 (1 run)")]
    page = render_report_html(one)
    assert "(1 runs)" not in page and "1 runs" not in page
