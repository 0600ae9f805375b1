"""Sweeps (started with the options of ``manage.py sweep``, and their progress), jobs, and the report."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Query, Router, Status

from grading import ItemRow, RunRow, download_name, rows_file
from rubrics_app.access import get_repository_for_token
from rubrics_app.api.auth import token_of
from rubrics_app.api.problems import ApiProblem, FieldIssue, Problem
from rubrics_app.api.schemas import (
    JobOut,
    ReportItemsOut,
    ReportRowsQuery,
    ReportRunsOut,
    SweepIn,
    SweepOut,
)
from rubrics_app.models import Job, Role, RubricRevision, Sweep, Task
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.reports.downloads import download_provenance, item_rows_of, run_rows
from rubrics_app.services.reports.report import FILTERS, clean_filters, repository_report
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.export import export_of
from rubrics_app.services.sweeps.run import SweepError, SweepRequest

router = Router(tags=["sweeps, jobs and the report"])
ERRORS: dict[int, type[Problem]] = {401: Problem, 403: Problem, 404: Problem, 422: Problem, 429: Problem}


def _job_out(job: Job) -> JobOut:
    return JobOut(
        id=job.pk,
        kind=job.kind,
        status=job.status,
        progress=job.progress,
        error=job.error,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        result=job.result if isinstance(job.result, dict) else None,
    )


def _sweep_out(sweep: Sweep) -> SweepOut:
    assert sweep.job is not None
    return SweepOut(
        id=sweep.pk,
        scope=sweep.scope_label(),
        judge=sweep.judge,
        scripted=sweep.scripted,
        batch=sweep.batch,
        provisional=sweep.provisional,
        total_runs=sweep.total_runs,
        done_runs=sweep.done_runs,
        graded_runs=sweep.graded_runs,
        judge_failures=sweep.judge_failures,
        calls=sweep.calls,
        cost_usd=sweep.cost_usd,
        export=sweep.export,
        export_ready=sweep.export and export_of(sweep) is not None,
        job=_job_out(sweep.job),
    )


@router.post("/repositories/{name}/sweeps", response={201: SweepOut, 503: Problem, **ERRORS})
def start_sweep(request: HttpRequest, name: str, options: SweepIn) -> Status[SweepOut]:
    """Send the sweep job, as ``manage.py sweep`` does (maintainers, as the sweep form)."""
    access = get_repository_for_token(token_of(request), name, Role.MAINTAINER)
    task = None
    if options.task is not None:
        task = Task.objects.filter(repository=access.repository, task_id=options.task).first()
        if task is None:
            raise ApiProblem(
                422,
                "Invalid sweep",
                f"{name} has no task {options.task!r}",
                [FieldIssue(field="task", message="no such task")],
            )
    revision = None
    if options.revision is not None:
        revision = (
            RubricRevision.objects.filter(pk=options.revision, task__repository=access.repository)
            .select_related("task")
            .first()
        )
        if revision is None:
            raise ApiProblem(
                422,
                "Invalid sweep",
                f"{name} has no revision {options.revision}",
                [FieldIssue(field="revision", message="no such revision")],
            )
    request_ = SweepRequest(
        task=task,
        arm=options.arm,
        model=options.model,
        revision=revision,
        batch=options.batch,
        second_sample=options.second_sample,
        regrade_sample=options.regrade_sample,
        export=options.export,
    )
    try:
        sweep = sweeps.start(access.repository, access, request_)
    except QueueUnreachable as exc:
        raise ApiProblem(
            503,
            "Job queue unreachable",
            "the job queue is unreachable; nothing was started",
            headers={"Retry-After": "30"},
        ) from exc
    except (SweepError, PermissionDenied) as exc:
        raise ApiProblem(422, "Sweep not started", str(exc)) from None
    sweep = Sweep.objects.select_related("job", "task").get(pk=sweep.pk)
    return Status(201, _sweep_out(sweep))


@router.get("/repositories/{name}/sweeps/{sweep_id}", response={200: SweepOut, **ERRORS})
def sweep_status(request: HttpRequest, name: str, sweep_id: int) -> SweepOut:
    return _sweep_out(_sweep_of(request, name, sweep_id))


def _sweep_of(request: HttpRequest, name: str, sweep_id: int) -> Sweep:
    access = get_repository_for_token(token_of(request), name)
    sweep = (
        Sweep.objects.select_related("job", "task").filter(repository=access.repository, pk=sweep_id).first()
    )
    if sweep is None:
        raise ApiProblem(
            404,
            "Not found",
            f"{name} has no sweep {sweep_id}",
            [FieldIssue(field="path.sweep_id", message="no such sweep")],
        )
    return sweep


@router.get(
    "/repositories/{name}/sweeps/{sweep_id}/export",
    response={200: None, **ERRORS},
    openapi_extra={
        "responses": {
            200: {
                "description": "the export: the runs in the sweep's scope as run folders, in a zip",
                "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
            }
        }
    },
)
def sweep_export(request: HttpRequest, name: str, sweep_id: int) -> HttpResponse:
    """The sweep's export (asked for with ``export``), once its job is done; 404 before."""
    sweep = _sweep_of(request, name, sweep_id)
    made = export_of(sweep) if sweep.export else None
    if made is None:
        why = "asked for no export" if not sweep.export else "has not written its export yet"
        raise ApiProblem(404, "Not found", f"sweep {sweep_id} {why}")
    response = HttpResponse(bytes(made.data), content_type=made.content_type)
    response["Content-Disposition"] = f'attachment; filename="{made.name}"'
    return response


