"""Repositories, their tasks, revisions and the admitted rubric of each task."""

from __future__ import annotations

import base64
import hashlib

from django.http import HttpRequest
from ninja import Router

from rubrics_app.access import get_repository_for_token, repositories_for_token
from rubrics_app.api.auth import token_of
from rubrics_app.api.problems import ApiProblem, FieldIssue, Problem
from rubrics_app.api.schemas import AdmittedOut, FileOut, RepositoryOut, RevisionOut, TaskOut
from rubrics_app.models import RevisionStatus, Role, RubricRevision, Task
from rubrics_app.services.rubrics.exports import export_files
from rubrics_app.services.rubrics.rereview import disputed_blockers

router = Router(tags=["repositories"])
ERRORS: dict[int, type[Problem]] = {401: Problem, 403: Problem, 404: Problem, 422: Problem, 429: Problem}


@router.get("/repositories", response={200: list[RepositoryOut], **ERRORS})
def list_repositories(request: HttpRequest) -> list[RepositoryOut]:
    return [
        RepositoryOut(name=a.repository.name, role=str(a.role))
        for a in repositories_for_token(token_of(request))
    ]


@router.get("/repositories/{name}/tasks", response={200: list[TaskOut], **ERRORS})
def list_tasks(request: HttpRequest, name: str) -> list[TaskOut]:
    access = get_repository_for_token(token_of(request), name)
    admitted = dict(
        RubricRevision.objects.filter(
            task__repository=access.repository, status=RevisionStatus.ADMITTED
        ).values_list("task_id", "number")
    )
    return [
        TaskOut(
            task_id=t.task_id,
            base_commit=t.base_commit,
            base_date=t.base_date,
            admitted_revision=admitted.get(t.pk),
        )
        for t in Task.objects.filter(repository=access.repository).order_by("task_id")
    ]


def _task(request: HttpRequest, name: str, task_id: str, role: Role = Role.VIEWER) -> Task:
    access = get_repository_for_token(token_of(request), name, role)
    task = Task.objects.filter(repository=access.repository, task_id=task_id).first()
    if task is None:
        raise ApiProblem(
            404,
            "Not found",
            f"{name} has no task {task_id!r}",
            [FieldIssue(field="path.task_id", message="no such task")],
        )
    return task


@router.get("/repositories/{name}/tasks/{task_id}/revisions", response={200: list[RevisionOut], **ERRORS})
def list_revisions(request: HttpRequest, name: str, task_id: str) -> list[RevisionOut]:
    task = _task(request, name, task_id)
    return [
        RevisionOut(number=r.number, status=r.status, origin=r.origin, created_at=r.created_at)
        for r in RubricRevision.objects.filter(task=task).order_by("number")
    ]


@router.get(
    "/repositories/{name}/tasks/{task_id}/admitted", response={200: AdmittedOut, 409: Problem, **ERRORS}
)
def admitted_rubric(
    request: HttpRequest, name: str, task_id: str, confirm_disputed: bool = False
) -> AdmittedOut:
    """The admitted revision's rubric.json and calib diffs, as the export writes them (maintainers, as the
    export buttons). A revision with openly disputed blockers needs ``confirm_disputed=true``."""
    access = get_repository_for_token(token_of(request), name, Role.MAINTAINER)
    task = _task(request, name, task_id, Role.MAINTAINER)
    revision = RubricRevision.objects.filter(task=task, status=RevisionStatus.ADMITTED).first()
    if revision is None:
        raise ApiProblem(404, "Not found", f"task {task_id!r} has no admitted revision")
    disputed = disputed_blockers([revision.pk]).get(revision.pk, [])
    if disputed and not confirm_disputed:
        raise ApiProblem(
            409,
            "Disputed blockers",
            f"blockers {', '.join(disputed)} of revision {revision.number} are disputed; "
            "ask again with confirm_disputed=true to pull it anyway",
            [
                FieldIssue(
                    field="query.confirm_disputed", message="needed: the revision has disputed blockers"
                )
            ],
        )
    files = export_files(revision, by=access)
    return AdmittedOut(
        task_id=task.task_id,
        revision=revision.number,
        sha256=hashlib.sha256(files["rubric.json"]).hexdigest(),
        files=[FileOut(path=p, base64=base64.b64encode(data).decode("ascii")) for p, data in files.items()],
    )
