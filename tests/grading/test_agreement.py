from __future__ import annotations

import pytest

from grading.report.agreement import cohen_kappa, judge_agreement


def test_kappa_of_two_judges_that_agree_beyond_chance() -> None:
    pairs = [("pass", "pass")] * 6 + [("fail", "fail")] * 2 + [("pass", "fail"), ("fail", "pass")]
    result = judge_agreement(pairs)
    assert (result.n, result.raw, result.undefined_reason) == (10, 0.8, None)
    # p_o = 0.8, p_e = 0.7 * 0.7 + 0.3 * 0.3 = 0.58: kappa = 0.22 / 0.42
    assert result.kappa == pytest.approx(0.22 / 0.42)


def test_perfect_and_opposite_judges() -> None:
    assert judge_agreement([("pass", "pass"), ("fail", "fail")]).kappa == pytest.approx(1.0)
    assert judge_agreement([("pass", "fail"), ("fail", "pass")]).kappa == pytest.approx(-1.0)


def test_kappa_is_undefined_when_a_judge_is_constant_or_nothing_was_compared() -> None:
    constant = judge_agreement([("pass", "pass"), ("pass", "fail")])
    assert constant.raw == 0.5 and constant.kappa is None
    assert constant.undefined_reason == "the primary judge gave 'pass' on all 2 items"
    one = cohen_kappa([(True, True)], "primary", "second", "runs")
    assert one.undefined_reason == "the primary judge gave 'pass' on the only run"  # never "all 1 runs"
    empty = judge_agreement([])
    assert (empty.n, empty.raw, empty.kappa) == (0, None, None)
    assert empty.undefined_reason == "no items judged by both judges"


def test_the_verdict_pairs_and_the_report_share_one_kappa() -> None:
    """One kappa: verdict pairs give what the boolean pairs give."""
    verdicts = [("pass", "pass"), ("pass", "fail"), ("fail", "fail"), ("fail", "pass"), ("pass", "pass")]
    booleans = [(a == "pass", b == "pass") for a, b in verdicts]
    assert judge_agreement(verdicts) == cohen_kappa(booleans, "primary", "second", "items")
