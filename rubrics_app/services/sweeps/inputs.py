"""What a sweep grades (docs/sweeps.md): the runs and the revision each is graded against, the runs already
graded under the sweep's key, and the files grading's ``grade`` reads, built from the rows as ``rubric grade``
reads a task and a run directory."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Q

from grading import LoadedTask, Run, make_run, make_task_files
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    GradeSource,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    Sweep,
)
from rubrics_app.services.calibration.inputs import manifest_bytes, task_json


@dataclass(frozen=True)
class Target:
    run_pk: int
    revision: RubricRevision


def sweep_targets(sweep: Sweep) -> tuple[list[Target], int]:
    """The runs the sweep grades with their revision, and how many it leaves out for want of a revision."""
    runs = AgentRun.objects.filter(task__repository_id=sweep.repository_id)
    if sweep.task_id is not None:
        runs = runs.filter(task_id=sweep.task_id)
    if sweep.arm:
        runs = runs.filter(arm=sweep.arm)
    if sweep.model:
        runs = runs.filter(model=sweep.model)
    if sweep.revision is not None:
        revisions = {sweep.revision.task_id: sweep.revision}
    else:
        admitted = RubricRevision.objects.filter(
            task__repository_id=sweep.repository_id, status=RevisionStatus.ADMITTED
        ).select_related("task__repository")
        revisions = {revision.task_id: revision for revision in admitted}
    targets: list[Target] = []
    left_out = 0
    for run_pk, task_id in runs.order_by("task_id", "arm", "model", "repetition").values_list(
        "pk", "task_id"
    ):
        revision = revisions.get(task_id)
        if revision is None:
            left_out += 1
        else:
            targets.append(Target(run_pk, revision))
    return targets, left_out


def graded_already(sweep: Sweep, targets: list[Target]) -> tuple[set[int], set[int]]:
    """Runs with a grade under the sweep's key (skipped), and those whose sweep grade is a judge failure
    (graded again, the grade replaced)."""
    done: set[int] = set()
    retry: set[int] = set()
    by_revision: dict[int, list[int]] = {}
    revisions: dict[int, RubricRevision] = {}
    for target in targets:
        by_revision.setdefault(target.revision.pk, []).append(target.run_pk)
        revisions[target.revision.pk] = target.revision
    for revision_pk, run_pks in by_revision.items():
        sha = revisions[revision_pk].rubric_sha256()
        for start_at in range(0, len(run_pks), 500):
            chunk = run_pks[start_at : start_at + 500]
            # A grade with no primary judge is one the judge was never needed for (the test gate failed):
            # no judge could change it.
            grades = RunGrade.objects.filter(
                Q(primary_judge=sweep.judge) | Q(primary_judge=""), run_id__in=chunk, rubric_sha256=sha
            ).values_list("run_id", "source", "judge_failure")
            for run_id, source, judge_failure in grades:
                if source == GradeSource.SWEEP and judge_failure:
                    retry.add(run_id)
                else:
                    done.add(run_id)
    return done, retry - done


# --- the files grade_run reads ------------------------------------------------------------------------------


def _task_json(revision: RubricRevision, prompt_style: str) -> bytes:
    data = task_json(revision)
    task = revision.task
    # The judge sees the prompt the agent was given (§8: a task may carry both styles).
    if prompt_style == "issue" and task.issue_prompt:
        data.update(prompt=task.issue_prompt, prompt_style="issue")
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


@dataclass(frozen=True)
class TaskBytes:
    """What grading reads of a revision's task, as bytes: parsed by grading in the worker thread, so a bad
    rubric is that run's problem, as it is for ``rubric grade``."""

    source: str
    task_json: bytes
    rubric_json: bytes
    manifest: bytes
    oracle_grade: bytes | None  # None: the task has no oracle_grade.json (tests_skipped not measured)
    tests_base: bytes | None  # None: the task has no tests_base.txt (test_cases not measured)

    def files(self) -> LoadedTask:
        return make_task_files(
            self.source,
            task_json=self.task_json,
            rubric_json=self.rubric_json,
            manifest=self.manifest,
            oracle_grade=self.oracle_grade,
            tests_base=self.tests_base,
        )


def task_bytes(revision: RubricRevision, prompt_style: str) -> TaskBytes:
    task = revision.task
    # The task's own files as tasks/<id>/ holds them; stored empty means the task has none (as calibration
    # reads them).
    return TaskBytes(
        source=f"tasks/{task.task_id}",
        task_json=_task_json(revision, prompt_style),
        rubric_json=revision.rubric_json_bytes(),
        manifest=manifest_bytes(task.repository),
        oracle_grade=task.task_file("oracle_grade.json") or None,
        tests_base=task.task_file("tests_base.txt") or None,
    )


def run_model(run: AgentRun, diff: bytes) -> Run:
    """The stored run as grading reads a run folder: a run imported without git_dir_changes.txt has its
    git_dir part not measured, as ``rubric grade`` leaves it."""
    return make_run(
        f"run {run.pk}",
        run_json=json.dumps(run.run_json).encode(),
        grade_json=json.dumps(run.grade_json).encode(),
        diff=diff,
        ignored_created=run.ignored_created.encode(),
        tests_list=run.tests_list.encode() if run.tests_list is not None else None,
        tests_list_error=run.tests_list_error.encode() if run.tests_list_error is not None else None,
        git_dir_changes=run.git_dir_changes.encode() if run.git_dir_changes is not None else None,
    )


class Admission:
    """grade_run's admission lookup: the sweep decided up front whether its revision is admitted."""

    def __init__(self, admitted: bool) -> None:
        self.admitted = admitted

    def admits(self, rubric_sha256: str, judge: str) -> bool:
        return self.admitted


def load_run(run_pk: int) -> tuple[AgentRun, bytes]:
    run = AgentRun.objects.get(pk=run_pk)
    diff = AgentRunDiff.objects.filter(run_id=run_pk).values_list("content", flat=True).first()
    return run, bytes(diff or b"")


def run_label(target: Target) -> str:
    run = AgentRun.objects.filter(pk=target.run_pk).first()
    return str(run) if run is not None else f"#{target.run_pk}"
