"""Agreement between two judges on the same items (§4 "Two judges", §7): raw agreement and Cohen's kappa.

The second judge's verdicts are only ever reported, never used to decide anything; this module only counts.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from grading.judge.models import VerdictValue


class Agreement(BaseModel):
    """How often two judges gave the same verdict on the same items."""

    pairs: int  # items both judges gave a verdict on
    agreeing: int
    raw: float | None  # agreeing / pairs; None without pairs
    # Cohen's kappa; None ("undefined") without pairs or when either judge gave one verdict throughout:
    # a constant judge carries no information to agree with, and the formula's chance term is then degenerate.
    kappa: float | None


def judge_agreement(pairs: Iterable[tuple[VerdictValue, VerdictValue]]) -> Agreement:
    """Raw agreement and Cohen's kappa over ``(first judge's verdict, second judge's verdict)`` pairs."""
    pairs = list(pairs)
    n = len(pairs)
    agreeing = sum(1 for a, b in pairs if a == b)
    if n == 0:
        return Agreement(pairs=0, agreeing=0, raw=None, kappa=None)
    observed = agreeing / n
    first_pass = sum(1 for a, _ in pairs if a == "pass") / n
    second_pass = sum(1 for _, b in pairs if b == "pass") / n
    kappa: float | None = None
    if 0 < first_pass < 1 and 0 < second_pass < 1:
        chance = first_pass * second_pass + (1 - first_pass) * (1 - second_pass)
        kappa = (observed - chance) / (1 - chance)
    return Agreement(pairs=n, agreeing=agreeing, raw=observed, kappa=kappa)
