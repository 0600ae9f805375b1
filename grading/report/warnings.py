"""The report's warnings (grading/report/build.py): what a reader must know before trusting its rates."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from grading.judge.specs import model_family
from grading.report.models import (
    MIN_REPETITIONS,
    MIN_REPETITIONS_COMPARED,
    Cell,
    Contrast,
    JudgeUse,
    group_by,
)
from grading.report.stats import JudgeAccuracy
from grading.report.sums import PartSums
from grading.words import counted


def _repetition_warnings(parts: Sequence[PartSums]) -> list[str]:
    arms_per_model: dict[str, set[str]] = defaultdict(set)
    for p in parts:
        arms_per_model[p.model].add(p.arm)
    warnings = []
    for (task, arm, model), group in sorted(group_by(parts, lambda p: (p.task, p.arm, p.model)).items()):
        if all(p.statuses.get("not_measured", 0) == p.runs for p in group):
            continue  # no rubric: not a repetition problem
        needed = MIN_REPETITIONS_COMPARED if len(arms_per_model[model]) > 1 else MIN_REPETITIONS
        measured = sum(p.measured for p in group)
        if measured < needed:
            why = "two arms are compared" if needed == MIN_REPETITIONS_COMPARED else "mergeable rates spread"
            warnings.append(
                f"task {task!r}, arm {arm!r}, model {model!r}: {counted(measured, 'measured run')}; "
                f"use at least {needed} ({why})"
            )
    return warnings


# The warnings that come once per task, arm and model, per judge and model, or per cell, each kind by the
# shape of its sentence (written just above and below): a page may fold each kind into one line with a
# count. The report's own list (the JSON, the CLI's Markdown) keeps every warning as it is.
REPEATED_WARNINGS: dict[str, tuple[re.Pattern[str], str]] = {
    "repetitions": (
        re.compile(r"task .+, arm .+, model .+: \d+ measured runs?; use at least \d+ \(.+\)", re.DOTALL),
        "task, arm and model groups with fewer measured runs than they need",
    ),
    "self_preference": (
        re.compile(
            r"self-preference: the \w+ judge .+ judges runs of .+, a model of its own vendor", re.DOTALL
        ),
        "judge and model pairs where the judge is of the model's own vendor (self-preference)",
    ),
    "task_sets": (
        re.compile(r"(arm|model) contrast .+ − .+ \(.+\): \d+ shared tasks? of \d+ and \d+; .+", re.DOTALL),
        "contrasts whose two sides ran different tasks (the cells rest on tasks a contrast leaves out)",
    ),
    "one_task": (
        re.compile(r"arm .+, model .+: one task only, so no interval \(tasks are resampled\)", re.DOTALL),
        "arm and model cells with one task only, so no interval (tasks are resampled)",
    ),
}


def warning_kind(warning: str) -> str | None:
    """The key of :data:`REPEATED_WARNINGS` whose sentence ``warning`` is, or None for a warning said once."""
    return next((kind for kind, (shape, _) in REPEATED_WARNINGS.items() if shape.fullmatch(warning)), None)


def task_set_warnings(contrasts: Sequence[Contrast]) -> list[str]:
    """One warning per pair compared whose sides measured different tasks: the contrast is over the shared
    ones, the cells' rates over all of each side's, so the cells can differ by more or less than it."""
    out = []
    for c in contrasts:
        if c.metric != "test_pass_rate" or (c.tasks == c.tasks_a and c.tasks == c.tasks_b):
            continue
        out.append(
            f"{c.kind} contrast {c.b!r} − {c.a!r} ({'model' if c.kind == 'arm' else 'arm'} {c.fixed!r}): "
            f"{counted(c.tasks, 'shared task')} of {c.tasks_a} and {c.tasks_b}; the cells' rates also rest "
            f"on the {c.tasks_a + c.tasks_b - 2 * c.tasks} tasks only one side ran, so compare the contrast, "
            "not the cells"
        )
    return out


def collect_warnings(
    parts: Sequence[PartSums],
    judges: list[JudgeUse],
    accuracy: JudgeAccuracy,
    cells: list[Cell],
    contrasts: Sequence[Contrast] = (),
) -> list[str]:
    out: list[str] = []
    not_measured = sum(p.statuses.get("not_measured", 0) for p in parts)
    grader = sum(p.statuses.get("grader_failure", 0) for p in parts)
    judge = sum(p.statuses.get("judge_failure", 0) for p in parts)
    if not_measured:
        out.append(
            f"{counted(not_measured, 'run')} not measured (no rubric.json): left out of every rate, "
            "never counted as not mergeable"
        )
    if grader or judge:
        out.append(
            f"{counted(grader, 'grader failure')} and {counted(judge, 'judge failure')}: left out of every "
            "rate "
            "(judge failures are runs that passed the tests, so the rates are over the rest)"
        )
    for role in ("primary", "second"):
        specs = [j.judge for j in judges if j.role == role]
        if len(specs) > 1:
            out.append(
                f"more than one {role} judge in this report ({', '.join(specs)}): "
                "cells mix how runs were scored"
            )
    if any(j.scripted for j in judges):
        out.append(
            "verdicts from the scripted judge (a deterministic stand-in for tests and demos) "
            "are in this report"
        )
    models = sorted({p.model for p in parts})
    for j in judges:
        if j.vendor is None:
            continue
        for model in models:
            if model_family(model) == j.vendor:
                out.append(
                    f"self-preference: the {j.role} judge {j.judge} ({j.vendor}) judges runs of "
                    f"{model} ({j.vendor}), a model of its own vendor"
                )
    out += _integrity_warnings(parts)
    out += _metric_kind_warnings(parts)
    unknown = sum(p.provisional_unknown for p in parts)
    if any(c.provisional for c in cells):
        out.append("cells marked provisional include runs graded with a rubric that is not admitted")
    if unknown:
        out.append(
            f"{counted(unknown, 'run')} {'does' if unknown == 1 else 'do'} not record whether their rubric "
            "was admitted: treated as provisional"
        )
    few = [c for c in cells if c.measured and c.tasks < 2]
    for c in few:
        out.append(f"arm {c.arm!r}, model {c.model!r}: one task only, so no interval (tasks are resampled)")
    out += task_set_warnings(contrasts)
    if accuracy.undefined_reason:
        out.append(f"no judge-error-corrected rate: {accuracy.undefined_reason}")
    if accuracy.weighting_note:  # how the labels weigh: the page's wording comes from here
        out.append(f"human labels: {accuracy.weighting_note}")
    out += _repetition_warnings(parts)
    return out


def _integrity_warnings(parts: Sequence[PartSums]) -> list[str]:
    partial = sum(p.unmeasured_runs for p in parts)
    if not partial:
        return []
    counts: dict[str, int] = defaultdict(int)
    for p in parts:
        for part, n in p.unmeasured_parts.items():
            counts[part] += n
    which = ", ".join(f"{part} in {n}" for part, n in sorted(counts.items()))
    return [
        f"{partial} measured runs were graded with test-integrity parts not measured ({which}): "
        "their integrity check covered only the other parts (counted per cell)"
    ]


def _metric_kind_warnings(parts: Sequence[PartSums]) -> list[str]:
    numeric: dict[str, int] = defaultdict(int)
    flags: dict[str, int] = defaultdict(int)
    for p in parts:
        for name, (_, n) in p.metrics.items():
            numeric[name] += n
        for name, (_, n) in p.flags.items():
            flags[name] += n
    return [
        f"grade.json metric {name!r} is true/false in {counted(flags[name], 'run')} and a number in "
        f"{numeric[name]}: "
        "shown apart, as a rate and as a mean"
        for name in sorted(set(numeric) & set(flags))
    ]
