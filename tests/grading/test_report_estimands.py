"""What the report's rates and contrasts estimate (issue 31): each task counts once, intervals that cover and
never claim a precision the data do not have, contrasts over different task sets said so, Holm p-values."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

from grading.report.contrasts import FEW_TASKS
from grading.report.estimands import holm, no_spread_share, t_quantile, t_two_sided_p, task_mean
from grading.report.html import render_report_html
from grading.report.models import GradedRun
from grading.report.render import contrast_estimate, precision_text, report_markdown
from grading.report.warnings import warning_kind
from tests.grading.report_helpers import report, run

# Student's t 0.975 quantiles and two-sided p-values from printed tables.
T975 = {1: 12.7062047, 2: 4.30265273, 4: 2.77644511, 9: 2.26215716, 29: 2.04522964, 100: 1.98397152}


def _runs(design: dict[tuple[str, str], str], model: str = "m") -> list[GradedRun]:
    """(task, arm) -> outcomes of its runs: p passes the tests and is mergeable, f fails the tests."""
    names = {"p": "mergeable", "f": "tests_fail", "b": "blocker"}
    return [
        run(task, names[o], arm=arm, model=model, run=f"{task}/{arm}/{model}/{i}")
        for (task, arm), outcomes in design.items()
        for i, o in enumerate(outcomes)
    ]


def _contrast(rep, metric: str = "test_pass_rate"):  # type: ignore[no-untyped-def]
    [found] = [c for c in rep.contrasts if c.metric == metric and c.kind == "arm"]
    return found


def test_the_issue_repro_a_contrast_counts_each_task_once() -> None:
    # Ten tasks, no arm effect: easy tasks always pass, hard ones never, in both arms; arm b ran each easy
    # task 5 times and each hard one once, arm a the reverse. Pooled over runs, b − a was +0.667.
    design: dict[tuple[str, str], str] = {}
    for t in range(10):
        easy = t < 5
        design[(f"t{t}", "a")] = "p" if easy else "fffff"
        design[(f"t{t}", "b")] = "ppppp" if easy else "f"
    rep = report(_runs(design))
    for metric in ("test_pass_rate", "mergeable_rate"):
        c = _contrast(rep, metric)
        assert c.value == pytest.approx(0.0)
        # Every task's difference is 0: no spread, so an honest (not zero-width) interval around 0.
        assert c.ci is not None and c.ci[0] < 0 < c.ci[1]
        assert c.method == "no_spread"
        assert "within" not in precision_text(c)
    cells = {cell.arm: cell for cell in rep.cells}
    assert cells["a"].test_pass_rate.value == cells["b"].test_pass_rate.value == pytest.approx(0.5)


def test_a_tasks_weight_does_not_depend_on_its_run_count() -> None:
    rng = random.Random(11)
    for _ in range(20):
        design = {
            (f"t{t}", arm): "".join(rng.choice("pfb") for _ in range(rng.randint(1, 4)))
            for t in range(6)
            for arm in ("a", "b")
        }
        # The same outcomes, each task's runs repeated 1 to 4 times on each side: the same per-task rates.
        repeated = {key: outcomes * rng.randint(1, 4) for key, outcomes in design.items()}
        before, after = report(_runs(design)), report(_runs(repeated))
        for c1, c2 in zip(before.cells, after.cells, strict=True):
            for name in ("test_pass_rate", "mergeable_rate", "difference"):
                assert getattr(c1, name).value == pytest.approx(getattr(c2, name).value)
        for k1, k2 in zip(before.contrasts, after.contrasts, strict=True):
            assert k1.value == pytest.approx(k2.value)


def test_a_cell_rate_is_the_mean_of_its_tasks_rates_with_a_t_interval() -> None:
    design = {
        ("t0", "a"): "ppf",
        ("t1", "a"): "f",
        ("t2", "a"): "pppp",
        ("t3", "a"): "pf",
        ("t4", "a"): "ffp",
    }
    cell = report(_runs(design)).cells[0]
    rates = np.array([2 / 3, 0.0, 1.0, 0.5, 1 / 3])
    assert cell.test_pass_rate.value == pytest.approx(rates.mean())
    assert cell.test_pass_rate.method == "t"
    lo, hi = cell.test_pass_rate.ci  # type: ignore[misc]
    # The interval is centred on the mean, t with 4 degrees of freedom, its spread estimated with a quarter
    # task at 0 and at 1 beside the five (never narrower than the plain t interval).
    assert (lo + hi) / 2 == pytest.approx(rates.mean())
    plain = T975[4] * rates.std(ddof=1) / np.sqrt(5)
    assert (hi - lo) / 2 >= plain
    assert cell.test_pass_rate.se == pytest.approx((hi - lo) / 2 / T975[4])


def test_all_passes_give_an_interval_that_is_not_zero_width_and_not_called_precise() -> None:
    design = {(f"t{t}", arm): "ppp" for t in range(10) for arm in ("a", "b")}
    rep = report(_runs(design))
    cell = rep.cells[0].test_pass_rate
    assert cell.value == 1.0 and cell.method == "no_spread"
    assert cell.ci == pytest.approx((1 - no_spread_share(10), 1.0))
    assert cell.ci[0] < 0.75  # type: ignore[index]
    c = _contrast(rep)
    assert c.value == 0 and c.ci is not None and c.ci[1] - c.ci[0] > 0.5
    md = report_markdown(rep)
    assert "within ±5" not in md and "no spread between tasks" in md


def test_different_task_sets_are_said_and_few_shared_tasks_flagged() -> None:
    design: dict[tuple[str, str], str] = {}
    for t in range(8):
        design[(f"t{t}", "a")] = "ppff"
    for t in range(3, 12):
        design[(f"t{t}", "b")] = "pppf" if t % 2 else "pfff"
    rep = report(_runs(design))
    c = _contrast(rep)
    assert (c.tasks, c.tasks_a, c.tasks_b) == (5, 8, 9)
    assert c.few_tasks and FEW_TASKS == 10
    assert "5 shared tasks of 8 and 9" in contrast_estimate(c)
    [warning] = [w for w in rep.warnings if "shared tasks of" in w]
    assert "arm contrast 'b' − 'a'" in warning and "7 tasks only one side ran" in warning
    assert warning_kind(warning) == "task_sets"  # the page folds them when they come twice or more


def test_p_values_and_holm_within_each_family() -> None:
    rng = random.Random(5)
    design = {
        (f"t{t}", arm): "".join("p" if rng.random() < lift else "f" for _ in range(4))
        for t in range(12)
        for arm, lift in (("a", 0.3), ("b", 0.6), ("c", 0.5))
    }
    rep = report(_runs(design))
    family = [c for c in rep.contrasts if c.kind == "arm" and c.metric == "test_pass_rate"]
    assert len(family) == 3 and all(c.family_size == 3 for c in family)
    for c in family:
        assert c.p_value == pytest.approx(t_two_sided_p(c.value / c.se, c.tasks - 1))  # type: ignore[operator]
    # Holm by hand: sorted p-values times 3, 2, 1, made non-decreasing, capped at 1.
    ps = sorted(float(c.p_value or 0) for c in family)
    expected = np.minimum(1, np.maximum.accumulate([3 * ps[0], 2 * ps[1], ps[2]]))
    assert sorted(c.p_holm for c in family) == pytest.approx(expected)  # type: ignore[type-var]


def test_t_quantiles_and_p_values_against_tables() -> None:
    for df, q in T975.items():
        assert t_quantile(df) == pytest.approx(q, abs=1e-6)
        assert t_two_sided_p(q, df) == pytest.approx(0.05, abs=1e-7)
    assert t_two_sided_p(0.0, 7) == pytest.approx(1.0)
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    one = task_mean([0.4], (0.0, 1.0))
    assert one.ci is None and one.value == 0.4 and "one task" in (one.reason or "")


def test_the_coverage_study_holds_its_floor() -> None:
    # A small run of benchmarks/report_coverage.py (the report's methods only): at 5 and 10 tasks, 300 data
    # sets each, every cell and contrast figure covers its truth in at least 90% of them.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks.report_coverage import coverage

    table = coverage([5, 10], 300, 0)
    chosen = {k: v for k, v in table.items() if k[1] == "t, quarter tasks"}
    assert len(chosen) == 2 * 2 * 3
    assert min(lo for lo, _ in chosen.values()) >= 0.9


# --- the judge-error correction ----------------------------------------------------------------------------


def _judged_design(model: str, false_mergeable: int, tasks: int = 10, arm: str = "a") -> list[GradedRun]:
    """Per task 10 runs: 5 fail the tests; of the 5 the judge decides, 2 are truly mergeable (the judge
    says so) and 3 are not, ``false_mergeable`` of which the judge calls mergeable. A human labels every
    judged run (the review queue can label no other)."""
    runs = []
    for t in range(tasks):
        for i in range(10):
            name = f"{model}/t{t}/{i}"
            if i < 5:
                runs.append(run(f"t{t}", "tests_fail", run=name, arm=arm, model=model))
                continue
            truly = i < 7
            called = truly or i < 7 + false_mergeable
            runs.append(
                run(f"t{t}", "mergeable" if called else "blocker", run=name, arm=arm, model=model,
                    human_mergeable=truly)
            )  # fmt: skip
    return runs


def test_the_issue_repro_the_correction_corrects_only_what_the_judge_decided() -> None:
    # True mergeable rate 0.20 (2 of 10 runs per task), observed 0.30; labels on judged runs give Se 1 and
    # Sp 2/3. Rogan-Gladen over every measured run gave 0.000; on the judged runs' share it gives 0.20.
    rep = report(_judged_design("m", false_mergeable=1), bootstrap=1000)
    cell = rep.cells[0]
    assert cell.mergeable_rate.value == pytest.approx(0.3)
    assert cell.judged == 50
    assert rep.judge_accuracy.sensitivity == 1.0 and rep.judge_accuracy.specificity == pytest.approx(2 / 3)
    corrected = cell.corrected_mergeable_rate
    assert corrected is not None and corrected.value == pytest.approx(0.2)
    assert corrected.ci is not None and corrected.ci[0] <= 0.2 <= corrected.ci[1]


def test_labels_on_runs_the_tests_stopped_do_not_count_against_the_judge() -> None:
    runs = _judged_design("m", false_mergeable=1)
    # A human "labels" runs that failed the tests: not mergeable, as the outcome says; not the judge's call.
    stopped = [r.model_copy(update={"human_mergeable": False}) if not r.test_pass else r for r in runs]
    assert report(stopped).judge_accuracy == report(runs).judge_accuracy


def test_each_cell_is_corrected_with_its_own_specificity_when_its_labels_suffice() -> None:
    # Model m1's judge errs on 1 of 3 not-mergeable runs per task, m2's on 2 of 3: one pooled specificity
    # would over-correct one and under-correct the other. Both truly 0.20.
    runs = _judged_design("m1", false_mergeable=1) + _judged_design("m2", false_mergeable=2)
    rep = report(runs)
    for cell in rep.cells:
        assert cell.corrected_mergeable_rate is not None
        assert cell.corrected_mergeable_rate.value == pytest.approx(0.2)
        assert "this arm and model's 50 labelled runs" in (cell.corrected_basis or "")
    # With too few labels of its own (2 tasks: 10 labelled runs), a cell falls back on the pooled ones.
    few = report(_judged_design("m1", false_mergeable=1) + _judged_design("m2", 2, tasks=2))
    [small] = [c for c in few.cells if c.model == "m2"]
    assert "pooled" in (small.corrected_basis or "") and "has 10" in (small.corrected_basis or "")


def test_minimum_detectable_effect_and_tasks_to_detect_five_points() -> None:
    rng = random.Random(2)
    design = {
        (f"t{t}", arm): "".join("p" if rng.random() < lift else "f" for _ in range(5))
        for t in range(10)
        for arm, lift in (("a", 0.4), ("b", 0.55))
    }
    c = _contrast(report(_runs(design)))
    p = c.precision
    assert p is not None and p.minimum_detectable_effect is not None and p.tasks_to_detect is not None
    # By hand: (t_0.975 + t_0.80) with 9 degrees of freedom (printed tables) times the standard error.
    assert p.minimum_detectable_effect == pytest.approx((2.262157 + 0.883404) * c.se, rel=1e-5)
    # The least number of tasks whose detectable effect is 5 points, at this spread between tasks.
    sd = c.se * np.sqrt(10)

    def detectable(n: int) -> float:
        return float((t_quantile(n - 1) + t_quantile(n - 1, 0.6)) * sd / np.sqrt(n))

    assert detectable(p.tasks_to_detect) <= 0.05 < detectable(p.tasks_to_detect - 1)
    assert "detectable at 80% power" in precision_text(c)


def test_runs_left_out_of_a_rate_bound_it_per_cell() -> None:
    runs = [
        run("t1", "mergeable", run="a"),
        run("t1", "blocker", run="b"),
        run("t1", "grader_failure", run="c"),
        run("t1", "judge_failure", run="d"),
        run("t2", "mergeable", run="e"),
        run("t2", "tests_fail", run="f"),
        run("t3", "not_measured", run="g"),
    ]
    cell = report(runs).cells[0]
    # Per task over all its runs, then the mean over tasks: t1 1 of 4 (3 of 4 if the 2 left out were
    # mergeable), t2 1 of 2 either way, t3 0 of 1 (1 of 1).
    assert cell.mergeable_bounds == pytest.approx(((1 / 4 + 1 / 2 + 0) / 3, (3 / 4 + 1 / 2 + 1) / 3))
    assert "with the 3 runs left out" in report_markdown(report(runs))
    assert report([run("t1", "mergeable", run="x")]).cells[0].mergeable_bounds is None


def test_a_corrected_contrast_compares_the_corrected_rates() -> None:
    # Both arms truly 0.20; the judge errs on 1 of 3 not-mergeable runs per task in arm a, 2 of 3 in arm b,
    # so b looks 10 points better. Each arm has 50 labels of its own: corrected, no difference.
    runs = _judged_design("m", false_mergeable=1, arm="a") + _judged_design("m", false_mergeable=2, arm="b")
    rep = report(runs, bootstrap=500)
    assert _contrast(rep, "mergeable_rate").value == pytest.approx(0.1)
    [corrected] = rep.corrected_contrasts
    assert (corrected.kind, corrected.a, corrected.b, corrected.tasks) == ("arm", "a", "b", 10)
    assert corrected.value == pytest.approx(0.0, abs=1e-12)
    assert corrected.ci is not None and corrected.ci[0] <= 0 <= corrected.ci[1]
    assert "Judge-error-corrected contrasts" in report_markdown(rep)
    assert "b − a (model m)" in render_report_html(
        rep
    ) and "Judge-error-corrected contrasts" in render_report_html(rep)
    # Without labels enough for the correction there is no corrected contrast.
    unlabelled = [r.model_copy(update={"human_mergeable": None}) for r in runs]
    assert report(unlabelled).corrected_contrasts == []


def test_kappa_has_a_task_interval_and_ac1_speaks_where_kappa_cannot() -> None:
    from grading.report.agreement import cohen_kappa
    from tests.grading.report_helpers import judged

    rng = random.Random(4)
    runs = []
    for t in range(12):
        for i in range(4):
            first = rng.random() < 0.6
            second = first if rng.random() < 0.8 else not first
            verdict = {"B1": "pass" if first else "fail"}
            runs.append(
                run(f"t{t}", "mergeable" if first else "blocker", run=f"t{t}/{i}", primary=judged(verdict),
                    second=judged({"B1": "pass" if second else "fail"}, spec="openai:gpt-4o"))
            )  # fmt: skip
    a = report(runs, bootstrap=500).agreement.mergeable
    assert a.kappa is not None and a.kappa_ci is not None and a.kappa_ci[0] <= a.kappa <= a.kappa_ci[1]
    assert a.kappa_ci[1] - a.kappa_ci[0] > 0.05
    # One judge passed everything: κ is undefined, AC1 = (p_o − p_e) / (1 − p_e), p_e = 2π(1 − π).
    pairs = [(True, True)] * 9 + [(True, False)]
    undefined = cohen_kappa(pairs)
    pi = (1.0 + 0.9) / 2
    assert undefined.kappa is None
    assert undefined.ac1 == pytest.approx((0.9 - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi)))
