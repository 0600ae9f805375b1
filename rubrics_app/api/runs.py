"""Agent runs: push a batch (the run import the zip upload uses: all or nothing, every problem named,
the same files under the same key changing nothing), list them with filters and cursor paging, one run
with its grades."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Prefetch
from django.http import HttpRequest
from ninja import Router

from grading import MAX_INPUT_BYTES
from rubrics_app.access import get_repository_for_token
from rubrics_app.api import paging
from rubrics_app.api.auth import token_of
from rubrics_app.api.problems import ApiProblem, FieldIssue, Problem
from rubrics_app.api.schemas import (
    GradeOut,
    GradeSummary,
    JudgeOut,
    RunDetail,
    RunIn,
    RunOut,
    RunPage,
    RunPushIn,
    RunPushOut,
    VerdictOut,
)
from rubrics_app.models import MAX_RUN_SOURCE, AgentRun, JudgeGrade, Role, RunGrade
from rubrics_app.services.rubrics.files import ImportFailed, ImportProblem
from rubrics_app.services.runs.files import DIFF_FILE, READ_FILES, RunFiles
from rubrics_app.services.runs.store import import_runs

router = Router(tags=["runs"])
ERRORS: dict[int, type[Problem]] = {401: Problem, 403: Problem, 404: Problem, 422: Problem, 429: Problem}


def _decoded(index: int, run: RunIn, issues: list[FieldIssue]) -> RunFiles | None:
    where = f"runs[{index}]"
    if len(run.name) > MAX_RUN_SOURCE:
        issues.append(FieldIssue(field=f"{where}.name", message=f"longer than {MAX_RUN_SOURCE} characters"))
    data: dict[str, bytes] = {}
    for file, text in run.files.items():
        field = f"{where}.files.{file}"
        if file not in READ_FILES:
            issues.append(FieldIssue(field=field, message=f"not a run file (one of {', '.join(READ_FILES)})"))
            continue
        if run.encoding == "base64":
            try:
                content = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                issues.append(FieldIssue(field=field, message="not base64"))
                continue
        else:
            content = text.encode("utf-8", errors="surrogateescape")
        bound = settings.ZIP_MAX_MEMBER_BYTES if file == DIFF_FILE else MAX_INPUT_BYTES
        if len(content) > bound:
            issues.append(FieldIssue(field=field, message=f"larger than {bound} bytes; refused"))
            continue
        data[file] = content
    if len(issues):
        return None
    diff = data.pop(DIFF_FILE, None)
    digest = (hashlib.sha256(diff).hexdigest(), len(diff)) if diff is not None else None
    return RunFiles(run.name, data, digest, lambda: diff or b"")


@router.post("/repositories/{name}/runs", response={200: RunPushOut, 413: Problem, **ERRORS})
def push_runs(request: HttpRequest, name: str, push: RunPushIn) -> RunPushOut:
    """Import a batch of runs, all or nothing: a run already stored under the same (task, arm, model,
    repetition) with the same files is left as it is (pushing again is safe); with other files, a problem.
    Maintainers only, as the import page."""
    access = get_repository_for_token(token_of(request), name, Role.MAINTAINER)
    limit = settings.API_MAX_RUNS_PER_PUSH
    if len(push.runs) > limit:
        raise ApiProblem(
            413,
            "Too many runs",
            f"{len(push.runs)} runs in one push; the limit is {limit}",
            [FieldIssue(field="runs", message=f"at most {limit} per push")],
        )
    issues: list[FieldIssue] = []
    decoded = [_decoded(i, run, issues) for i, run in enumerate(push.runs)]
    if issues:
        raise ApiProblem(422, "Invalid runs", f"{len(issues)} problem(s); nothing imported", issues)
    labels = {run.name: f"runs[{i}]" for i, run in enumerate(push.runs)}

    def read(problems: list[ImportProblem]) -> Iterator[RunFiles]:
        return iter([files for files in decoded if files is not None])

    try:
        outcome = import_runs(access.repository, read, "", access)
    except ImportFailed as exc:
        raise ApiProblem(
            422,
            "Runs not imported",
            f"{len(exc.problems)} problem(s); nothing imported",
            [FieldIssue(field=_field(p, labels), message=p.message) for p in exc.problems],
        ) from None
    return RunPushOut(
        created=[r.pk for r in outcome.created],
        unchanged=[r.pk for r in outcome.unchanged],
        grades_created=outcome.grades_created,
        grades_unchanged=outcome.grades_unchanged,
    )


def _field(problem: ImportProblem, labels: dict[str, str]) -> str:
    """A problem of the import ("name/run.json", "field") as the request's field: runs[i].files.run.json."""
    run, _, file = problem.file.rpartition("/")
    where = labels.get(run)
    if where is None:
        return ": ".join(p for p in (problem.file, problem.path) if p) or "runs"
    field = f"{where}.files.{file}" if file else where
    return f"{field}: {problem.path}" if problem.path else field


