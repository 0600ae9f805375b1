"""Mutants of the oracle in a calibration run (an authoring aid; issue 14), and harmless marks.

A calibration started with the mutants option judges them with the primary judge in a thread of its own,
beside the admission rows (:func:`judging_thread`); the job's thread stores each mutant as it arrives
(:func:`handle`), whole or not at all, and the counts (mutants, caught, marked harmless) once all are
judged. Nothing here changes the run's status or admits anything.

Marks are per revision content (the sha256 of its rubric.json) and mutant id (the mutant's exact diff);
only maintainers set or take them back, and every run of that content keeps its harmless count current.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from grading import (
    Backend,
    InputError,
    InputErrors,
    JudgeSettings,
    LoadedTask,
    MutantReport,
    MutantRow,
    judge_mutants,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditVerb,
    CalibrationMutant,
    CalibrationRun,
    HarmlessMutant,
    Role,
    Task,
    TransitionError,
)
from rubrics_app.services import audit

# The messages the mutants thread puts on the calibration's result queue (beside "row", "error", "done").
MUTANT = "mutant"
MUTANTS_DONE = "mutants_done"
MUTANTS_ERROR = "mutants_error"
MESSAGES = (MUTANT, MUTANTS_DONE, MUTANTS_ERROR)
ROLE = "mutants"


def harmless_marks(task: Task, rubric_sha256: str) -> dict[str, str]:
    """Mutant id -> reason, for this task's revision content."""
    marks = HarmlessMutant.objects.filter(task=task, rubric_sha256=rubric_sha256)
    return dict(marks.values_list("mutant_id", "reason"))


def judging_thread(
    run: CalibrationRun,
    task: Callable[[], LoadedTask],
    backend: Backend,
    cache: Any,
    settings: JudgeSettings,
    results: queue.Queue[tuple[str, Any, Any]],
    *,
    checkout: Path | None = None,
) -> threading.Thread:
    """A thread (not started) that judges the mutants of the oracle diff of ``task()`` (the task built in
    memory from the revision's rows, in the thread: a bad file is this thread's error) and reports on
    ``results``: each mutant as it is judged, then the report, or why they could not be judged.
    ``checkout`` (the repository, holding the task's base commit) lets mutants of Python files be checked
    to parse."""
    marks = harmless_marks(run.revision.task, run.rubric_sha256)  # read here: the thread has no connection

    def judge() -> None:
        try:
            report = judge_mutants(
                task(),
                backend,
                harmless=marks,
                cache=cache,
                settings=settings,
                on_row=lambda n, total, row: results.put((MUTANT, ROLE, (n, row))),
                checkout=checkout,
            )
        except (InputError, InputErrors) as exc:
            results.put((MUTANTS_ERROR, ROLE, str(exc)))
        except Exception as exc:  # a bug or an SDK surprise: said on the run, the calibration goes on
            results.put((MUTANTS_ERROR, ROLE, f"internal error: {type(exc).__name__}: {exc}"))
        else:
            results.put((MUTANTS_DONE, ROLE, report))

    return threading.Thread(target=judge, name="calibration-mutants", daemon=True)


def stored_positions(run: CalibrationRun) -> set[int]:
    return set(CalibrationMutant.objects.filter(run=run).values_list("position", flat=True))


def handle(run: CalibrationRun, what: str, payload: Any, stored: set[int]) -> bool:
    """Store what the mutants thread reported; True when it is done (finished or failed)."""
    if what == MUTANT:
        position, row = payload
        if position not in stored:  # a run taken over keeps the mutants stored before
            _store(run, position, row)
            stored.add(position)
        return False
    if what == MUTANTS_DONE:
        report: MutantReport = payload
        CalibrationRun.objects.filter(pk=run.pk).update(
            mutants_total=report.total,
            mutants_caught=report.caught,
            mutants_harmless=report.harmless,
            mutants_note="; ".join(report.notes),
        )
    else:
        CalibrationRun.objects.filter(pk=run.pk).update(
            mutants_note=f"could not judge the mutants: {payload}"
        )
    return True


