"""grading.report.build: the §7 statistics on fixed data, checked against independent computations."""

from __future__ import annotations

import itertools
import random
import re
from datetime import date
from fractions import Fraction
from typing import Any, cast

import pytest

from grading.judge.specs import model_family
from grading.report.agreement import cohen_kappa
from grading.report.build import build_report, judge_accuracy
from grading.report.models import GradedRun
from grading.report.stats import (
    MIN_LABELLED,
    Estimate,
    bootstrap_rates,
    corrected_rate,
    percentile,
    resample_sums,
    resample_tasks,
    rogan_gladen,
)
from grading.report.warnings import warning_kind
from tests.grading.report_helpers import PRIMARY, judged, report, run

SECOND = "openai:gpt-4o-2024-08-06"


# --- Cohen's κ -------------------------------------------------------------------------------------------


def table(both_pass: int, p_only: int, s_only: int, both_fail: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both_pass + [(True, False)] * p_only + [(False, True)] * s_only
        + [(False, False)] * both_fail
    )  # fmt: skip


@pytest.mark.parametrize(
    ("cells", "kappa", "raw"),
    [
        # po = 35/50 = .7; pe = .5*.6 + .5*.4 = .5; κ = (.7 - .5) / (1 - .5) = .4
        ((20, 5, 10, 15), 0.4, 0.7),
        # po = .8; pe = .5; κ = .6
        ((4, 1, 1, 4), 0.6, 0.8),
        # po = .5; pe = .5*.5 + .5*.5 = .5; κ = 0
        ((1, 1, 1, 1), 0.0, 0.5),
        # po = 0; pe = .5*.5*2 = .5; κ = -1
        ((0, 3, 3, 0), -1.0, 0.0),
    ],
)
def test_kappa_against_hand_computed_tables(
    cells: tuple[int, int, int, int], kappa: float, raw: float
) -> None:
    a = cohen_kappa(table(*cells))
    assert a.kappa == pytest.approx(kappa)
    assert a.raw == pytest.approx(raw)
    assert (a.n, a.undefined_reason) == (sum(cells), None)


def test_kappa_undefined_cases_say_why() -> None:
    none = cohen_kappa([])
    assert (none.kappa, none.raw, none.n) == (None, None, 0)
    assert none.undefined_reason == "no runs judged by both judges"
    # One judge constant: κ would be 0 whatever the raw agreement (here 4 of 5 agree).
    constant = cohen_kappa(table(4, 0, 0, 0) + table(0, 0, 1, 0), "primary", "second")
    assert (constant.kappa, constant.raw, constant.n) == (None, 0.8, 5)
    assert constant.undefined_reason == "the second judge gave 'pass' on all 5 runs"
    both = cohen_kappa(table(0, 0, 0, 3), "primary", "second")
    assert both.kappa is None and both.raw == 1.0
    assert both.undefined_reason == "the primary judge gave 'fail' on all 3 runs"


