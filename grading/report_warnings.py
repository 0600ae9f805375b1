"""The report's warnings (grading/report.py): what a reader must know before trusting its rates."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

from grading.judge.specs import model_family
from grading.report_models import (
    MIN_REPETITIONS,
    MIN_REPETITIONS_COMPARED,
    Cell,
    GradedRun,
    JudgeUse,
    _group,
)
from grading.report_stats import JudgeAccuracy


def _repetition_warnings(runs: Sequence[GradedRun]) -> list[str]:
    arms_per_model: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        arms_per_model[r.model].add(r.arm)
    warnings = []
    for (task, arm, model), group in sorted(_group(runs, lambda r: (r.task, r.arm, r.model)).items()):
        if all(r.status == "not_measured" for r in group):
            continue  # no rubric: not a repetition problem
        needed = MIN_REPETITIONS_COMPARED if len(arms_per_model[model]) > 1 else MIN_REPETITIONS
        measured = sum(r.measured for r in group)
        if measured < needed:
            why = "two arms are compared" if needed == MIN_REPETITIONS_COMPARED else "mergeable rates spread"
            warnings.append(
                f"task {task!r}, arm {arm!r}, model {model!r}: {measured} measured runs; "
                f"use at least {needed} ({why})"
            )
    return warnings


# The warnings that come once per task, arm and model, per judge and model, or per cell, each kind by the
# shape of its sentence (written just above and below): a page may fold each kind into one line with a
# count. The report's own list (the JSON, the CLI's Markdown) keeps every warning as it is.
REPEATED_WARNINGS: dict[str, tuple[re.Pattern[str], str]] = {
    "repetitions": (
        re.compile(r"task .+, arm .+, model .+: \d+ measured runs; use at least \d+ \(.+\)", re.DOTALL),
        "task, arm and model groups with fewer measured runs than they need",
    ),
    "self_preference": (
        re.compile(
            r"self-preference: the \w+ judge .+ judges runs of .+, a model of its own vendor", re.DOTALL
        ),
        "judge and model pairs where the judge is of the model's own vendor (self-preference)",
    ),
    "one_task": (
        re.compile(r"arm .+, model .+: one task only, so no interval \(tasks are resampled\)", re.DOTALL),
        "arm and model cells with one task only, so no interval (tasks are resampled)",
    ),
}


def warning_kind(warning: str) -> str | None:
    """The key of :data:`REPEATED_WARNINGS` whose sentence ``warning`` is, or None for a warning said once."""
    return next((kind for kind, (shape, _) in REPEATED_WARNINGS.items() if shape.fullmatch(warning)), None)


def _warnings(
    runs: Sequence[GradedRun], judges: list[JudgeUse], accuracy: JudgeAccuracy, cells: list[Cell]
) -> list[str]:
    out: list[str] = []
    not_measured = sum(r.status == "not_measured" for r in runs)
    grader = sum(r.status == "grader_failure" for r in runs)
    judge = sum(r.status == "judge_failure" for r in runs)
    if not_measured:
        out.append(
            f"{not_measured} runs not measured (no rubric.json): left out of every rate, "
            "never counted as not mergeable"
        )
    if grader or judge:
        out.append(
            f"{grader} grader failures and {judge} judge failures: left out of every rate "
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
    models = sorted({r.model for r in runs})
    for j in judges:
        if j.vendor is None:
            continue
        for model in models:
            if model_family(model) == j.vendor:
                out.append(
                    f"self-preference: the {j.role} judge {j.judge} ({j.vendor}) judges runs of "
                    f"{model} ({j.vendor}), a model of its own vendor"
                )
    out += _integrity_warnings(runs)
    out += _metric_kind_warnings(runs)
    unknown = sum(r.provisional is None for r in runs)
    if any(c.provisional for c in cells):
        out.append("cells marked provisional include runs graded with a rubric that is not admitted")
    if unknown:
        out.append(f"{unknown} runs do not record whether their rubric was admitted: treated as provisional")
    few = [c for c in cells if c.measured and c.tasks < 2]
    for c in few:
        out.append(f"arm {c.arm!r}, model {c.model!r}: one task only, so no interval (tasks are resampled)")
    if accuracy.undefined_reason:
        out.append(f"no judge-error-corrected rate: {accuracy.undefined_reason}")
    out += _repetition_warnings(runs)
    return out


def _integrity_warnings(runs: Sequence[GradedRun]) -> list[str]:
    partial = [r for r in runs if r.measured and r.integrity_not_measured]
    if not partial:
        return []
    parts: dict[str, int] = defaultdict(int)
    for r in partial:
        for part in set(r.integrity_not_measured):
            parts[part] += 1
    which = ", ".join(f"{part} in {n}" for part, n in sorted(parts.items()))
    return [
        f"{len(partial)} measured runs were graded with test-integrity parts not measured ({which}): "
        "their integrity check covered only the other parts (counted per cell)"
    ]


def _metric_kind_warnings(runs: Sequence[GradedRun]) -> list[str]:
    numeric: dict[str, int] = defaultdict(int)
    flags: dict[str, int] = defaultdict(int)
    for r in runs:
        if r.status != "grader_failure":
            for name in r.metrics:
                numeric[name] += 1
            for name in r.flags:
                flags[name] += 1
    return [
        f"grade.json metric {name!r} is true/false in {flags[name]} runs and a number in {numeric[name]}: "
        "shown apart, as a rate and as a mean"
        for name in sorted(set(numeric) & set(flags))
    ]
