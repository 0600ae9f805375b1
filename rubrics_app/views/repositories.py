from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch, Q
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from rubrics_app.access import RepositoryAccess, get_repository_for_user, repositories_for_user
from rubrics_app.forms.rubrics import RubricUploadForm
from rubrics_app.forms.runs import RunsUploadForm, SweBenchUploadForm
from rubrics_app.models import RevisionStatus, RubricRevision, Task
from rubrics_app.services.runs.pages import repository_runs_summary
from rubrics_app.services.sweeps.run import recent_sweeps
from rubrics_app.views.common import HtmxHttpRequest
from rubrics_app.views.kept_forms import form_key, kept_form


@require_GET
@login_required
def repository_list(request: HtmxHttpRequest) -> HttpResponse:
    return render(request, "rubrics/repository_list.html", {"accesses": repositories_for_user(request)})


def repository_context(access: RepositoryAccess) -> dict[str, Any]:
    admitted = RubricRevision.objects.filter(status=RevisionStatus.ADMITTED)
    # A task whose newest rubric is approved but not admitted yet shows that one, not "none yet".
    approved = RubricRevision.objects.filter(status=RevisionStatus.APPROVED).order_by("-number")
    tasks = (
        Task.objects.filter(repository=access.repository)
        .annotate(
            draft_count=Count("revisions", filter=Q(revisions__status=RevisionStatus.DRAFT)),
            revision_count=Count("revisions"),
        )
        .prefetch_related(
            Prefetch("revisions", queryset=admitted, to_attr="admitted_revisions"),
            Prefetch("revisions", queryset=approved, to_attr="approved_revisions"),
        )
        .order_by("task_id")
    )
    return {
        "access": access,
        "repository": access.repository,
        "tasks": tasks,
        "upload_form": RubricUploadForm(),
        "runs_form": RunsUploadForm(),
        "swe_form": SweBenchUploadForm(),
        **repository_runs_summary(access.repository),
        "recent_sweeps": recent_sweeps(access.repository),
    }


@require_GET
@login_required
def repository_detail(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    context = repository_context(access)
    # A form that failed on its own POST-only URL comes back here with its errors (views/kept_forms.py).
    for action, name, form_class in (
        ("rubric_upload", "upload", RubricUploadForm),
        ("runs_upload", "runs", RunsUploadForm),
        ("runs_upload_swe_bench", "swe", SweBenchUploadForm),
    ):
        kept = kept_form(request, form_key(action, access.repository.pk), form_class)
        if kept.form is not None:
            context.update({f"{name}_form": kept.form, f"{name}_errors": kept.problems})
    return render(request, "rubrics/repository_detail.html", context)
