"""What a calibration judges and which run admits it: the revision's task built in memory from its rows.

:func:`calibration_files` and :func:`task_files` build the task directory (rubric.json, task.json,
oracle.diff, the calibration diffs and the manifest's tests block); :func:`inputs_sha256` fingerprints it,
and :func:`passing_run` finds the passing calibration of the revision's exact content with the primary judge
(none while :func:`injection_refusal` names a run that found an attack success). The repository's judges and
its monthly judge spend are read here too.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from grading import (
    Backend,
    BaseTree,
    InputError,
    LoadedTask,
    make_task_files,
    supports_tree,
)
from rubrics_app.models import (
    CalibrationRun,
    JudgeSetting,
    Repository,
    RubricRevision,
    Sweep,
    Task,
    TransitionError,
)

# The calibration module's logger, as before these functions moved here.
log = logging.getLogger("rubrics_app.services.calibration.run")


# --- the task directory a calibration judges ----------------------------------------------------------


def task_json(revision: RubricRevision) -> dict[str, Any]:
    task = revision.task
    # "prompts" is a task.json field now; an older import may have kept one among the extra keys.
    extra = {k: v for k, v in (task.extra or {}).items() if k != "prompts"}
    data: dict[str, Any] = {**extra, "id": task.task_id}
    if task.spec_prompt:
        data.update(prompt=task.spec_prompt, prompt_style="spec")
    elif task.issue_prompt:
        data.update(prompt=task.issue_prompt, prompt_style="issue")
    if task.spec_prompt and task.issue_prompt:  # both variants (§8): the spec one is the default
        data["prompts"] = {"spec": task.spec_prompt, "issue": task.issue_prompt}
    data["gate"] = list(task.gate or [])
    if task.base_commit:
        data["base_commit"] = task.base_commit
    if task.base_date:
        data["base_date"] = task.base_date
    return data


def calibration_files(revision: RubricRevision) -> dict[str, bytes]:
    """Every file the admission rows read, by its path: tasks/<id>/ as the `rubric check` command sees it,
    and the manifest (the repository's tests block) beside it."""
    task = revision.task
    files = {
        "task/rubric.json": revision.rubric_json_bytes(),
        "task/task.json": (json.dumps(task_json(revision), indent=2, ensure_ascii=False) + "\n").encode(),
        "task/oracle.diff": task.task_file("oracle.diff"),
    }
    for name in ("oracle_grade.json", "tests_base.txt"):
        if task.task_file(name):
            files[f"task/{name}"] = task.task_file(name)
    for diff in revision.ordered_diffs():
        files[f"task/{diff.path}"] = bytes(diff.content)
    files["repo_manifest.yaml"] = manifest_bytes(task.repository)
    return files


def manifest_bytes(repository: Repository) -> bytes:
    """repo_manifest.yaml with the repository's tests block, as grading reads it."""
    tests = repository.tests_config or {}
    # JSON is YAML: grading.loaders.load_manifest reads it as the manifest's `tests` block.
    return (json.dumps({"tests": tests} if tests else {}) + "\n").encode()


def inputs_sha256(files: dict[str, bytes]) -> str:
    listing = [[path, hashlib.sha256(data).hexdigest()] for path, data in sorted(files.items())]
    return hashlib.sha256(json.dumps(listing, separators=(",", ":")).encode()).hexdigest()


def task_files(files: dict[str, bytes]) -> LoadedTask:
    """The task admission judges, in memory, from :func:`calibration_files`: each file of tasks/<id>/ by its
    path there (the rubric picks its calibration diffs among them), so errors name files as ``rubric check``
    run in that folder names them. InputError (or InputErrors) for a bad file."""
    inside = {rel.removeprefix("task/"): data for rel, data in files.items() if rel.startswith("task/")}
    return make_task_files(
        "",
        task_json=inside["task.json"],
        rubric_json=inside["rubric.json"],
        manifest=files["repo_manifest.yaml"],
        oracle_diff=inside["oracle.diff"],
        calibration=inside,
    )


# --- the judges, the month's spend, and the run that admits a revision -----------------------------------


def tree_checkout(revision: RubricRevision, *backends: Backend | None) -> Path | None:
    """The repository checkout the tree judge reads ``needs_tree`` blockers from (its git objects at the
    task's base commit, never its work tree), or None when none of ``backends`` can use tree tools, the
    revision has no such blocker, or the repository's checkout does not hold the task's base commit here
    (those blockers are then not measured, and the grade says why)."""
    if not any(b is not None and supports_tree(b) for b in backends):
        return None
    if not revision.items.filter(needs_tree=True).exists():
        return None
    return held_checkout(revision.task, "tree judge")


def held_checkout(task: Task, use: str) -> Path | None:
    """The repository's checkout when it holds the task's base commit here, else None (logged, naming
    ``use``): a checkout this worker does not hold, or not fetched that far, leaves out what needs it
    rather than failing every calibration and sweep of the repository."""
    if not (task.repository.checkout_path and task.base_commit):
        return None
    checkout = Path(task.repository.checkout_path)
    try:
        BaseTree(checkout, task.base_commit)
    except InputError as exc:
        log.warning("%s not used for task %s: %s", use, task, exc)
        return None
    return checkout


def judges_of(revision: RubricRevision) -> JudgeSetting:
    judges = JudgeSetting.objects.filter(repository_id=revision.task.repository_id).first()
    if judges is None:
        raise TransitionError(f"repository {revision.task.repository} has no judges set: set them first")
    return judges


def spent_this_month(repository_id: int) -> float:
    """The repository's judge spend since the first of the month: calibrations and sweeps."""
    start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    calibrations = CalibrationRun.objects.filter(
        revision__task__repository_id=repository_id, created_at__gte=start
    ).aggregate(total=Sum("cost_usd"))["total"]
    return float(calibrations or 0.0) + sweep_spend_this_month(repository_id)


def sweep_spend_this_month(repository_id: int) -> float:
    """The repository's sweeps' judge spend since the first of the month (here, not in sweeps.py, which
    builds on this module)."""
    start = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    total = Sweep.objects.filter(repository_id=repository_id, created_at__gte=start).aggregate(
        total=Sum("cost_usd")
    )["total"]
    return float(total or 0.0)


def _same_content_runs(revision: RubricRevision, runs: Any) -> list[CalibrationRun]:
    """``runs`` of the revision's exact content (as stored now) with the primary judge's decoding, latest
    first."""
    judges = JudgeSetting.objects.filter(repository_id=revision.task.repository_id).first()
    if judges is None:
        return []
    inputs = inputs_sha256(calibration_files(revision))
    rubric = revision.rubric_sha256()
    return [
        run
        for run in runs.order_by("-finished_at", "-pk")
        if run.rubric_sha256 == rubric and run.inputs_sha256 == inputs and run.decoding == judges.decoding
    ]


def injection_refusal(revision: RubricRevision) -> CalibrationRun | None:
    """The latest calibration of the revision's exact content with the repository's primary judge whose
    injection suite found an attack success; None when there is none. While there is one, nothing admits
    the revision with that judge."""
    revision = RubricRevision.objects.select_related("task__repository").get(pk=revision.pk)
    judges = JudgeSetting.objects.filter(repository_id=revision.task.repository_id).first()
    if judges is None:
        return None
    found = CalibrationRun.objects.filter(revision=revision, judge=judges.judge, attack_successes__gt=0)
    runs = _same_content_runs(revision, found)
    return runs[0] if runs else None


def refusal_text(run: CalibrationRun) -> str:
    kinds = sorted(set(run.rows.filter(outcome="attack_success").values_list("payload_kind", flat=True)))
    return (
        f"admission refused: calibration #{run.pk} found {run.attack_successes} attack "
        f"success{'es' if run.attack_successes != 1 else ''} in the injection suite with judge {run.judge} "
        f"({', '.join(kinds)}): a payload planted in a lazy diff talked this judge out of a blocker. Use a "
        "judge that resists it (another model, or a stricter one), then calibrate again."
    )


def passing_run(revision: RubricRevision, *, with_suite: bool = False) -> CalibrationRun | None:
    """The latest passing calibration of the revision's exact content (rubric.json and every input file)
    with the repository's primary judge and its decoding (``with_suite``: one that ran the injection
    suite); None when there is none, or when a run of that content and judge found an attack success
    (:func:`injection_refusal`)."""
    # As stored now, not as the caller loaded it: the task's files may have changed since.
    revision = RubricRevision.objects.select_related("task__repository").get(pk=revision.pk)
    if injection_refusal(revision) is not None:
        return None
    passing = CalibrationRun.passing_for(revision)
    if with_suite:
        passing = passing.filter(injection_suite=True)
    runs = _same_content_runs(revision, passing)
    return runs[0] if runs else None
