"""Drafting rubrics from merged PRs (§6) in the app: the repository's drafting settings, "Draft from PR" on a
task's page, and the exact request a draft was made from (maintainers only)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods

from rubrics_app.access import get_repository_for_user
from rubrics_app.forms.rubrics import DraftRequestForm, DraftSettingForm
from rubrics_app.models import DraftSetting, Role, RubricDraft, Task
from rubrics_app.services.drafting.run import (
    DraftRequestError,
    DraftSettingError,
    request_draft,
    set_draft_settings,
)
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.views.common import HtmxHttpRequest, form_page, load_revision, require_post
from rubrics_app.views.kept_forms import form_key, redirect_with_form
from rubrics_app.views.revisions import redirect_to
from rubrics_app.views.settings_pages import settings_page
from rubrics_app.views.tasks import task_context


@form_page("saves how the repository's rubrics are drafted")
@require_http_methods(["GET", "POST"])
@login_required
def draft_settings(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Everyone with a role sees how rubrics are drafted; maintainers edit it."""
    return settings_page(
        request,
        repo_pk,
        load=lambda repository: DraftSetting.objects.filter(repository=repository).first(),
        form_class=DraftSettingForm,
        save=set_draft_settings,
        refused=DraftSettingError,
        saved="The drafting settings are saved.",
        url_name="rubrics:draft_settings",
        template="rubrics/draft_settings.html",
    )


@require_post("drafts a rubric for a task from a merged PR", back="rubrics:task_detail")
@login_required
def draft_start(request: HtmxHttpRequest, repo_pk: int, task_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    task = get_object_or_404(Task.objects.filter(repository=access.repository), pk=task_pk)
    form = DraftRequestForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data.get("pr_export")
        try:
            draft, created = request_draft(
                task,
                access,
                pr_number=form.cleaned_data.get("pr_number"),
                pr_export=upload.read() if upload is not None else None,
                pr_export_name=upload.name if upload is not None and upload.name else "pr.json",
            )
        except DraftRequestError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        except QueueUnreachable as exc:
            messages.error(request, f"No draft: {exc}.")
            return redirect_to(request, reverse("rubrics:task_detail", args=[access.repository.pk, task.pk]))
        else:
            assert draft.job is not None
            if not created:
                messages.info(
                    request,
                    f"Drafting #{draft.pk} of this task from {draft.source_label} is already "
                    f"{draft.job.get_status_display().lower()}: this request joined it (no second draft).",
                )
            return redirect_to(
                request, reverse("rubrics:job_detail", args=[access.repository.pk, draft.job.pk])
            )
    if request.htmx:
        context = task_context(access, task, draft_form=form)
        return render(request, "rubrics/task_detail.html", context, status=400)
    task_url = reverse("rubrics:task_detail", args=[access.repository.pk, task.pk])
    return redirect_with_form(request, f"{task_url}#draft-from-pr", form_key("draft_start", task.pk), form)


def request_parts(body: str) -> dict[str, Any]:
    """The system text and the user message of a stored Messages API request body, for reading."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return {"system": "", "user": "", "model": ""}
    system = data.get("system") or []
    blocks = [{"text": system}] if isinstance(system, str) else system
    user = []
    for message in data.get("messages") or []:
        content = message.get("content")
        user += [content] if isinstance(content, str) else [b.get("text", "") for b in content or []]
    return {
        "system": "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)),
        "user": "\n".join(str(u) for u in user),
        "model": str(data.get("model", "")),
    }


@require_GET
@login_required
def draft_input(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """The exact request a drafted revision came from: maintainers only (it holds the PR thread as sent)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    record = RubricDraft.objects.filter(revision=revision).first()
    if record is None or not record.request_body:
        raise Http404("this revision was not drafted by a model here")
    parts = request_parts(record.request_body)
    context = {
        "access": access,
        "repository": access.repository,
        "task": revision.task,
        "revision": revision,
        "record": record,
        "parts": parts,
        # A PR with megabytes of review comments makes a request no page should carry whole: the first
        # DRAFT_INPUT_SHOW_CHARS of each part are shown, and the whole request is a download.
        "system": _head(parts["system"]),
        "user": _head(parts["user"]),
        "body_chars": len(record.request_body),
    }
    return render(request, "rubrics/draft_input.html", context)


DRAFT_INPUT_SHOW_CHARS = 100_000


def _head(text: str) -> dict[str, Any]:
    return {"text": text[:DRAFT_INPUT_SHOW_CHARS], "more": max(0, len(text) - DRAFT_INPUT_SHOW_CHARS)}


@require_GET
@login_required
def draft_input_download(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """The drafting request body exactly as sent, as a JSON file (maintainers only, as its page)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    record = RubricDraft.objects.filter(revision=revision).first()
    if record is None or not record.request_body:
        raise Http404("this revision was not drafted by a model here")
    response = HttpResponse(record.request_body.encode("utf-8"), content_type="application/json")
    name = f"{revision.task.task_id}-r{revision.number}-drafting-request.json"
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