def test_agreement_pairs_only_runs_both_judges_decided() -> None:
    runs = []
    # The κ = .4 table on mergeable, as verdicts on the blocker B1 of runs that pass scope and integrity.
    for i, (p, s) in enumerate(table(20, 5, 10, 15)):
        outcome = "mergeable" if p else "blocker"
        runs.append(run(f"t{i % 10}", outcome, run=f"r{i}",
                        primary=judged({"B1": "pass" if p else "fail"}),
                        second=judged({"B1": "pass" if s else "fail"}, SECOND)))  # fmt: skip
    # Left out of the mergeable pairs: scope failed (both say not mergeable by construction), no second
    # judge, a second judge failure, a primary judge failure, tests failed (no judge called).
    runs.append(run("t0", "blocker", run="scope", checks_passed=False, primary=judged({"B1": "pass"}),
                    second=judged({"B1": "pass"}, SECOND)))  # fmt: skip
    runs.append(run("t0", "mergeable", run="alone"))
    runs.append(run("t0", "mergeable", run="sfail", second=judged({}, SECOND, failure="refused")))
    runs.append(run("t0", "judge_failure", run="pfail", primary=judged({}, failure="no reply"),
                    second=judged({"B1": "fail"}, SECOND)))  # fmt: skip
    runs.append(run("t0", "tests_fail", run="tf"))
    rep = report(runs)
    assert rep.agreement.mergeable.n == 50
    assert rep.agreement.mergeable.kappa == pytest.approx(0.4)
    # Per blocker item the scope-failed run counts (the judges did decide B1 there): one more agreeing pair.
    b1 = {k: v for k, v in rep.agreement.items.items() if k.endswith("/B1")}
    assert sum(a.n for a in b1.values()) == 51
    assert [d.run for d in rep.disagreements] == sorted(
        (f"r{i}" for i, (p, s) in enumerate(table(20, 5, 10, 15)) if p != s),
        key=lambda r: (int(r[1:]) % 10, r),
    )
    assert {(d.primary, d.second) for d in rep.disagreements} == {("pass", "fail"), ("fail", "pass")}


def test_item_agreement_is_per_task_and_includes_non_blocker_disagreements() -> None:
    runs = [
        run("t1", "mergeable", run="x", primary=judged({"B1": "pass"}, non_blockers={"N1": "pass"}),
            second=judged({"B1": "pass"}, SECOND, non_blockers={"N1": "fail"})),
        run("t2", "blocker", run="y", primary=judged({"B1": "fail"}), second=judged({"B1": "fail"}, SECOND)),
    ]  # fmt: skip
    rep = report(runs)
    assert set(rep.agreement.items) == {"t1/B1", "t2/B1"}  # B1 of t1 and B1 of t2 are different criteria
    assert [(d.run, d.item, d.primary, d.second) for d in rep.disagreements] == [("x", "N1", "pass", "fail")]


# --- bootstrap -------------------------------------------------------------------------------------------


def test_bootstrap_interval_matches_the_exact_bootstrap_distribution() -> None:
    # Per task (measured, test-pass, mergeable). With 5 tasks the bootstrap distribution is exact by
    # enumerating all 5^5 ordered draws; the 20,000-replicate percentile bounds must fall between its
    # 1.5% and 3.5% (and 96.5% and 98.5%) quantiles.
    tasks = [(2, 2, 2), (2, 1, 0), (1, 1, 1), (3, 3, 1), (2, 2, 1)]
    mass: dict[Fraction, Fraction] = {}
    for draw in itertools.product(range(5), repeat=5):
        n = sum(tasks[i][0] for i in draw)
        rate = Fraction(sum(tasks[i][2] for i in draw), n)
        mass[rate] = mass.get(rate, Fraction(0)) + Fraction(1, 5**5)

    def exact_quantile(q: float) -> float:
        cum = Fraction(0)
        for rate in sorted(mass):
            cum += mass[rate]
            if cum >= Fraction(q).limit_denominator(1000):
                return float(rate)
        raise AssertionError

    _, merged, _ = bootstrap_rates(tasks, 20_000, random.Random(7))
    assert merged.value == pytest.approx(5 / 10)
    assert merged.ci is not None
    lo, hi = merged.ci
    assert exact_quantile(0.015) <= lo <= exact_quantile(0.035)
    assert exact_quantile(0.965) <= hi <= exact_quantile(0.985)


def _width(e: Estimate) -> float:
    assert e.ci is not None
    return e.ci[1] - e.ci[0]


