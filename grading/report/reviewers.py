"""Agreement between human reviewers on the same pairs (§4, §7): Krippendorff's α for nominal verdicts,
which takes any number of reviewers per pair and pairs labelled by different subsets of them, with a
percentile bootstrap interval over the pairs. Beside the judges' κ (grading.report.agreement), it says how
far the labels the judge-error correction rests on can be trusted."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

BOOTSTRAP_DRAWS = 1000
BOOTSTRAP_SEED = 20260412  # fixed: the same labels give the same interval on every page load


class ReviewerAgreement(BaseModel):
    """Krippendorff's α over the pairs two or more reviewers labelled; None ("undefined") with fewer than
    two such pairs or when every label is the same verdict (no variation to agree on)."""

    alpha: float | None
    low: float | None  # the 95% bootstrap interval over pairs; None when undefined or too few pairs
    high: float | None
    pairs: int  # pairs with two or more labels
    disagreeing: int  # of those, pairs whose labels differ
    undefined_reason: str | None = None


def _alpha(units: Sequence[Sequence[str]]) -> float | None:
    """Krippendorff's α (nominal) of the units' values; None when the expected disagreement is 0."""
    coincidences: dict[tuple[str, str], float] = {}
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, n_c in counts.items():
            for k, n_k in counts.items():
                pairs = n_c * (n_c - 1) if c == k else n_c * n_k
                coincidences[(c, k)] = coincidences.get((c, k), 0.0) + pairs / (m - 1)
    totals: dict[str, float] = {}
    for (c, _), o in coincidences.items():
        totals[c] = totals.get(c, 0.0) + o
    n = sum(totals.values())
    if n <= 1:
        return None
    observed = sum(o for (c, k), o in coincidences.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected


def _undefined(pairs: int, disagreeing: int, reason: str) -> ReviewerAgreement:
    """No α for these pairs, and why."""
    return ReviewerAgreement(
        alpha=None, low=None, high=None, pairs=pairs, disagreeing=disagreeing, undefined_reason=reason
    )


def reviewer_agreement(units: Sequence[Sequence[str]]) -> ReviewerAgreement:
    """α over the units (each: the verdicts the reviewers gave one pair; units with one verdict are left
    out), with its bootstrap interval (pairs drawn with replacement; draws without variation skipped)."""
    labelled = [list(values) for values in units if len(values) >= 2]
    disagreeing = sum(1 for values in labelled if len(set(values)) > 1)
    if len(labelled) < 2:
        return _undefined(
            len(labelled), disagreeing, "fewer than two pairs labelled by two or more reviewers"
        )
    alpha = _alpha(labelled)
    if alpha is None:
        return _undefined(len(labelled), disagreeing, "every label gives the same verdict")
    rng = random.Random(BOOTSTRAP_SEED)
    draws = []
    for _ in range(BOOTSTRAP_DRAWS):
        value = _alpha([labelled[rng.randrange(len(labelled))] for _ in labelled])
        if value is not None:
            draws.append(value)
    draws.sort()
    low = draws[int(0.025 * (len(draws) - 1))] if draws else None
    high = draws[int(0.975 * (len(draws) - 1))] if draws else None
    return ReviewerAgreement(alpha=alpha, low=low, high=high, pairs=len(labelled), disagreeing=disagreeing)