def _store(run: CalibrationRun, position: int, row: MutantRow) -> None:
    judge = row.judge
    calls = judge.calls if judge is not None else 0
    cost = judge.usage.cost_usd if judge is not None else 0.0
    verdicts = [
        {
            "item_id": v.item_id,
            "kind": v.kind,
            "verdict": v.verdict,
            "finding": v.finding or "",
            "reason": v.reason,
            "locations": [loc.model_dump(mode="json") for loc in v.locations],
        }
        for v in (judge.verdicts if judge is not None else [])
    ]
    with transaction.atomic():
        CalibrationMutant.objects.create(
            run=run,
            position=position,
            mutant_id=row.id,
            kind=row.kind,
            description=row.description,
            diff=row.diff.encode("utf-8", errors="surrogateescape"),
            mergeable=row.mergeable,
            caught=row.caught,
            actual=row.actual,
            blockers_failed=row.blockers_failed,
            judge_failure=row.judge_failure or "",
            verdicts=verdicts,
            calls=calls,
            cost_usd=cost,
            cache_hit=judge is not None and judge.cache_hit,
        )
        updates: dict[str, Any] = {"calls": F("calls") + calls, "cost_usd": F("cost_usd") + cost}
        if judge is not None and not judge.usage.cost_known:
            updates["cost_known"] = False
        CalibrationRun.objects.filter(pk=run.pk).update(**updates)


# --- harmless marks ----------------------------------------------------------------------------------------


def refresh_counts(task: Task, rubric_sha256: str) -> None:
    """Every judged run of this revision content counts its harmless mutants again."""
    marked = set(harmless_marks(task, rubric_sha256))
    runs = CalibrationRun.objects.filter(
        revision__task=task, rubric_sha256=rubric_sha256, mutants_total__isnull=False
    )
    for run in runs:
        count = CalibrationMutant.objects.filter(run=run, mergeable=True, mutant_id__in=marked).count()
        CalibrationRun.objects.filter(pk=run.pk).update(mutants_harmless=count)


@transaction.atomic
def mark_harmless(mutant: CalibrationMutant, by: Actor, reason: str) -> HarmlessMutant:
    """Mark ``mutant`` harmless for its run's revision content. Raises PermissionDenied for anyone but a
    maintainer, TransitionError for a mutant the rubric does not call mergeable or one already marked."""
    run = mutant.run
    task = run.revision.task
    by.require(Role.MAINTAINER, task.repository)
    if mutant.mergeable is not True:
        raise TransitionError("only a mutant the rubric still calls mergeable can be marked harmless")
    try:
        with transaction.atomic():
            mark = HarmlessMutant.objects.create(
                task=task,
                rubric_sha256=run.rubric_sha256,
                mutant_id=mutant.mutant_id,
                reason=reason,
                marked_by=by.user,
            )
    except IntegrityError:
        raise TransitionError(f"{mutant.mutant_id} is already marked harmless for this content") from None
    audit.record(
        AuditVerb.MUTANT_HARMLESS,
        actor=by.user,
        revision=run.revision,
        detail={"mutant": mutant.mutant_id, "calibration": run.pk, "reason": reason},
    )
    refresh_counts(task, run.rubric_sha256)
    return mark


@transaction.atomic
def unmark(mutant: CalibrationMutant, by: Actor) -> None:
    """Take back the harmless mark of ``mutant`` for its run's revision content (maintainers only)."""
    run = mutant.run
    task = run.revision.task
    by.require(Role.MAINTAINER, task.repository)
    deleted, _ = HarmlessMutant.objects.filter(
        task=task, rubric_sha256=run.rubric_sha256, mutant_id=mutant.mutant_id
    ).delete()
    if not deleted:
        raise TransitionError(f"{mutant.mutant_id} is not marked harmless")
    audit.record(
        AuditVerb.MUTANT_UNMARKED,
        actor=by.user,
        revision=run.revision,
        detail={"mutant": mutant.mutant_id, "calibration": run.pk},
    )
    refresh_counts(task, run.rubric_sha256)