def test_interval_contains_the_estimate_and_narrows_as_tasks_are_added() -> None:
    rng = random.Random(1)
    for _ in range(40):
        k = rng.randint(2, 12)
        tasks = []
        for _ in range(k):
            n = rng.randint(1, 6)
            passed = rng.randint(0, n)
            tasks.append((n, passed, rng.randint(0, passed)))
        for e in bootstrap_rates(tasks, 300, random.Random(rng.random())):
            assert e.ci is not None and e.value is not None
            assert e.ci[0] <= e.value <= e.ci[1]
    few = [(3, 3, 2), (3, 2, 0), (3, 3, 3), (3, 1, 1), (3, 3, 1), (3, 2, 2)]
    widths = [_width(bootstrap_rates(few * m, 2000, random.Random(0))[1]) for m in (1, 4, 16)]
    # Quadrupling the tasks halves the width (1/sqrt(4)); allow for bootstrap noise.
    assert 0.35 < widths[1] / widths[0] < 0.65
    assert 0.35 < widths[2] / widths[1] < 0.65


def test_interval_covers_the_true_rate_about_95_percent_of_the_time() -> None:
    # 300 simulated reports of 20 tasks x 4 runs; each task has its own mergeable probability, drawn from
    # Beta(2, 3), so the true rate is 0.4 and runs of one task are correlated, as real tasks are.
    covered = 0
    for seed in range(300):
        rng = random.Random(seed)
        tasks = []
        for _ in range(20):
            q = rng.betavariate(2, 3)
            tasks.append((4, 4, sum(rng.random() < q for _ in range(4))))
        _, merged, _ = bootstrap_rates(tasks, 500, random.Random(seed + 10_000))
        assert merged.ci is not None
        covered += merged.ci[0] <= 0.4 <= merged.ci[1]
    assert 0.9 <= covered / 300 <= 0.99


def test_bootstrap_resamples_tasks_not_runs() -> None:
    # Every run of a task has the same outcome. Ten runs per task say no more than one run per task, so
    # the interval must not narrow (a run-level bootstrap would narrow it by sqrt(10)).
    one = [(1, 1, 1), (1, 1, 0), (1, 0, 0), (1, 1, 1), (1, 1, 0), (1, 1, 1)]
    ten = [(10 * n, 10 * p, 10 * m) for n, p, m in one]
    a = bootstrap_rates(one, 1000, random.Random(3))
    b = bootstrap_rates(ten, 1000, random.Random(3))
    assert [e.ci for e in a] == [e.ci for e in b]


def test_the_difference_is_paired() -> None:
    # Test-pass and mergeable move together across tasks, so the difference varies less than either rate.
    tasks = [(4, 4, 3), (4, 1, 0), (4, 4, 4), (4, 0, 0), (4, 3, 2), (4, 2, 1)]
    test_pass, mergeable, difference = bootstrap_rates(tasks, 2000, random.Random(0))
    assert difference.value == pytest.approx(test_pass.value - mergeable.value)  # type: ignore[operator]
    assert _width(difference) < _width(test_pass) / 2


def _resample_loop(sums: list[tuple[int, ...]], replicates: int, rng: random.Random) -> list[tuple[int, ...]]:
    # The bootstrap written plainly, as it was before it was vectorised: one random.choices per replicate.
    return [tuple(map(sum, zip(*rng.choices(sums, k=len(sums)), strict=True))) for _ in range(replicates)]


