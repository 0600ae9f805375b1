"""The report from sums (grading/report/sums.py): summing runs in groups of identical runs, in any order,
gives the report the runs give one by one, and means do not depend on the order of their values."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from grading.report.build import build_report, report_from_sums
from grading.report.models import GradedRun, JudgeVerdicts
from grading.report.sums import JudgeCost, PartSums, ReportSums, VerdictGroup, run_disagreements, summarise
from tests.grading.report_helpers import judged, run

SECOND = "openai:gpt-4.1"


def _runs() -> list[GradedRun]:
    """Runs of three tasks, two arms and two models with every outcome, metrics whose float sums depend on
    their order, two judges that disagree on some items, costs and human labels."""
    rng = random.Random(3)
    runs = []
    for i in range(160):
        outcome = rng.choice(["mergeable", "blocker", "tests_fail", "judge_failure", "grader_failure"])
        kw: dict[str, Any] = {
            "arm": rng.choice(["plain", "guidance"]),
            "model": rng.choice(["m1", "m2"]),
            "metrics": {"tests_added": rng.choice([0.1, 0.2, 0.3, 0.7])},
            "flags": {"own_tests_fail_on_base": rng.random() < 0.5},
            "integrity_not_measured": ["test_cases"] if i % 7 == 0 else [],
        }
        if outcome == "mergeable":
            kw["merge_score"] = rng.choice([0.1, 0.2, 0.3, 0.6])
        if outcome in ("mergeable", "blocker"):
            first = "pass" if outcome == "mergeable" else "fail"
            kw["primary"] = judged({"B1": first}, non_blockers={"N1": "pass"}, cost_usd=0.01 * (i % 3))
            kw["second"] = judged(
                {"B1": rng.choice(["pass", "fail"])},
                spec=SECOND,
                non_blockers={"N1": rng.choice(["pass", "fail"])},
            )
            if rng.random() < 0.6:
                kw["human_mergeable"] = rng.random() < 0.5
        runs.append(run(f"t{i % 3}", outcome, run=f"r{i:03}", **kw))
    return runs


def _grouped(runs: list[GradedRun]) -> ReportSums:
    """The runs summed the way the web app sums its rows: identical outcomes in one call with their count,
    identical verdicts in one group with their summed costs."""
    parts: dict[tuple[Any, ...], PartSums] = {}
    outcomes: Counter[tuple[Any, ...]] = Counter()
    metrics: Counter[tuple[Any, ...]] = Counter()
    for r in runs:
        part = (r.task, r.arm, r.model, r.prompt_style)
        parts.setdefault(part, PartSums(*part, base_date=r.base_date))
        unmeasured = tuple(r.integrity_not_measured)
        outcomes[(part, r.status, r.test_pass, r.mergeable, r.provisional, r.merge_score, unmeasured)] += 1
        if r.status != "grader_failure":
            metrics[(part, tuple(r.metrics.items()), tuple(r.flags.items()))] += 1
    for (key, status, passed, mergeable, provisional, score, unmeasured), n in outcomes.items():
        parts[key].add(
            n, status=status, test_pass=passed, mergeable=mergeable, provisional=provisional,
            merge_score=score, integrity_not_measured=unmeasured,
        )  # fmt: skip
    for (key, numeric, flags), n in metrics.items():
        parts[key].add_metrics(n, dict(numeric), dict(flags))
    groups: dict[tuple[Any, ...], VerdictGroup] = {}
    for r in runs:
        texts = tuple(j.model_dump_json(exclude={"cost_usd"}) if j else None for j in (r.primary, r.second))
        key = (r.task, r.test_pass, r.checks_passed, texts)
        group = groups.get(key)
        if group is None:
            group = groups[key] = VerdictGroup(
                r.task, r.test_pass, r.checks_passed, r.primary, r.second, runs=0
            )
        group.runs += 1
        for cost, judge in ((group.primary_cost, r.primary), (group.second_cost, r.second)):
            cost.cost_usd += judge.cost_usd if judge else 0.0
    disagreements = [
        d for r in runs for d in run_disagreements(r.run, r.task, r.test_pass, r.primary, r.second)
    ]
    labelled = [r for r in runs if r.human_mergeable is not None and r.mergeable is not None]
    return ReportSums(list(parts.values()), list(groups.values()), disagreements, labelled)


def test_runs_summed_in_groups_give_the_report_of_the_runs() -> None:
    runs = _runs()
    expected = build_report(runs, bootstrap=300).to_json_dict()
    assert expected["judges"][0]["cost_usd"] > 0
    sums = _grouped(runs)
    assert len(sums.verdicts) < len(runs) / 4  # the groups do hold several runs each
    got = report_from_sums(sums, bootstrap=300).to_json_dict()
    # Costs are float sums, which the grouping adds in another order (the database's order is its own).
    for judge in got["judges"]:
        want = next(j for j in expected["judges"] if j["role"] == judge["role"])
        assert judge.pop("cost_usd") == pytest.approx(want.pop("cost_usd"), rel=1e-12)
    assert got == expected
    # The data exercises every part of the report.
    assert expected["disagreements"] and expected["agreement"]["items"] and expected["contrasts"]
    assert expected["judge_accuracy"]["labelled"] >= 20
    assert any(c["integrity_not_measured_runs"] for c in expected["cells"])


def test_the_report_does_not_depend_on_the_order_of_the_runs() -> None:
    runs = _runs()
    shuffled = runs[:]
    random.Random(1).shuffle(shuffled)
    got, expected = build_report(shuffled, bootstrap=300), build_report(runs, bootstrap=300)
    # But for the judges' costs, float sums (the database adds them in an order of its own).
    assert [j.cost_usd for j in got.judges] == pytest.approx([j.cost_usd for j in expected.judges], rel=1e-12)
    assert got.model_dump(exclude={"judges"}) == expected.model_dump(exclude={"judges"})


def test_a_mean_is_of_the_exact_sum_of_its_values() -> None:
    # In floats, 0.1 + 0.2 + 0.3 is 0.6000000000000001 and 0.3 + 0.2 + 0.1 is 0.6: the mean would depend
    # on the order the runs came in. The exact sum is 0.6 either way.
    for scores in ([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]):
        runs = [
            run("t1", "mergeable", run=f"r{i}", merge_score=s, metrics={"x": s}) for i, s in enumerate(scores)
        ]
        cell = build_report(runs, bootstrap=0).cells[0]
        assert cell.mean_merge_score == 0.6 / 3
        assert cell.metrics["x"].mean == 0.6 / 3


def test_costs_are_the_groups_not_the_verdicts() -> None:
    primary = JudgeVerdicts(judge="anthropic:claude-x", blockers={"B1": "pass"}, cost_usd=9.0)
    group = VerdictGroup(
        "t1", True, True, primary, None, runs=4, primary_cost=JudgeCost(cost_usd=0.5, tree_cost_usd=0.25)
    )
    part = PartSums("t1", "a", "m", None)
    part.add(4, status="mergeable", test_pass=True, mergeable=True, provisional=False, merge_score=1.0)
    judges = report_from_sums(ReportSums([part], [group], [], []), bootstrap=0).judges
    assert [(j.runs, j.cost_usd, j.tree_cost_usd) for j in judges] == [(4, 0.5, 0.25)]


def test_summarise_keeps_one_part_per_task_arm_model_and_style() -> None:
    runs = [run("t1", "mergeable", run="a"), run("t1", "blocker", run="b"), run("t2", "tests_fail", run="c")]
    sums = summarise(runs)
    assert sorted((p.task, p.runs, p.measured, p.passed, p.merged) for p in sums.parts) == [
        ("t1", 2, 2, 2, 1),
        ("t2", 1, 1, 0, 0),
    ]
