"""Agreement between two judges on the same items (§4 "Two judges", §7): raw agreement and Cohen's kappa.

The one kappa of the package: the report's agreement between the primary and second judge and the app's
calibration agreement both come from here. The second judge's verdicts are only ever reported, never used to
decide anything; this module only counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel


class Agreement(BaseModel):
    """How often two raters gave the same binary verdict on the same items, and Cohen's κ."""

    # Cohen's κ; None ("undefined") without pairs or when either rater gave one verdict throughout: a
    # constant rater carries no information to agree with, and the formula's chance term is then degenerate.
    kappa: float | None
    raw: float | None  # agreeing / n; None without pairs
    n: int  # pairs: items both raters gave a verdict on
    undefined_reason: str | None = None  # why kappa is None, in words
    # Gwet's AC1: agreement beyond chance with chance taken as 2π(1 − π), π the mean share of "pass"; defined
    # whenever there are pairs, so it speaks where κ cannot (a judge that passed everything). None without.
    ac1: float | None = None
    # κ's 95% interval from a bootstrap over tasks (the runs of a task are judged alike), where computed.
    kappa_ci: tuple[float, float] | None = None


def cohen_kappa(
    pairs: Sequence[tuple[bool, bool]], first: str = "first", second: str = "second", unit: str = "runs"
) -> Agreement:
    """Cohen's κ of two raters' binary verdicts (True for pass), with raw agreement and n.

    κ is null when there are no pairs, and when either rater gave one verdict throughout: κ is then 0 (or
    0/0) whatever the raw agreement, so it would say nothing about the judges; the reason says which, naming
    the raters ``first`` and ``second`` and what was paired (``unit``, a plural noun ending in "s").
    """
    counts = PairCounts()
    for a, b in pairs:
        counts.add(a, b)
    return counts.kappa(first, second, unit)


@dataclass(slots=True)
class PairCounts:
    """Pairs of two raters' binary verdicts, counted: how many, how many agree, how many each said yes."""

    n: int = 0
    agreeing: int = 0
    first_yes: int = 0
    second_yes: int = 0

    def add(self, a: bool, b: bool, count: int = 1) -> None:
        """Add ``count`` pairs (a, b)."""
        self.n += count
        self.agreeing += count * (a == b)
        self.first_yes += count * a
        self.second_yes += count * b

    def kappa(self, first: str = "first", second: str = "second", unit: str = "runs") -> Agreement:
        """:func:`cohen_kappa` of the pairs counted."""
        return _kappa(self, first, second, unit)


def _kappa(counts: PairCounts, first: str, second: str, unit: str) -> Agreement:
    n = counts.n
    if n == 0:
        return Agreement(kappa=None, raw=None, n=0, undefined_reason=f"no {unit} judged by both judges")
    raw = counts.agreeing / n
    a_yes = counts.first_yes / n
    b_yes = counts.second_yes / n
    ac1 = gwet_ac1(raw, a_yes, b_yes)
    for name, share in ((first, a_yes), (second, b_yes)):
        if share in (0.0, 1.0):
            verdict = "pass" if share == 1.0 else "fail"
            return Agreement(
                kappa=None, raw=raw, n=n, ac1=ac1,
                undefined_reason=(
                    f"the {name} judge gave '{verdict}' on the only {unit.removesuffix('s')}"
                    if n == 1
                    else f"the {name} judge gave '{verdict}' on all {n} {unit}"
                ),
            )  # fmt: skip
    chance = a_yes * b_yes + (1 - a_yes) * (1 - b_yes)
    return Agreement(kappa=(raw - chance) / (1 - chance), raw=raw, n=n, ac1=ac1)


def gwet_ac1(raw: float, first_yes: float, second_yes: float) -> float:
    """Gwet's AC1 of two raters' binary verdicts: (p_o − p_e) / (1 − p_e), p_e = 2π(1 − π), π the mean of
    their shares of "pass" (p_e is at most 1/2, so it is always defined)."""
    pi = (first_yes + second_yes) / 2
    chance = 2 * pi * (1 - pi)
    return (raw - chance) / (1 - chance)


def judge_agreement(pairs: Iterable[tuple[str, str]], unit: str = "items") -> Agreement:
    """:func:`cohen_kappa` over ``(primary judge's verdict, second judge's verdict)`` pairs (``"pass"`` or
    ``"fail"``)."""
    return cohen_kappa([(a == "pass", b == "pass") for a, b in pairs], "primary", "second", unit)