@pytest.mark.parametrize(
    ("tasks", "replicates", "columns", "values"),
    [
        (2, 1, 3, (0, 9)),
        (7, 50, 3, (0, 9)),
        (500, 40, 3, (0, 9)),  # replicates drawn in more than one block
        (500, 40, 6, (0, 9)),  # a contrast's six columns, packed two int64s
        (13, 30, 4, (0, 9)),
        (20_000, 2, 3, (0, 1)),  # more tasks than a block's draws: a replicate per block
        (13, 30, 4, (-5, 9)),  # a negative column cannot share an int64
        (13, 30, 3, (0, 2**59)),  # nor one whose sums need the whole of one
    ],
)
def test_the_vectorised_resample_draws_what_random_choices_draws(
    tasks: int, replicates: int, columns: int, values: tuple[int, int]
) -> None:
    # numpy draws from the Python generator's own state: the same replicates as the plain loop, bit for
    # bit, and the generator is left where the loop leaves it (the corrected rate draws on after it).
    data = random.Random(tasks)
    sums = [tuple(data.randint(*values) for _ in range(columns)) for _ in range(tasks)]
    for seed in ("0\x1fcells\x1fa\x1fm", "7"):
        vectorised, plain = random.Random(seed), random.Random(seed)
        plain.random()  # a generator part-way through its block of 624 words
        vectorised.random()
        assert [tuple(r) for r in resample_sums(sums, replicates, vectorised).tolist()] == _resample_loop(
            sums, replicates, plain
        )
        assert vectorised.getstate() == plain.getstate()
        assert vectorised.random() == plain.random()


def test_a_task_bootstrap_needs_two_tasks_and_draws_nothing_otherwise() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    assert len(resample_tasks([(3, 2, 1)], 100, rng)) == 0
    assert rng.getstate() == state
    assert resample_tasks([(3, 2, 1), (2, 2, 2)], 100, rng).shape == (100, 3)


def test_a_report_is_reproducible_and_seeded() -> None:
    # Tasks of 1-4 runs, so that the ratio takes many values and two seeds give different bounds.
    runs = [
        run(f"t{i}", "mergeable" if (i + j) % 3 else "blocker", run=f"r{i}-{j}")
        for i in range(9)
        for j in range(1 + i % 4)
    ]
    first, again = build_report(runs, seed=5), build_report(list(reversed(runs)), seed=5)
    assert first.cells[0].mergeable_rate == again.cells[0].mergeable_rate
    # The rates' t intervals draw nothing: the seed moves only the corrected rate's bootstrap.
    assert build_report(runs, seed=6).cells[0].mergeable_rate == first.cells[0].mergeable_rate
    # A cell's interval does not depend on the other cells in the report.
    other = [run(f"t{i}", "blocker", run=f"o{i}", arm="b") for i in range(4)]
    assert build_report(runs + other, seed=5).cells[0] == first.cells[0]


def test_percentile_interpolates_between_order_statistics() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 0.0) == 0.0
    assert percentile(values, 0.5) == 2.0
    assert percentile(values, 0.1) == pytest.approx(0.4)
    assert percentile(values, 1.0) == 4.0


def test_one_task_gives_no_interval_and_says_so() -> None:
    rep = report([run("t1", "mergeable", run="a"), run("t1", "blocker", run="b")])
    cell = rep.cells[0]
    assert (cell.mergeable_rate.value, cell.mergeable_rate.ci) == (0.5, None)
    assert "one task only" in (cell.mergeable_rate.interval_reason or "")
    assert any("one task only" in w for w in rep.warnings)


# --- accounting ------------------------------------------------------------------------------------------


def test_not_measured_and_failures_are_counted_apart_and_left_out_of_the_rates() -> None:
    runs = [
        run("t1", "mergeable", run="m1", merge_score=0.5),
        run("t1", "mergeable", run="m2", merge_score=1.0),
        run("t2", "blocker", run="b"),
        run("t2", "tests_fail", run="f"),
        run("t3", "not_measured", run="n1"),
        run("t3", "not_measured", run="n2"),
        run("t2", "grader_failure", run="g"),
        run("t1", "judge_failure", run="j"),
    ]
    cell = report(runs).cells[0]
    assert (cell.runs, cell.tasks, cell.measured) == (8, 3, 4)
    assert (cell.not_measured, cell.grader_failures, cell.judge_failures) == (2, 1, 1)
    # Over the 4 measured runs: 3 passed the tests, 2 are mergeable.
    assert cell.test_pass_rate.value == pytest.approx(3 / 4)
    assert cell.mergeable_rate.value == pytest.approx(2 / 4)
    assert cell.difference.value == pytest.approx(1 / 4)
    assert cell.mean_merge_score == pytest.approx(0.75)  # among mergeable runs only


