"""The labels beside the review queue: the maintainers' adjudication list (pairs whose reviewers disagree),
the repository's number of labels per pair, and the labels' download and upload (services.runs.labels)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET

from grading import MAX_LABEL_FILE_BYTES, write_label_rows
from rubrics_app.access import get_repository_for_user
from rubrics_app.models import Role
from rubrics_app.services.runs import audit_sample
from rubrics_app.services.runs import queue as review_queue
from rubrics_app.services.runs.labels_io import LabelImportFailed, import_labels, label_rows
from rubrics_app.views.common import HtmxHttpRequest, require_post

MAX_LABELS_PER_PAIR = 5


@require_GET
@login_required
def adjudication(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """The pairs whose reviewers gave different verdicts and that no maintainer ruled on yet: each with
    every reviewer's label and a link to the pair, where a maintainer adjudicates."""
    access = get_repository_for_user(request, repo_pk)
    contested = review_queue.adjudication_list(access.repository)
    rows = [
        (
            pair,
            reverse("rubrics:queue_entry", args=[access.repository.pk, pair.grade_id, pair.item_id]),
        )
        for pair in contested
    ]
    return render(
        request,
        "rubrics/queue_adjudication.html",
        {
            "access": access,
            "repository": access.repository,
            "rows": rows,
            "limit": len(rows) >= review_queue.ADJUDICATION_LIMIT,
            "agreement": review_queue.human_agreement(access.repository),
        },
    )


@require_post("sets how many reviewers label each pair of the review queue", back="rubrics:queue")
@login_required
def labels_per_pair(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    raw = str(request.POST.get("labels_per_pair", "")).strip()
    back = reverse("rubrics:queue", args=[access.repository.pk])
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LABELS_PER_PAIR:
        messages.error(
            request, f"Labels per pair: a whole number from 1 to {MAX_LABELS_PER_PAIR}, not {raw!r}."
        )
        return HttpResponseRedirect(back)
    access.repository.labels_per_pair = int(raw)
    access.repository.save(update_fields=["labels_per_pair"])
    messages.success(request, f"Each pair now asks for {raw} reviewer label{pluralize(int(raw))}.")
    return HttpResponseRedirect(back)


@require_post("draws runs for the audit queue", back="rubrics:queue")
@login_required
def audit_draw(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Draw more judged runs, uniformly at random within each arm × model stratum, into the Audit queue."""
    access = get_repository_for_user(request, repo_pk, role=Role.REVIEWER)
    raw = str(request.POST.get("per_stratum", "")).strip()
    back = reverse("rubrics:queue", args=[access.repository.pk]) + "?kind=audit"
    if not raw.isdigit() or not 1 <= int(raw) <= audit_sample.MAX_PER_STRATUM:
        messages.error(
            request,
            f"Runs per stratum: a whole number from 1 to {audit_sample.MAX_PER_STRATUM}, not {raw!r}.",
        )
        return HttpResponseRedirect(back)
    drawn = audit_sample.draw(access.repository, int(raw), access)
    if drawn.runs:
        messages.success(
            request,
            f"Drew {drawn.runs} run{pluralize(drawn.runs)} from {drawn.strata} arm × model "
            f"strat{pluralize(drawn.strata, 'um,a')} for the audit.",
        )
    else:
        messages.info(request, "Every judged run is drawn already: nothing left to draw.")
    return HttpResponseRedirect(back)


@require_GET
@login_required
def labels_download(request: HtmxHttpRequest, repo_pk: int, fmt: str) -> StreamingHttpResponse:
    """Every label of the repository as the labels file (CSV or JSONL), streamed."""
    access = get_repository_for_user(request, repo_pk)
    if fmt not in ("csv", "jsonl"):
        raise Http404("labels come as csv or jsonl")
    rows = write_label_rows(label_rows(access.repository), "csv" if fmt == "csv" else "jsonl")
    response = StreamingHttpResponse(
        rows, content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/jsonl; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{access.repository.name}-labels.{fmt}"'
    return response


MAX_PROBLEMS_SHOWN = 50


@require_post("imports a labels file into the review queue", back="rubrics:queue")
@login_required
def labels_upload(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Labels made elsewhere (the labels file), all or nothing: every bad line is named."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    back = reverse("rubrics:queue", args=[access.repository.pk])
    upload = request.FILES.get("labels")
    if upload is None:
        messages.error(request, "Labels upload: choose a .csv or .jsonl file.")
        return HttpResponseRedirect(back)
    name = str(upload.name or "labels")
    if upload.size is not None and upload.size > MAX_LABEL_FILE_BYTES:
        messages.error(request, f"{name}: larger than {MAX_LABEL_FILE_BYTES} bytes; nothing imported.")
        return HttpResponseRedirect(back)
    try:
        done = import_labels(access.repository, upload.read(MAX_LABEL_FILE_BYTES + 1), name, access)
    except LabelImportFailed as error:
        shown = error.problems[:MAX_PROBLEMS_SHOWN]
        more = len(error.problems) - len(shown)
        messages.error(
            request,
            f"{len(error.problems)} problem{pluralize(len(error.problems))}, nothing imported: "
            + "; ".join(shown)
            + (f"; and {more} more" if more else ""),
        )
        return HttpResponseRedirect(back)
    messages.success(
        request, f"{done.created} label{pluralize(done.created)} added, {done.replaced} replaced from {name}."
    )
    return HttpResponseRedirect(back)
