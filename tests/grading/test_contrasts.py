"""grading.report.contrasts: arm and model contrasts paired by task, recomputed independently."""

from __future__ import annotations

import csv
import io
import random
from typing import Any

import numpy as np
import pytest

from grading.report.contrasts import FEW_TASKS
from grading.report.models import FORMAT, GradedRun
from grading.report.render import precision_text, report_csv, report_markdown
from tests.grading.report_helpers import report, run

# (task, arm, model) -> outcomes of its runs: m mergeable, b blocker (tests pass), r tests fail
Design = dict[tuple[str, str, str], str]


def runs_of(design: Design) -> list[GradedRun]:
    names = {"m": "mergeable", "b": "blocker", "r": "tests_fail"}
    out = []
    for (task, arm, model), outcomes in design.items():
        for i, o in enumerate(outcomes):
            out.append(
                run(task=task, outcome=names[o], arm=arm, model=model, run=f"{task}/{arm}/{model}/{i}")
            )
    return out


def varied_design(tasks: int, seed: int = 3) -> Design:
    rng = random.Random(seed)
    design: Design = {}
    for t in range(tasks):
        ease = rng.random()
        for arm, lift in (("base", 0.0), ("guided", 0.25)):
            design[(f"t{t}", arm, "m")] = "".join(
                "m" if rng.random() < ease + lift else rng.choice("br") for _ in range(5)
            )
    return design


def by_key(contrasts: list[Any], **key: str) -> Any:
    [found] = [c for c in contrasts if all(getattr(c, k) == v for k, v in key.items())]
    return found


# Student's t 0.975 quantiles from a printed table, for the intervals recomputed by hand.
T975 = {7: 2.364624252, 9: 2.262157163}


def test_a_contrast_value_and_interval_recomputed_by_hand() -> None:
    design = varied_design(9)
    del design[("t8", "guided", "m")]  # t8 has one side only: not a shared task
    rep = report(runs_of(design), bootstrap=500, seed=7)
    c = by_key(rep.contrasts, kind="arm", fixed="m", metric="mergeable_rate")
    assert (c.a, c.b, c.tasks, c.runs, c.tasks_a, c.tasks_b) == ("base", "guided", 8, 80, 9, 8)

    def rate(task: str, arm: str) -> float:
        outcomes = design[(task, arm, "m")]
        return outcomes.count("m") / len(outcomes)

    # The mean over shared tasks of each task's difference, and a t interval on those differences.
    diffs = np.array([rate(f"t{t}", "guided") - rate(f"t{t}", "base") for t in range(8)])
    se = diffs.std(ddof=1) / np.sqrt(8)
    assert c.value == pytest.approx(diffs.mean())
    assert c.se == pytest.approx(se)
    assert c.ci == pytest.approx((diffs.mean() - T975[7] * se, diffs.mean() + T975[7] * se))
    assert c.method == "t"


def test_pairing_cancels_task_difficulty_without_claiming_precision() -> None:
    # Tasks from very easy to very hard, the same +1-of-4 lift on every one.
    design: Design = {}
    for t in range(10):
        passed = t % 4
        design[(f"t{t}", "a", "m")] = "m" * passed + "b" * (4 - passed)
        design[(f"t{t}", "b", "m")] = "m" * (passed + 1) + "b" * (3 - passed)
    rep = report(runs_of(design), bootstrap=1000)
    c = by_key(rep.contrasts, metric="mergeable_rate")
    assert c.value == pytest.approx(0.25)
    # Every task moved by the same amount: no spread, so not a zero-width interval but the exact bound on
    # how many of 10 tasks could differ (0 of 10 seen: at most 1 − 0.025^(1/10) of them).
    share = 1 - 0.025 ** (1 / 10)
    assert c.method == "no_spread"
    assert c.ci == pytest.approx((0.25 - share * 1.25, 0.25 + share * 0.75))
    assert "within" not in precision_text(c)
    cells = {cell.arm: cell.mergeable_rate for cell in rep.cells}
    assert all(e.ci is not None and e.ci[1] - e.ci[0] > 0.2 for e in cells.values())


def test_every_pair_of_arms_per_model_and_of_models_per_arm() -> None:
    design: Design = {}
    for t in ("t1", "t2"):
        for arm in ("x", "y", "z"):
            for model in ("m1", "m2"):
                design[(t, arm, model)] = "mb"
    contrasts = report(runs_of(design)).contrasts
    keys = {(c.kind, c.fixed, c.a, c.b) for c in contrasts}
    arm_pairs = [("x", "y"), ("x", "z"), ("y", "z")]
    assert keys == {("arm", m, a, b) for m in ("m1", "m2") for a, b in arm_pairs} | {
        ("model", arm, "m1", "m2") for arm in ("x", "y", "z")
    }
    assert len(contrasts) == 3 * len(keys)  # three metrics each
    assert {c.metric for c in contrasts} == {"test_pass_rate", "mergeable_rate", "difference"}


def test_few_tasks_keep_their_interval_and_one_task_says_why_not() -> None:
    design = varied_design(FEW_TASKS - 1)
    few = by_key(report(runs_of(design)).contrasts, metric="mergeable_rate")
    assert few.few_tasks and few.ci is not None and few.interval_reason is None
    many = by_key(report(runs_of(varied_design(FEW_TASKS))).contrasts, metric="mergeable_rate")
    assert not many.few_tasks
    one = by_key(report(runs_of(varied_design(1))).contrasts, metric="mergeable_rate")
    assert one.ci is None and "nothing to resample" in (one.interval_reason or "")
    none = report(runs_of({("t1", "a", "m"): "mm", ("t2", "b", "m"): "mb"})).contrasts
    assert all(c.value is None and c.tasks == 0 for c in none)
    assert "(few tasks)" in report_markdown(report(runs_of(design)))


def test_contrasts_in_the_json_csv_and_markdown() -> None:
    rep = report(runs_of(varied_design(6)))
    data = rep.to_json_dict()
    assert data["format"] == FORMAT == 4
    first = data["contrasts"][0]
    assert set(first) >= {"kind", "fixed", "a", "b", "metric", "value", "ci", "tasks", "runs"}
    rows = [r for r in csv.DictReader(io.StringIO(report_csv(rep))) if r["table"] == "contrasts"]
    assert [r["metric"] for r in rows] == ["test_pass_rate", "mergeable_rate", "difference"]
    assert float(rows[1]["value"]) == pytest.approx(rep.contrasts[1].value)
    assert float(rows[1]["value_lo"]) == pytest.approx(rep.contrasts[1].ci[0], rel=1e-5)  # type: ignore[index]
    assert rows[1]["tasks"] == "6" and rows[1]["runs"] == "60"
    md = report_markdown(rep)
    assert md.index("## Contrasts") < md.index("## Per arm and model")
    assert "guided − base (model m)" in md
