from __future__ import annotations

import pytest

from grading.agreement import judge_agreement


def test_kappa_of_two_judges_that_agree_beyond_chance() -> None:
    pairs = [("pass", "pass")] * 6 + [("fail", "fail")] * 2 + [("pass", "fail"), ("fail", "pass")]
    result = judge_agreement(pairs)  # type: ignore[arg-type]
    assert (result.pairs, result.agreeing, result.raw) == (10, 8, 0.8)
    # p_o = 0.8, p_e = 0.7 * 0.7 + 0.3 * 0.3 = 0.58: kappa = 0.22 / 0.42
    assert result.kappa == pytest.approx(0.22 / 0.42)


def test_perfect_and_opposite_judges() -> None:
    assert judge_agreement([("pass", "pass"), ("fail", "fail")]).kappa == pytest.approx(1.0)
    assert judge_agreement([("pass", "fail"), ("fail", "pass")]).kappa == pytest.approx(-1.0)


def test_kappa_is_undefined_when_a_judge_is_constant_or_nothing_was_compared() -> None:
    constant = judge_agreement([("pass", "pass"), ("pass", "fail")])
    assert constant.raw == 0.5 and constant.kappa is None
    empty = judge_agreement([])
    assert (empty.pairs, empty.raw, empty.kappa) == (0, None, None)
