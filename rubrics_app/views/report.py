"""The report page (§7): mergeable against test-pass per arm and model, filterable, with its CSV and JSON
downloads and the training-cutoffs form.

Everyone with a role reads the report; maintainers edit the cutoffs; anyone without a role gets 404.
The numbers come from ``grading.report`` through services.reports.report (cached: see there).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET

from grading import (
    INTERVALS_TEXT,
    REPEATED_WARNINGS,
    ItemRow,
    Notes,
    Provenance,
    Report,
    RunRow,
    contrast_table,
    corrected_contrast_label,
    corrected_contrast_text,
    download_name,
    metric_lines,
    render_report_html,
    report_csv,
    rows_file,
    standalone,
    warning_kind,
)
from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms.report import CutoffsForm
from rubrics_app.models import QueueKind, Role
from rubrics_app.report_chart import blocker_histogram, forest_plot, rates_chart
from rubrics_app.services.reports.downloads import download_provenance, item_rows_of, run_rows, runs_export
from rubrics_app.services.reports.report import (
    ReportResult,
    blocker_criteria,
    clean_filters,
    filter_choices,
    page_report,
    report_changed,
    repository_report,
)
from rubrics_app.services.runs import queue as review_queue
from rubrics_app.views.common import HtmxHttpRequest, require_post
from rubrics_app.views.kept_forms import form_key, kept_form, redirect_with_form
from rubrics_app.views.revisions import redirect_to

# The page lists this many (sorted by task); the review queue and the JSON download hold every one.
MAX_DISAGREEMENTS_SHOWN = 200


def _queue_url(access: RepositoryAccess, base: str | None = None, **params: str) -> str:
    """The review queue's URL with these filters; ``base``: its path, when the caller already has it
    (the report page links a thousand agreement rows)."""
    query = urlencode({"kind": QueueKind.JUDGES, **{k: v for k, v in params.items() if v}})
    return f"{base or reverse('rubrics:queue', args=[access.repository.pk])}?{query}"


def warning_lines(warnings: list[str]) -> list[tuple[str, list[str]]]:
    """The page's warning lines: a warning said once is its own line (no members); two or more of one
    repeated kind (a warning per task, arm and model, ...) are one line with their count, at the place of
    the first, and every one of them as members (the page lists them in a <details>)."""
    kinds = [warning_kind(w) for w in warnings]
    members: dict[str, list[str]] = {}
    for warning, kind in zip(warnings, kinds, strict=True):
        if kind is not None:
            members.setdefault(kind, []).append(warning)
    lines: list[tuple[str, list[str]]] = []
    folded: set[str] = set()
    for warning, kind in zip(warnings, kinds, strict=True):
        if kind is None or len(members[kind]) == 1:
            lines.append((warning, []))
        elif kind not in folded:
            folded.add(kind)
            lines.append((f"{len(members[kind])} {REPEATED_WARNINGS[kind][1]}", members[kind]))
    return lines


def _page_context(
    access: RepositoryAccess, filters: dict[str, str], result: ReportResult, form: CutoffsForm | None = None
) -> dict[str, Any]:
    report = result.report
    pk = access.repository.pk
    query = urlencode(filters)
    queue_url = _queue_url(
        access, task=filters.get("task", ""), arm=filters.get("arm", ""), model=filters.get("model", "")
    )
    agreement_rows = [("mergeable", False, report.agreement.mergeable, queue_url, "review queue")]
    base = reverse("rubrics:queue", args=[pk])
    for item, a in report.agreement.items.items():
        task, _, item_id = item.partition("/")
        item_url = _queue_url(
            access, base, task=task, item=item_id, arm=filters.get("arm", ""), model=filters.get("model", "")
        )
        agreement_rows.append((item, True, a, item_url, "in the queue"))
    disagreements = []
    for d in report.disagreements[:MAX_DISAGREEMENTS_SHOWN]:
        grade = result.grade_of_run.get(d.run)
        url = reverse("rubrics:queue_entry", args=[pk, grade, d.item]) if grade is not None else None
        disagreements.append((d, f"{url}?kind={QueueKind.JUDGES}" if url else None))
    scripted = {j.judge for j in report.judges if j.scripted}
    failed = [t for t in report.tasks if t.failed_blockers]
    criteria = blocker_criteria(access.repository, [t.task for t in failed])
    figure = reverse("rubrics:report_figure", args=[pk])
    contrast_groups, contrast_notes = contrast_table(report.contrasts)
    return {
        "access": access,
        "repository": access.repository,
        "human_agreement": review_queue.human_agreement(access.repository),
        "filters": filters,
        "choices": filter_choices(access.repository),
        "result": result,
        "report": report,
        "warnings": report.warnings,
        "warning_lines": warning_lines(report.warnings),
        "forest": forest_plot(report.contrasts) if report.contrasts else None,
        "contrast_groups": contrast_groups,
        "contrast_notes": contrast_notes,
        # Filled as the template marks each table's reasons (rubrics_report.note_of), listed under it.
        "cell_notes": Notes(),
        "prompt_style_notes": Notes(),
        "contamination_notes": Notes(),
        "chart": rates_chart(report.cells, report.bootstrap) if report.cells else None,
        "intervals_text": INTERVALS_TEXT,
        "corrected_rows": [
            (c, corrected_contrast_label(c), corrected_contrast_text(c)) for c in report.corrected_contrasts
        ],
        "metric_lines": metric_lines(report.cells),
        "histograms": [
            (
                t,
                blocker_histogram(t, criteria.get(t.task)),
                f"{figure}?{urlencode({**filters, 'figure': 'blockers', 'task_histogram': t.task})}",
            )
            for t in failed
        ],
        "forest_url": f"{figure}?{urlencode({**filters, 'figure': 'contrasts'})}",
        "chart_url": f"{figure}?{urlencode({**filters, 'figure': 'rates'})}",
        "html_url": f"{reverse('rubrics:report_html', args=[pk])}?{query}",
        "agreement_rows": agreement_rows,
        "disagreements": disagreements,
        "queue_url": queue_url,
        "scripted_judges": scripted,
        "json_url": f"{reverse('rubrics:report_json', args=[pk])}?{query}",
        "csv_url": f"{reverse('rubrics:report_csv', args=[pk])}?{query}",
        "runs_url": reverse("rubrics:report_runs", args=[pk, "csv"]),
        "export_url": f"{reverse('rubrics:report_export', args=[pk])}?{query}",
        "row_urls": [
            (f"{kind} {fmt.upper()}", f"{reverse(f'rubrics:report_{kind}', args=[pk, fmt])}?{query}")
            for kind in ("runs", "items")
            for fmt in ("csv", "jsonl")
        ],
        "cutoffs_form": form
        or CutoffsForm(
            initial={"cutoffs": CutoffsForm.initial_text(access.repository.training_cutoffs or {})}
        ),
    }


@require_GET
@login_required
def report_page(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    filters = clean_filters(request.GET)
    shown = page_report(access.repository, filters)
    # Cutoffs that did not save come back here with their errors (views/kept_forms.py).
    form = kept_form(request, form_key("report_cutoffs", access.repository.pk), CutoffsForm).form
    context = _page_context(access, filters, shown.result, form)
    return render(request, "rubrics/report.html", {**context, "updating_since": shown.updating_since})


def _under_filters(
    request: HtmxHttpRequest, access: RepositoryAccess
) -> tuple[dict[str, str], Report, Provenance]:
    """A download's filters (from the query string), the repository's report under them and its provenance."""
    filters = clean_filters(request.GET)
    report = repository_report(access.repository, filters).report
    return filters, report, download_provenance(access.repository, filters, report)


def _download_name(access: RepositoryAccess, filters: dict[str, str], ext: str, kind: str = "report") -> str:
    # Repository names match [A-Za-z0-9._-]+ (name_validator) and download_name keeps only those
    # characters of a filter's value: nothing to quote in the header.
    return f'attachment; filename="{download_name(access.repository.name, kind, filters, ext)}"'


@require_GET
@login_required
def report_json(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    filters, report, provenance = _under_filters(request, access)
    # What `rubric report --json` prints for the same runs (its provenance aside).
    data = {**report.to_json_dict(), "provenance": provenance.model_dump(mode="json")}
    body = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    response = HttpResponse(body, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = _download_name(access, filters, "json")
    return response


@require_GET
@login_required
def report_csv_view(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    filters, report, provenance = _under_filters(request, access)
    body = f"# provenance {provenance.model_dump_json()}\n" + report_csv(report)
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = _download_name(access, filters, "csv")
    return response


_ROW_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def _rows_download(request: HtmxHttpRequest, repo_pk: int, fmt: str, kind: str) -> StreamingHttpResponse:
    access = get_repository_for_user(request, repo_pk)
    if fmt not in _ROW_TYPES:
        raise Http404("no such format")
    filters, report, provenance = _under_filters(request, access)
    if kind == "runs":
        body = rows_file(run_rows(access.repository, filters), RunRow, provenance, fmt)  # type: ignore[arg-type]
    else:
        body = rows_file(item_rows_of(access.repository, filters), ItemRow, provenance, fmt)  # type: ignore[arg-type]
    response = StreamingHttpResponse(body, content_type=_ROW_TYPES[fmt])
    response["Content-Disposition"] = _download_name(access, filters, fmt, kind)
    return response


@require_GET
@login_required
def report_export(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """The report's runs under the filters as run folders (run.json, metrics.json), task.json files, labels
    and cutoffs, in a zip: ``rubric report`` on them reproduces the report."""
    access = get_repository_for_user(request, repo_pk)
    filters, report, provenance = _under_filters(request, access)
    response = HttpResponse(
        runs_export(access.repository, filters, provenance), content_type="application/zip"
    )
    response["Content-Disposition"] = _download_name(access, filters, "zip", "runs")
    return response


@require_GET
@login_required
def report_runs(request: HtmxHttpRequest, repo_pk: int, fmt: str) -> StreamingHttpResponse:
    """One row per run of the report under the filters (``rubric report --runs-out``'s columns)."""
    return _rows_download(request, repo_pk, fmt, "runs")


@require_GET
@login_required
def report_items(request: HtmxHttpRequest, repo_pk: int, fmt: str) -> StreamingHttpResponse:
    """One row per run × item × judge of the report under the filters, human labels beside."""
    return _rows_download(request, repo_pk, fmt, "items")


@require_GET
@login_required
def report_html(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """The report under the filters as one self-contained HTML file, as `rubric report --html` writes it."""
    access = get_repository_for_user(request, repo_pk)
    filters = clean_filters(request.GET)
    report = repository_report(access.repository, filters).report
    criteria = blocker_criteria(access.repository, [t.task for t in report.tasks if t.failed_blockers])
    body = render_report_html(
        report,
        title=f"Mergeability report · {access.repository.name}",
        criteria=criteria,
        provenance=download_provenance(access.repository, filters, report),
    )
    response = HttpResponse(body, content_type="text/html; charset=utf-8")
    response["Content-Disposition"] = _download_name(access, filters, "html")
    return response


@require_GET
@login_required
def report_figure(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """One chart of the report under the filters as an .svg file ("download figure")."""
    access = get_repository_for_user(request, repo_pk)
    filters = clean_filters(request.GET)
    report = repository_report(access.repository, filters).report
    figure = request.GET.get("figure", "")
    if figure == "contrasts" and report.contrasts:
        svg, name = str(forest_plot(report.contrasts)), "contrasts"
    elif figure == "rates" and report.cells:
        svg, name = str(rates_chart(report.cells, report.bootstrap)), "rates"
    elif figure == "blockers":
        task = request.GET.get("task_histogram", "")
        row = next((t for t in report.tasks if t.task == task and t.failed_blockers), None)
        if row is None:
            raise Http404("no such histogram")
        criteria = blocker_criteria(access.repository, [task]).get(task)
        # Task ids match [A-Za-z0-9._-]+ (name_validator): safe in a file name.
        svg, name = str(blocker_histogram(row, criteria)), f"blockers-{task}"
    else:
        raise Http404("no such figure")
    provenance = download_provenance(access.repository, filters, report).model_dump_json()
    response = HttpResponse(standalone(svg, provenance), content_type="image/svg+xml; charset=utf-8")
    response["Content-Disposition"] = _download_name(access, filters, "svg", name)
    return response


@require_post("saves the repository's training cutoffs", back="rubrics:report")
@login_required
def report_cutoffs(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    form = CutoffsForm(request.POST)
    if form.is_valid():
        repository = access.repository
        cutoffs = form.cleaned_data["cutoffs"]
        repository.training_cutoffs = cutoffs or None
        repository.save(update_fields=["training_cutoffs"])
        report_changed(repository.pk)  # the cutoffs change the report: a worker computes it before it is read
        messages.success(request, f"Training cutoffs saved ({len(cutoffs)} model{pluralize(len(cutoffs))}).")
        return redirect_to(request, reverse("rubrics:report", args=[repository.pk]))
    url = reverse("rubrics:report", args=[access.repository.pk]) + "#cutoffs-form"
    return redirect_with_form(request, url, form_key("report_cutoffs", access.repository.pk), form)