def test_a_cell_with_nothing_measured_has_no_rates() -> None:
    rep = report([run("t1", "not_measured", run="n"), run("t2", "grader_failure", run="g")])
    cell = rep.cells[0]
    assert cell.mergeable_rate.value is cell.test_pass_rate.value is None
    assert cell.mergeable_rate.ci is cell.test_pass_rate.ci is None
    assert cell.mean_merge_score is None
    assert rep.warnings[0].startswith("1 run not measured (no rubric.json)")
    assert not any(re.search("measured runs?; use at least", w) for w in rep.warnings if "'t1'" in w)


def test_failed_blocker_histogram_counts_runs_the_primary_judge_decided() -> None:
    runs = [
        run("t1", "blocker", run="a", primary=judged({"B1": "fail", "B2": "fail"})),
        run("t1", "blocker", run="b", primary=judged({"B1": "fail", "B2": "pass"})),
        run("t1", "mergeable", run="c"),
        run("t1", "tests_fail", run="d"),
        run("t1", "judge_failure", run="e", primary=judged({}, failure="no reply")),
    ]
    [row] = report(runs).tasks
    assert (row.task, row.runs, row.judged, row.failed_blockers) == ("t1", 5, 3, {"B1": 2, "B2": 1})


def test_numeric_grade_metrics_are_averaged_per_cell() -> None:
    runs = [
        run("t1", "mergeable", run="a", metrics={"own_tests_fail_on_base": 1.0, "tests_passed": 10.0}),
        run("t2", "blocker", run="b", metrics={"own_tests_fail_on_base": 0.0}),
        run("t3", "grader_failure", run="c", metrics={"own_tests_fail_on_base": 7.0}),  # not trusted
    ]
    metrics = report(runs).cells[0].metrics
    assert metrics["own_tests_fail_on_base"].mean == pytest.approx(0.5)
    assert metrics["own_tests_fail_on_base"].runs == 2
    assert (metrics["tests_passed"].mean, metrics["tests_passed"].runs) == (10.0, 1)


def test_provisional_marks_a_cell_with_any_run_not_known_to_be_admitted() -> None:
    admitted = [run(f"t{i}", run=f"a{i}", arm="admitted", provisional=False) for i in range(3)]
    draft = [run("t1", run="d", arm="draft", provisional=True), run("t2", run="d2", arm="draft")]
    unknown = [run("t1", run="u", arm="old", provisional=None)]
    rep = report(admitted + draft + unknown)
    assert {c.arm: c.provisional for c in rep.cells} == {"admitted": False, "draft": True, "old": True}
    assert "1 run does not record whether their rubric was admitted: treated as provisional" in rep.warnings


def test_repeat_agreement_compares_a_regrade_with_the_verdicts_held_before() -> None:
    regraded = judged({"B1": "pass", "B2": "fail"}, non_blockers={"N1": "pass"},
                      previous={"B1": "pass", "B2": "pass", "N1": "pass"})  # fmt: skip
    runs = [run("t1", "blocker", run="a", primary=regraded), run("t2", "mergeable", run="b")]
    rep = report(runs)
    assert rep.repeat_agreement is not None
    assert (rep.repeat_agreement.pairs, rep.repeat_agreement.items, rep.repeat_agreement.agreeing) == (
        1,
        3,
        2,
    )
    assert report([run("t2", "mergeable", run="b")]).repeat_agreement is None


# --- splits ----------------------------------------------------------------------------------------------


