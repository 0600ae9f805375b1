"""A job's page: what it is doing, and how it ended (a lost worker included). Under htmx it is the status
partial, polled while the job runs; the poll stops when the job has ended."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET
from pydantic import BaseModel

from rubrics_app.access import get_repository_for_user
from rubrics_app.models import Job, JobFile, JobResult, RubricDraft, Sweep, Task
from rubrics_app.views.common import HtmxHttpRequest, polled_page

PAGE = "rubrics/job_detail.html"


def _text(value: Any) -> str:
    """One value of a result as a reader reads it: a nested record as its fields, never a Python repr."""
    if isinstance(value, BaseModel):
        return "; ".join(f"{name}: {_text(getattr(value, name))}" for name in type(value).model_fields)
    return "none" if value is None else str(value)


def result_facts(result: JobResult | None) -> list[tuple[str, str, list[str] | None]]:
    """A result's fields in their model's order, each as (name, text, items): a list field has its items
    (the page lists them) and no text; any other field is one line of text."""
    facts: list[tuple[str, str, list[str] | None]] = []
    for name in type(result).model_fields if result is not None else ():
        value = getattr(result, name)
        if isinstance(value, list):
            facts.append((name, "", [_text(item) for item in value]))
        else:
            facts.append((name, _text(value), None))
    return facts


def _task_of(job: Job) -> Task | None:
    """The task a job works for, for the breadcrumbs: its revision's, its sweep's or its drafting's."""
    if job.revision is not None:
        return job.revision.task
    sweep = Sweep.objects.filter(job=job).select_related("task", "revision__task").first()
    if sweep is not None:
        return sweep.task or (sweep.revision.task if sweep.revision else None)
    draft = RubricDraft.objects.filter(job=job).select_related("task").first()
    return draft.task if draft is not None else None


@require_GET
@login_required
def job_detail(request: HtmxHttpRequest, repo_pk: int, job_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    job = get_object_or_404(
        Job.objects.filter(repository=access.repository).select_related("revision__task", "created_by"),
        pk=job_pk,
    )
    context = {
        "access": access,
        "repository": access.repository,
        "job": job,
        "result": (result := job.typed_result()),  # the kind's model (models.jobs.RESULT_MODELS), by field
        "result_facts": result_facts(result),
        "task": _task_of(job),
        "job_files": list(JobFile.objects.filter(job=job).defer("data")),
    }
    return polled_page(request, PAGE, "job-status", context, job.is_finished)


@require_GET
@login_required
def job_file(request: HtmxHttpRequest, repo_pk: int, job_pk: int, file_pk: int) -> HttpResponse:
    """A file the job made (a sweep's export), to whoever may see the job."""
    access = get_repository_for_user(request, repo_pk)
    file = get_object_or_404(JobFile, job__repository=access.repository, job_id=job_pk, pk=file_pk)
    response = HttpResponse(bytes(file.data), content_type=file.content_type)
    # The name is download_name's: repository names and filter values keep only [A-Za-z0-9._-].
    response["Content-Disposition"] = f'attachment; filename="{file.name}"'
    return response
