"""grading.report.power: the sample-size figures against simulations with known rates (fixed seeds)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from grading.report.models import LabelTarget, PairSums
from grading.report.power import TARGET_HALF_WIDTH, Z, contrast_precision, label_target


def experiment(
    rng: np.random.Generator, tasks: int, reps: int, lift_sd: float, lift: float = 0.15
) -> list[PairSums]:
    """One comparison: per task a base rate, arm b lifted by a task-specific amount; reps runs per side.
    Mergeable runs pass the tests, so only the mergeable column matters here."""
    base = rng.uniform(0.15, 0.65, tasks)
    other = np.clip(base + rng.normal(lift, lift_sd, tasks), 0, 1)
    ka = rng.binomial(reps, base)
    kb = rng.binomial(reps, other)
    return [(reps, reps, int(a), reps, reps, int(b)) for a, b in zip(ka, kb, strict=True)]


def value(pairs: list[PairSums]) -> float:
    return sum(p[5] for p in pairs) / sum(p[3] for p in pairs) - sum(p[2] for p in pairs) / sum(
        p[0] for p in pairs
    )


def simulated_half_width(seed: int, tasks: int, reps: int, lift_sd: float, n: int = 1500) -> float:
    rng = np.random.default_rng(seed)
    return Z * float(np.std([value(experiment(rng, tasks, reps, lift_sd)) for _ in range(n)], ddof=1))


def predictions(seed: int, tasks: int, reps: int, lift_sd: float, n: int = 300) -> list[object]:
    rng = np.random.default_rng(seed)
    return [
        contrast_precision(experiment(rng, tasks, reps, lift_sd), "mergeable_rate", None) for _ in range(n)
    ]


def within(predicted: float, simulated: float) -> bool:
    return abs(predicted - simulated) <= 0.2 * simulated


@pytest.mark.parametrize(("tasks", "reps", "lift_sd"), [(20, 4, 0.1), (12, 3, 0.0), (30, 2, 0.2)])
def test_the_predicted_half_width_is_the_simulated_one(tasks: int, reps: int, lift_sd: float) -> None:
    figures = predictions(1, tasks, reps, lift_sd)
    predicted = statistics.median(f.predicted_half_width for f in figures)  # type: ignore[attr-defined]
    assert within(predicted, simulated_half_width(2, tasks, reps, lift_sd))


def test_the_tasks_it_asks_for_reach_five_points() -> None:
    figures = predictions(3, 20, 4, 0.1)
    needed = 20 + round(statistics.median(f.more_tasks for f in figures))  # type: ignore[attr-defined]
    assert needed > 100  # far from ±5 points at 20 tasks
    assert within(TARGET_HALF_WIDTH, simulated_half_width(4, needed, 4, 0.1, n=800))


def test_no_repetition_count_is_offered() -> None:
    # Issue 31 §4: planned from the observed spread between tasks, a repetition count came mostly when that
    # spread was underestimated and missed ±5 points by up to 60%; the figure is dropped, with the reason.
    for tasks, reps, lift_sd in ((150, 2, 0.0), (30, 3, 0.1)):
        figures = predictions(8, tasks, reps, lift_sd, n=30)
        assert all(f.repetitions_needed is None and f.reason for f in figures)  # type: ignore[attr-defined]


def test_when_tasks_differ_too_much_repetitions_cannot_help() -> None:
    pairs = experiment(np.random.default_rng(7), 10, 5, 0.4)
    p = contrast_precision(pairs, "mergeable_rate", (0.0, 0.4))
    assert p.repetitions_needed is None and "only more tasks" in (p.reason or "")
    assert p.half_width == pytest.approx(0.2) and p.more_tasks and p.more_tasks > 0


def test_one_run_per_side_or_one_task_says_what_is_unknown() -> None:
    one_run = contrast_precision(
        [(1, 1, 1, 1, 1, 0), (1, 1, 0, 1, 1, 1), (1, 1, 0, 1, 1, 0)], "mergeable_rate", None
    )
    assert one_run.repetitions_needed is None and "within a task is unknown" in (one_run.reason or "")
    assert one_run.more_tasks is not None
    one_task = contrast_precision([(3, 3, 1, 3, 3, 2)], "mergeable_rate", None)
    assert one_task.more_tasks is None and "between tasks is unknown" in (one_task.reason or "")


# --- the judge-error correction -------------------------------------------------------------------------

TRUE_RATE, SENSITIVITY, SPECIFICITY = 0.4, 0.85, 0.9


def labelled_report(
    rng: np.random.Generator, labels: int, sensitivity: float = SENSITIVITY, specificity: float = SPECIFICITY
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int, int]], float]:
    """600 tasks x 5 runs judged with known error, ``labels`` of them labelled by a human: the per-task
    sums label_target takes, and the corrected rate this draw gives."""
    ease = np.clip(rng.normal(TRUE_RATE, 0.15, 600), 0, 1)
    truth = rng.random((600, 5)) < ease[:, None]
    said = np.where(truth, rng.random((600, 5)) < sensitivity, rng.random((600, 5)) >= specificity)
    tasks = [(5, 5, int(s)) for s in said.sum(axis=1)]
    human = rng.random(labels) < TRUE_RATE
    judge = np.where(human, rng.random(labels) < sensitivity, rng.random(labels) >= specificity)
    sums = (int((human & judge).sum()), int(human.sum()), int((~human & ~judge).sum()), int((~human).sum()))
    se, sp = sums[0] / sums[1], sums[2] / sums[3]
    observed = said.mean()
    return tasks, [sums], float(np.clip((observed + sp - 1) / (se + sp - 1), 0, 1))


def label_simulation(
    seed: int, labels: int, n: int = 1000, sensitivity: float = SENSITIVITY, specificity: float = SPECIFICITY
) -> tuple[float, list[LabelTarget]]:
    rng = np.random.default_rng(seed)
    rates: list[float] = []
    targets: list[LabelTarget] = []
    for _ in range(n):
        tasks, sums, corrected = labelled_report(rng, labels, sensitivity, specificity)
        rates.append(corrected)
        if len(targets) < 200:
            targets.append(label_target(tasks, sums, minimum=0))
    return Z * float(np.std(rates, ddof=1)), targets


def test_the_labels_it_asks_for_reach_five_points() -> None:
    simulated, targets = label_simulation(8, 80)
    widths = [t.half_width for t in targets if t.half_width is not None]
    counts = [t.more_labels for t in targets if t.more_labels is not None]
    assert len(widths) == len(counts) == len(targets)
    predicted = statistics.median(widths)
    assert within(predicted, simulated)
    more = round(statistics.median(counts))
    assert more > 100
    reached, _ = label_simulation(9, 80 + more, n=600)
    assert within(TARGET_HALF_WIDTH, reached)


def test_a_weaker_judge_widens_the_predicted_half_width_as_simulated() -> None:
    # Se + Sp − 1 = 0.45 instead of 0.75: the correction divides by it, so the interval widens by its
    # inverse (with 0.75 alone, a variance divided by J instead of J² stays within 20%).
    simulated, targets = label_simulation(10, 80, sensitivity=0.75, specificity=0.7)
    predicted = statistics.median(t.half_width for t in targets if t.half_width is not None)
    assert simulated > 0.2 and within(predicted, simulated)


def test_labels_never_ask_for_fewer_than_the_minimum_and_say_why_not() -> None:
    tasks = [(10, 10, 4)] * 30
    assert label_target(tasks, [(9, 10, 9, 10)], minimum=20).more_labels is not None
    assert label_target(tasks, [(3, 3, 3, 3)], minimum=20).more_labels >= 14  # type: ignore[operator]
    one_side = label_target(tasks, [(3, 3, 0, 0)], minimum=20)
    assert one_side.more_labels is None and "both sides" in (one_side.reason or "")
    # Two tasks, one all mergeable and one none: the runs' own spread is beyond any labels.
    spread = label_target([(10, 10, 10), (10, 10, 0)], [(50, 50, 50, 50)], minimum=20)
    assert spread.more_labels is None and "more runs are needed" in (spread.reason or "")