def test_prompt_style_and_contamination_splits() -> None:
    runs = [
        run("old", run="o1", prompt_style="spec", base_date=date(2025, 1, 1)),
        run("edge", run="e1", prompt_style="spec", base_date=date(2025, 6, 1), outcome="blocker"),
        run("new", run="n1", prompt_style="issue", base_date=date(2025, 9, 1)),
        run("undated", run="u1", outcome="blocker"),
        run("new", run="x", model="unlisted", base_date=date(2025, 9, 1)),
    ]
    rep = report(runs, cutoffs={"m": date(2025, 6, 1)})
    styles = [(c.model, c.prompt_style, c.runs) for c in rep.by_prompt_style]
    assert styles == [("m", "issue", 1), ("m", "spec", 2), ("m", None, 1), ("unlisted", None, 1)]
    # On the cutoff day counts as before: the fix may be in the training data.
    splits = [(c.model, c.split, c.runs, c.mergeable_rate.value) for c in rep.by_contamination]
    assert splits == [("m", "before_cutoff", 2, 0.5), ("m", "after_cutoff", 1, 1.0), ("m", "unknown", 1, 0.0),
                      ("unlisted", "unknown", 1, 1.0)]  # fmt: skip
    assert all(c.prompt_style is None for c in rep.by_contamination)
    assert report(runs).by_contamination == []


# --- judge error correction ------------------------------------------------------------------------------


def test_rogan_gladen_on_known_values() -> None:
    assert rogan_gladen(0.4, 0.8, 0.8) == pytest.approx(1 / 3)  # (.4 + .8 - 1) / (.8 + .8 - 1)
    assert rogan_gladen(0.5, 0.9, 0.7) == pytest.approx(0.2 / 0.6)
    assert rogan_gladen(0.1, 0.8, 0.8) == 0.0  # below the false-positive rate: clipped
    assert rogan_gladen(0.95, 0.8, 0.8) == 1.0
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # a coin: nothing to correct


def _labelled_cell() -> list[GradedRun]:
    """30 runs over 10 tasks, 12 mergeable (rate .4); 25 labelled by a human:
    judge mergeable & human mergeable 8, judge not & human mergeable 2 (Se = 8/10),
    judge not & human not 12, judge mergeable & human not 3 (Sp = 12/15)."""
    outcomes = [True] * 12 + [False] * 18
    human: list[bool | None] = [True] * 8 + [False] * 3 + [None] + [True] * 2 + [False] * 12 + [None] * 4
    return [
        run(f"t{i % 10}", "mergeable" if m else "blocker", run=f"r{i}", human_mergeable=h)
        for i, (m, h) in enumerate(zip(outcomes, human, strict=True))
    ]


def test_corrected_rate_from_a_known_confusion_matrix() -> None:
    rep = report(_labelled_cell(), bootstrap=1000)
    acc = rep.judge_accuracy
    assert acc.labelled == 25
    assert acc.sensitivity == pytest.approx(0.8) and acc.specificity == pytest.approx(0.8)
    assert acc.undefined_reason is None
    corrected = rep.cells[0].corrected_mergeable_rate
    assert corrected is not None and corrected.value == pytest.approx(1 / 3)
    assert rep.cells[0].mergeable_rate.value == pytest.approx(0.4)
    assert corrected.ci is not None
    assert 0.0 <= corrected.ci[0] <= 1 / 3 <= corrected.ci[1] <= 1.0
    # The uncertainty of Se and Sp widens it beyond the raw rate's interval.
    assert _width(corrected) > _width(rep.cells[0].mergeable_rate)


def _corrected_loop(
    tasks: list[tuple[int, int, int]], labels: list[tuple[int, int, int, int]], replicates: int, seed: str
) -> tuple[float, float] | None:
    # The corrected rate's interval written plainly: per replicate, resample the cell's tasks, then the
    # labelled tasks, and correct with that replicate's sensitivity and specificity where they exist.
    rng = random.Random(seed)
    cells = [tuple(map(sum, zip(*rng.choices(tasks, k=len(tasks)), strict=True))) for _ in range(replicates)]
    draws = []
    for n, _, merged in cells:
        tp, pos, tn, neg = map(sum, zip(*rng.choices(labels, k=len(labels)), strict=True))
        if pos and neg and (value := rogan_gladen(merged / n, tp / pos, tn / neg)) is not None:
            draws.append(value)
    if not draws:
        return None
    draws.sort()
    return percentile(draws, 0.025), percentile(draws, 0.975)


