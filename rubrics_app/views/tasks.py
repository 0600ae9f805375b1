from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms import DraftRequestForm
from rubrics_app.models import DraftSetting, RevisionStatus, RubricDraft, RubricRevision, Task
from rubrics_app.services.rereview import re_review_context
from rubrics_app.services.runs import task_runs
from rubrics_app.services.sweeps import recent_sweeps
from rubrics_app.views.common import HtmxHttpRequest
from rubrics_app.views.kept_forms import form_key, kept_form


def task_context(
    access: RepositoryAccess, task: Task, *, draft_form: DraftRequestForm | None = None
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
        "agent_runs": task_runs(task),
        "approved": approved,
        "recent_sweeps": recent_sweeps(access.repository, task=task),
        "draft_setting": draft_setting,
        "draft_form": draft_form if access.can_edit else None,
        "draftings": list(
            RubricDraft.objects.filter(task=task).select_related("job", "revision", "created_by")[:5]
        ),
    }


@require_GET
@login_required
def task_detail(request: HtmxHttpRequest, repo_pk: int, task_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    task = get_object_or_404(Task.objects.filter(repository=access.repository), pk=task_pk)
    form = kept_form(request, form_key("draft_start", task.pk), DraftRequestForm).form
    return render(request, "rubrics/task_detail.html", task_context(access, task, draft_form=form))
