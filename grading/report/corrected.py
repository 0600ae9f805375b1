"""Judge-error-corrected contrasts (spec §7, §9; docs/report.md): b − a of the corrected mergeable rates,
beside the raw contrasts of :mod:`grading.report.contrasts`.

Over the tasks both sides measured, each side's corrected rate is
:func:`grading.report.stats.judged_correction` of its mean mergeable share and mean judged share over those
tasks, with that side's sensitivity and specificity (its own labels when they suffice, else the pooled
ones). The interval is a percentile bootstrap that resamples the shared tasks (both sides of a task
together, so the comparison stays paired) and, independently, the labelled tasks of each side's labels
(with their inverse-inclusion-probability weighted sums, so each replicate's Se and Sp are Hájek ratios).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from grading.report.stats import CONFIDENCE, JudgeAccuracy, LabelSums, judged_correction

# Per task: (measured, mergeable, judged) runs.
JudgedSums = tuple[int, int, int]
# A side's accuracy: its JudgeAccuracy, the per-task label sums behind it, and which labels (in words).
SideAccuracy = tuple[JudgeAccuracy, list[LabelSums], str]


class CorrectedContrast(BaseModel):
    kind: str  # "arm" or "model", as the raw contrast
    fixed: str
    a: str
    b: str
    value: float | None  # b − a of the corrected mergeable rates over the shared tasks
    ci: tuple[float, float] | None = None
    tasks: int
    reason: str | None = None  # why value or ci is null


def _corrected(tasks: Sequence[tuple[float, ...]], column: int, accuracy: JudgeAccuracy) -> float | None:
    merged = sum(t[column] for t in tasks) / len(tasks)
    judged = sum(t[column + 1] for t in tasks) / len(tasks)
    assert accuracy.sensitivity is not None and accuracy.specificity is not None
    return judged_correction(merged, judged, accuracy.sensitivity, accuracy.specificity)


def corrected_contrast(
    key: tuple[str, str, str, str],
    side_a: dict[str, JudgedSums],
    side_b: dict[str, JudgedSums],
    accuracy_a: SideAccuracy,
    accuracy_b: SideAccuracy,
    replicates: int,
    rng: random.Random,
) -> CorrectedContrast:
    """The corrected contrast b − a of one pair compared (``key``: kind, fixed, a, b), from each side's
    per-task (measured, mergeable, judged) runs and accuracy."""
    import numpy as np

    from grading.report.stats import percentile_interval, resample_means

    kind, fixed, a, b = key
    shared = sorted(side_a.keys() & side_b.keys())
    base: dict[str, Any] = {"kind": kind, "fixed": fixed, "a": a, "b": b, "tasks": len(shared)}
    for acc, _, _ in (accuracy_a, accuracy_b):
        if acc.sensitivity is None or acc.specificity is None or acc.undefined_reason:
            return CorrectedContrast(**base, value=None, reason=acc.undefined_reason or "no corrected rate")
    if not shared:
        return CorrectedContrast(**base, value=None, reason="no task has measured runs on both sides")
    rows = [
        (sa[1] / sa[0], sa[2] / sa[0], sb[1] / sb[0], sb[2] / sb[0])
        for sa, sb in ((side_a[t], side_b[t]) for t in shared)
    ]
    ca, cb = _corrected(rows, 0, accuracy_a[0]), _corrected(rows, 2, accuracy_b[0])
    if ca is None or cb is None:
        return CorrectedContrast(**base, value=None, reason="a side's judge is no better than chance")
    value = cb - ca
    if len(shared) < 2 or replicates == 0:
        why = "one shared task: nothing to resample" if replicates else "no intervals were asked for"
        return CorrectedContrast(**base, value=value, reason=why)
    means = resample_means(rows, replicates, rng)

    def side(column: int, labels: Any) -> Any:
        tp, pos, tn, neg = labels.T
        with np.errstate(divide="ignore", invalid="ignore"):
            se, sp = tp / pos, tn / neg
            youden = se + sp - 1
            raw = (means[:, column] - (1 - sp) * means[:, column + 1]) / youden
        ok = (pos > 0) & (neg > 0) & (youden > 0)
        return np.minimum(means[:, column + 1], np.maximum(0.0, raw)), ok

    labels_a = resample_means(accuracy_a[1], replicates, rng)  # weighted sums: Se, Sp as ratios
    # The same labels on both sides (pooled): one resample serves both, as the same judge error.
    same = accuracy_b[1] is accuracy_a[1]
    labels_b = labels_a if same else resample_means(accuracy_b[1], replicates, rng)
    draw_a, ok_a = side(0, labels_a)
    draw_b, ok_b = side(2, labels_b)
    kept = ok_a & ok_b
    if kept.sum() < (1 - (1 - CONFIDENCE) / 2) * replicates:
        why = "a side's judge is not clearly better than chance"
        return CorrectedContrast(**base, value=value, reason=why)
    draws = (draw_b - draw_a)[kept]
    return CorrectedContrast(**base, value=value, ci=percentile_interval(np.sort(draws).tolist(), value))