def _summary(grade: RunGrade | None) -> GradeSummary | None:
    if grade is None:
        return None
    return GradeSummary(
        id=grade.pk,
        status=grade.status,
        mergeable=grade.mergeable,
        merge_score=grade.merge_score,
        provisional=grade.provisional,
    )


def _run_out(run: AgentRun, current: RunGrade | None) -> dict[str, object]:
    return {
        "id": run.pk,
        "task": run.task.task_id,
        "arm": run.arm,
        "model": run.model,
        "repetition": run.repetition,
        "prompt_style": run.prompt_style,
        "passed": run.passed,
        "diff_sha256": run.diff_sha256,
        "source": run.source,
        "imported_at": run.imported_at,
        "current_grade": _summary(current),
    }


@router.get("/repositories/{name}/runs", response={200: RunPage, **ERRORS})
def list_runs(
    request: HttpRequest,
    name: str,
    task: str = "",
    arm: str = "",
    model: str = "",
    cursor: str | None = None,
    limit: int = 100,
) -> RunPage:
    """Runs in the order they were stored, ``limit`` a page (at most API_PAGE_MAX); then ``next_cursor``."""
    access = get_repository_for_token(token_of(request), name)
    limit = paging.checked_limit(limit)
    runs = AgentRun.objects.filter(task__repository=access.repository, pk__gt=paging.after(cursor))
    for field, value in (("task__task_id", task), ("arm", arm), ("model", model)):
        if value:
            runs = runs.filter(**{field: value})
    page = list(
        runs.select_related("task")
        .prefetch_related(
            Prefetch("grades", queryset=RunGrade.objects.filter(is_current=True), to_attr="current")
        )
        .order_by("pk")[: limit + 1]
    )
    more = len(page) > limit
    page = page[:limit]
    items = [RunOut.model_validate(_run_out(r, next(iter(r.current), None))) for r in page]
    return RunPage(items=items, next_cursor=str(page[-1].pk) if more else None)


@router.get("/repositories/{name}/runs/{run_id}", response={200: RunDetail, **ERRORS})
def run_detail(request: HttpRequest, name: str, run_id: int) -> RunDetail:
    access = get_repository_for_token(token_of(request), name)
    run = (
        AgentRun.objects.select_related("task").filter(task__repository=access.repository, pk=run_id).first()
    )
    if run is None:
        raise ApiProblem(
            404,
            "Not found",
            f"{name} has no run {run_id}",
            [FieldIssue(field="path.run_id", message="no such run")],
        )
    grades = list(
        RunGrade.objects.filter(run=run)
        .select_related("revision")
        .prefetch_related(
            Prefetch("judges", queryset=JudgeGrade.objects.prefetch_related("verdicts").order_by("role"))
        )
        .order_by("-created_at", "-pk")
    )
    current = next((g for g in grades if g.is_current), None)
    return RunDetail.model_validate(
        {
            **_run_out(run, current),
            "grades": [
                GradeOut(
                    id=g.pk,
                    rubric_sha256=g.rubric_sha256,
                    revision=g.revision.number if g.revision is not None else None,
                    primary_judge=g.primary_judge,
                    source=g.source,
                    status=g.status,
                    mergeable=g.mergeable,
                    merge_score=g.merge_score,
                    provisional=g.provisional,
                    is_current=g.is_current,
                    created_at=g.created_at,
                    judges=[
                        JudgeOut(
                            role=j.role,
                            judge=j.judge,
                            model_id=j.model_id,
                            scripted=j.scripted,
                            failure=j.failure,
                            verdicts=[
                                VerdictOut(
                                    item_id=v.item_id,
                                    kind=v.kind,
                                    verdict=v.verdict,
                                    reason=v.reason,
                                    locations=list(v.locations),
                                )
                                for v in j.verdicts.all()
                            ],
                        )
                        for j in g.judges.all()
                    ],
                )
                for g in grades
            ],
        }
    )
