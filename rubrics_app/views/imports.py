from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from rubrics_app.access import get_repository_for_user
from rubrics_app.forms.rubrics import RubricUploadForm
from rubrics_app.models import Role
from rubrics_app.services.rubrics.files import ImportFailed
from rubrics_app.services.rubrics.imports import import_rubric_zip
from rubrics_app.views.common import HtmxHttpRequest, require_post
from rubrics_app.views.kept_forms import form_key, redirect_with_form
from rubrics_app.views.repositories import repository_context
from rubrics_app.views.revisions import redirect_to, revision_url

PAGE = "rubrics/repository_detail.html"


@require_post("imports rubrics: a rubric.json or a zip of tasks", back="rubrics:repository_detail")
@login_required
def rubric_upload(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """A rubric.json, or a zip of task directories with their calib diffs, becomes draft revisions; or, when
    any file has a problem, nothing is imported and every problem is listed on the form."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    form = RubricUploadForm(request.POST, request.FILES)
    problems: list[str] = []
    if form.is_valid():
        try:
            imported = import_rubric_zip(access.repository, form.cleaned_data["file"], access)
        except ImportFailed as exc:
            problems = [str(problem) for problem in exc.problems]
        else:
            names = ", ".join(f"{r.task.task_id} r{r.number}" for r in imported)
            messages.success(request, f"Imported as draft{'s' if len(imported) > 1 else ''}: {names}.")
            if len(imported) == 1:
                return redirect_to(request, revision_url(imported[0]))
            return redirect_to(request, reverse("rubrics:repository_detail", args=[access.repository.pk]))
    if request.htmx:
        context = {**repository_context(access), "upload_form": form, "upload_errors": problems}
        return render(request, f"{PAGE}#upload-form", context)
    url = reverse("rubrics:repository_detail", args=[access.repository.pk]) + "#upload-form"
    return redirect_with_form(request, url, form_key("rubric_upload", access.repository.pk), form, problems)
