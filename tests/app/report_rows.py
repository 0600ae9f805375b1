"""Graded runs written straight into the tables with bulk_create, for the report page at sizes where
grading real run directories would take minutes (query counts, escaping, the benchmark)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rubrics_app.models import AgentRun, ItemVerdict, JudgeGrade, RunGrade, Task, refresh_current_grades
from rubrics_app.models.repositories import Repository
from rubrics_app.services.report_rows import refresh_report_rows

BATCH = 2000


def judged_details(
    mergeable: bool,
    passed: Sequence[str],
    failed: Sequence[str],
    *,
    changed_files: int = 1,
    changed_lines: int = 1,
    families: bool = True,
) -> dict[str, Any]:
    """metrics.json's details as grading writes them (grading.checks.outcome.RunDetails), less the judges'
    copies, for a run in scope with its integrity kept whose blockers the judge ``passed`` and ``failed``;
    with the judges' families (claude, gpt) where ``families``."""
    details: dict[str, Any] = {
        "status": "mergeable" if mergeable else "not_mergeable",
        "scope": {"in_scope": True, "changed_files": changed_files, "changed_lines": changed_lines},
        "integrity": {"ok": True},
        "judge_skipped": None,
        "assessment": {
            "in_scope": True,
            "integrity_ok": True,
            "blockers_passed": list(passed),
            "blockers_failed": list(failed),
        },
    }
    if families:
        details["judge_families"] = {"primary": "claude", "second": "gpt"}
    return details


def _details(mergeable: bool) -> dict[str, Any]:
    return judged_details(mergeable, ["B1"] if mergeable else [], [] if mergeable else ["B1"])


def bulk_tasks(repository: Repository, n: int) -> list[Task]:
    """``n`` tasks of ``repository`` (task-000, task-001, ...), made in one query."""
    return Task.objects.bulk_create(
        Task(repository=repository, task_id=f"task-{i:03d}", spec_prompt="x", base_date="2025-03-01")
        for i in range(n)
    )


def bulk_runs(tasks: Sequence[Task], arms: Sequence[str], models: Sequence[str], reps: int) -> int:
    """len(tasks) x len(arms) x len(models) x reps runs, each graded once with two judges and two items.
    Every third repetition fails blocker B1 (not mergeable); the second judge disagrees on N1 of odd ones."""
    runs = AgentRun.objects.bulk_create(
        [
            AgentRun(
                task=task,
                arm=arm,
                model=model,
                repetition=rep,
                passed=True,
                grade_json={"pass": True, "tests_skipped": rep % 2},
                diff_sha256="0" * 64,
                diff_bytes=0,
            )  # fmt: skip
            for task in tasks
            for arm in arms
            for model in models
            for rep in range(reps)
        ],
        batch_size=BATCH,
    )
    grades = RunGrade.objects.bulk_create(
        [
            RunGrade(
                run=run,
                primary_judge="anthropic:claude-judge",
                status=str(_details(run.repetition % 3 != 2)["status"]),
                mergeable=run.repetition % 3 != 2,
                merge_score=0.8 if run.repetition % 3 != 2 else None,
                provisional=False,
                metrics={"details": _details(run.repetition % 3 != 2)},
            )  # fmt: skip
            for run in runs
        ],
        batch_size=BATCH,
    )
    judges = JudgeGrade.objects.bulk_create(
        [JudgeGrade(grade=g, role=role, judge=spec) for g in grades
         for role, spec in (("primary", "anthropic:claude-judge"), ("second", "openai:gpt-judge"))],
        batch_size=BATCH,
    )  # fmt: skip
    verdicts = []
    for j in judges:
        rep = j.grade.run.repetition
        b1 = "fail" if rep % 3 == 2 else "pass"
        n1 = "fail" if j.role == "second" and rep % 2 else "pass"
        verdicts += [
            ItemVerdict(judge=j, item_id="B1", kind="blocker", verdict=b1, reason="r"),
            ItemVerdict(judge=j, item_id="N1", kind="non_blocker", verdict=n1, reason="r"),
        ]
    ItemVerdict.objects.bulk_create(verdicts, batch_size=BATCH)
    refresh_report_rows(g.pk for g in grades)  # as the import does after writing grades
    refresh_current_grades(runs=[r.pk for r in runs])
    return len(runs)