@router.get("/repositories/{name}/jobs/{job_id}", response={200: JobOut, **ERRORS})
def job_status(request: HttpRequest, name: str, job_id: int) -> JobOut:
    access = get_repository_for_token(token_of(request), name)
    job = Job.objects.filter(repository=access.repository, pk=job_id).first()
    if job is None:
        raise ApiProblem(
            404,
            "Not found",
            f"{name} has no job {job_id}",
            [FieldIssue(field="path.job_id", message="no such job")],
        )
    return _job_out(job)


@router.get("/repositories/{name}/report", response={200: dict[str, Any], **ERRORS})
def report(
    request: HttpRequest, name: str, task: str = "", arm: str = "", model: str = "", prompt_style: str = ""
) -> dict[str, Any]:
    """The report's JSON under the filters: the same as the report page's JSON download."""
    access = get_repository_for_token(token_of(request), name)
    given = {"task": task, "arm": arm, "model": model, "prompt_style": prompt_style}
    result = repository_report(access.repository, clean_filters({k: given[k] for k in FILTERS}))
    return result.report.to_json_dict()


_ROW_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def _row_files(model: str) -> dict[int, Any]:
    """The 200 answer of a rows operation: the model as JSON, or the rows file (openapi_extra replaces the
    answer's content whole, so the JSON one is named again). Keyed by the int 200 as ninja keys its own
    answers: a "200" beside it would be a second "200" key in the JSON schema, which Swagger UI refuses."""
    return {
        200: {
            "description": "format=json: the provenance and the rows; format=jsonl or csv: the report page's "
            "download of the same rows, streamed",
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}},
                "application/jsonl": {"schema": {"type": "string"}},
                "text/csv": {"schema": {"type": "string"}},
            },
        }
    }


def _report_rows(
    request: HttpRequest, name: str, kind: str, query: ReportRowsQuery
) -> dict[str, Any] | StreamingHttpResponse:
    """The report page's runs or items download under the same filters: JSON (provenance and rows), or the
    JSONL or CSV file itself (grading.rows_file), named as the page names it."""
    access = get_repository_for_token(token_of(request), name)
    filters = clean_filters(query.model_dump(include=set(FILTERS)))
    repository = access.repository
    provenance = download_provenance(repository, filters, repository_report(repository, filters).report)
    rows = run_rows(repository, filters) if kind == "runs" else item_rows_of(repository, filters)
    if query.format == "json":
        return {"provenance": provenance, "rows": list(rows)}
    model = RunRow if kind == "runs" else ItemRow
    body = rows_file(rows, model, provenance, query.format)
    response = StreamingHttpResponse(body, content_type=_ROW_TYPES[query.format])
    response["Content-Disposition"] = (
        f'attachment; filename="{download_name(repository.name, kind, filters, query.format)}"'
    )
    return response


@router.get(
    "/repositories/{name}/report/runs",
    response={200: ReportRunsOut, **ERRORS},
    openapi_extra={"responses": _row_files("ReportRunsOut")},
)
def report_runs(request: HttpRequest, name: str, query: Query[ReportRowsQuery]) -> Any:
    """One row per run of the report under the filters (``rubric report --runs-out``'s columns)."""
    return _report_rows(request, name, "runs", query)


@router.get(
    "/repositories/{name}/report/items",
    response={200: ReportItemsOut, **ERRORS},
    openapi_extra={"responses": _row_files("ReportItemsOut")},
)
def report_items(request: HttpRequest, name: str, query: Query[ReportRowsQuery]) -> Any:
    """One row per run × item × judge of the report under the filters, the human labels beside."""
    return _report_rows(request, name, "items", query)