@pytest.mark.parametrize("seed", range(6))
def test_the_corrected_rate_interval_is_the_plain_computation(seed: int) -> None:
    # Few labelled tasks, so that some resamples hold labels of one side only or a judge no better than
    # chance, and are left out: the vectorised computation must leave out the same ones.
    data = random.Random(seed)
    tasks = [(n := data.randint(1, 6), p := data.randint(0, n), data.randint(0, p)) for _ in range(12)]
    labels = []
    for _ in range(4):
        pos, neg = data.randint(0, 3), data.randint(0, 3)
        labels.append((data.randint(0, pos), pos, data.randint(0, neg), neg))
    accuracy, _ = judge_accuracy([])
    accuracy = accuracy.model_copy(update={"sensitivity": 0.8, "specificity": 0.75, "undefined_reason": None})
    rng = random.Random(str(seed))
    replicates = resample_tasks(tasks, 300, rng)
    estimate = corrected_rate(tasks, accuracy, labels, replicates, rng)
    expected = _corrected_loop(tasks, labels, 300, str(seed))
    assert estimate is not None and estimate.value is not None
    if expected is None:
        assert estimate.ci is None
    else:
        assert estimate.ci == (min(estimate.value, expected[0]), max(estimate.value, expected[1]))


def test_fewer_than_twenty_labels_say_how_many_more() -> None:
    runs = _labelled_cell()
    dropped = 0
    for i, r in enumerate(runs):
        if r.human_mergeable is not None and dropped < 25 - (MIN_LABELLED - 1):
            runs[i] = r.model_copy(update={"human_mergeable": None})
            dropped += 1
    rep = report(runs)
    assert rep.judge_accuracy.labelled == 19
    assert rep.judge_accuracy.sensitivity is None
    assert rep.judge_accuracy.undefined_reason == "19 labelled runs; at least 20 are needed (1 more)"
    assert rep.cells[0].corrected_mergeable_rate is None
    assert "no judge-error-corrected rate: 19 labelled runs; at least 20 are needed (1 more)" in rep.warnings


def test_labels_of_one_side_only_cannot_give_sensitivity_and_specificity() -> None:
    runs = [run(f"t{i}", run=f"r{i}", human_mergeable=True) for i in range(20)]
    acc = report(runs).judge_accuracy
    assert acc.sensitivity is None
    assert acc.undefined_reason == (
        "no labelled run is not mergeable by the human verdict: sensitivity and specificity need both"
    )


# --- warnings --------------------------------------------------------------------------------------------


def test_repetition_warnings() -> None:
    one_arm = [run("t1", run=f"a{i}") for i in range(2)] + [run("t2", run=f"b{i}") for i in range(3)]
    warnings = report(one_arm).warnings
    assert (
        "task 't1', arm 'a', model 'm': 2 measured runs; use at least 3 (mergeable rates spread)" in warnings
    )
    assert not any("'t2'" in w for w in warnings)
    two_arms = one_arm + [run("t2", run=f"c{i}", arm="b") for i in range(5)]
    warnings = report(two_arms).warnings
    assert (
        "task 't2', arm 'a', model 'm': 3 measured runs; use at least 5 (two arms are compared)" in warnings
    )
    assert not any("arm 'b'" in w and "measured runs" in w for w in warnings)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-opus-4-6", "anthropic"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),
        ("gpt-5.1-codex", "openai"),
        ("o3-2025-04-16", "openai"),
        ("gemini-2.5-pro", "google"),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen"),
        ("example-model-a", None),
        ("coolo3model", None),
    ],
)
def test_model_family_names_the_vendor(model: str, expected: str | None) -> None:
    assert model_family(model) == expected


