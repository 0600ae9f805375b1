from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms.rubrics import DraftRequestForm
from rubrics_app.management.commands.load_demo import DEMO_PR_EXPORT, demo_drafter
from rubrics_app.models import DraftSetting, RevisionStatus, RubricDraft, RubricRevision, Task
from rubrics_app.services.rubrics.rereview import re_review_context
from rubrics_app.services.runs.pages import task_runs
from rubrics_app.services.sweeps.run import recent_sweeps
from rubrics_app.views.common import HtmxHttpRequest, page_number, page_size
from rubrics_app.views.kept_forms import form_key, kept_form


def task_context(
    access: RepositoryAccess, task: Task, *, draft_form: DraftRequestForm | None = None, page: int = 1
) -> dict[str, Any]:
    revisions = list(
        RubricRevision.objects.filter(task=task)
        .select_related("drafted_by", "approved_by", "admitted_by", "parent")
        .order_by("-number")
    )
    admitted = next((r for r in revisions if r.status == RevisionStatus.ADMITTED), None)
    drafts = [r for r in revisions if r.status == RevisionStatus.DRAFT]
    # The newest approved revision, shown while nothing is admitted (revisions are newest first).
    approved = next((r for r in revisions if r.status == RevisionStatus.APPROVED), None)
    draft_setting = DraftSetting.objects.filter(repository=access.repository).first()
    runs_page = task_runs(task, page, page_size())
    if access.can_edit and draft_form is None:
        draft_form = DraftRequestForm()
    return {
        "access": access,
        "repository": access.repository,
        "task": task,
        "revisions": revisions,
        "admitted": admitted,
        "drafts": drafts,
        **re_review_context(admitted),
        "runs_page": runs_page,
        "previous_page_url": _runs_page_url(access, task, runs_page.previous_number),
        "next_page_url": _runs_page_url(access, task, runs_page.next_number),
        "approved": approved,
        "recent_sweeps": recent_sweeps(access.repository, task=task),
        "draft_setting": draft_setting,
        # The demo's scripted drafter drafts from the PR export the demo ships: the form names the file.
        "demo_export": (
            DEMO_PR_EXPORT.relative_to(settings.BASE_DIR)
            if draft_setting is not None and draft_setting.drafter == demo_drafter()
            else None
        ),
        "draft_form": draft_form if access.can_edit else None,
        "draftings": list(
            RubricDraft.objects.filter(task=task).select_related("job", "revision", "created_by")[:5]
        ),
    }


def _runs_page_url(access: RepositoryAccess, task: Task, number: int | None) -> str | None:
    if number is None:
        return None
    url = reverse("rubrics:task_detail", args=[access.repository.pk, task.pk])
    return f"{url}?page={number}#agent-runs" if number > 1 else f"{url}#agent-runs"


@require_GET
@login_required
def task_detail(request: HtmxHttpRequest, repo_pk: int, task_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    task = get_object_or_404(Task.objects.filter(repository=access.repository), pk=task_pk)
    form = kept_form(request, form_key("draft_start", task.pk), DraftRequestForm).form
    context = task_context(access, task, draft_form=form, page=page_number(request))
    return render(request, "rubrics/task_detail.html", context)
