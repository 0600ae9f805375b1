"""Counts pluralise: "1 run", "2 runs", never "1 runs" or "run(s)"."""

from __future__ import annotations

from grading.words import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "run") == "1 run"
    assert [counted(n, "run") for n in (0, 2, 10)] == ["0 runs", "2 runs", "10 runs"]
    assert counted(1, "changed line") == "1 changed line"


def test_an_irregular_plural_is_given() -> None:
    assert (counted(1, "stratum", "strata"), counted(3, "stratum", "strata")) == ("1 stratum", "3 strata")