def test_self_preference_names_the_judge_and_the_model() -> None:
    runs = [
        run("t1", run="a", model="claude-opus-4-6", second=judged({"B1": "pass"}, SECOND)),
        run("t1", run="b", model="gpt-5.1-codex", second=judged({"B1": "pass"}, SECOND)),
        run("t1", run="c", model="example-model-a", second=judged({"B1": "pass"}, SECOND)),
    ]
    warnings = [w for w in report(runs).warnings if w.startswith("self-preference")]
    assert warnings == [
        f"self-preference: the primary judge {PRIMARY} (anthropic) judges runs of claude-opus-4-6 "
        "(anthropic), a model of its own vendor",
        f"self-preference: the second judge {SECOND} (openai) judges runs of gpt-5.1-codex (openai), "
        "a model of its own vendor",
    ]


def test_each_repeated_warning_has_its_kind_and_the_rest_none() -> None:
    # One task, two arms and two models, two runs each: a repetition warning per task, arm and model,
    # a one-task warning per cell, self-preference for the Claude runs; the scripted judge is said once.
    scripted = judged({"B1": "pass"}, "scripted:judge.json", scripted=True)
    runs = [
        run(
            "t1",
            run=f"{arm}{model}{i}",
            arm=arm,
            model=model,
            **cast("dict[str, Any]", {"primary": scripted} if i else {}),
        )
        for arm in ("a", "b")
        for model in ("claude-opus-4-6", "m")
        for i in range(2)
    ]
    warnings = report(runs).warnings
    kinds = [warning_kind(w) for w in warnings]
    assert kinds.count("repetitions") == 4
    assert kinds.count("one_task") == 4
    assert kinds.count("self_preference") == 1
    for warning, kind in zip(warnings, kinds, strict=True):
        assert (kind == "repetitions") == bool(re.search("measured runs?; use at least", warning))
        assert (kind == "one_task") == ("one task only" in warning)
        assert (kind == "self_preference") == warning.startswith("self-preference")
    assert warning_kind("verdicts from the scripted judge (a deterministic stand-in for tests and demos) "
                        "are in this report") is None  # fmt: skip


def test_a_recorded_judge_family_wins_and_the_scripted_judge_has_none() -> None:
    # An OpenAI-compatible server serving a Claude-family model: the recorded family decides.
    served = judged({"B1": "pass"}, "openai:some-proxy-model-1.0", family="claude")
    scripted = judged({"B1": "pass"}, "scripted:judge.json", scripted=True)
    rep = report([run("t1", run="a", model="claude-opus-4-6", primary=served),
                  run("t2", run="b", model="claude-opus-4-6", primary=scripted)])  # fmt: skip
    assert [w for w in rep.warnings if w.startswith("self-preference")] == [
        "self-preference: the primary judge openai:some-proxy-model-1.0 (anthropic) judges runs of "
        "claude-opus-4-6 (anthropic), a model of its own vendor"
    ]
    assert [(j.judge, j.scripted) for j in rep.judges] == [
        ("openai:some-proxy-model-1.0", False), ("scripted:judge.json", True)
    ]  # fmt: skip
    assert any("scripted judge" in w for w in rep.warnings)
    assert any(w.startswith("more than one primary judge") for w in rep.warnings)


def test_graded_run_refuses_a_status_its_mergeable_contradicts() -> None:
    with pytest.raises(ValueError, match="contradicts status"):
        GradedRun(run="r", task="t", status="not_measured", test_pass=None, mergeable=False)
    with pytest.raises(ValueError, match="test_pass"):
        GradedRun(run="r", task="t", status="mergeable", test_pass=None, mergeable=True)
    with pytest.raises(ValueError, match="passed the tests"):
        GradedRun(run="r", task="t", status="mergeable", test_pass=False, mergeable=True)
