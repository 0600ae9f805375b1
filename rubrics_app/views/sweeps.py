"""Sweeps in the app: maintainers send one from the repository or task page; everyone with a role watches
its progress and cost, polled with htmx until the job ends; anyone without a role gets 404."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET

from rubrics_app.access import get_repository_for_user
from rubrics_app.forms.runs import SweepForm
from rubrics_app.models import Job, Role, RubricRevision, Sweep, SweepResult, Task
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.export import sweep_filters
from rubrics_app.services.sweeps.run import SweepError, SweepRequest
from rubrics_app.views.common import HtmxHttpRequest, polled_page, require_post
from rubrics_app.views.revisions import redirect_to

PAGE = "rubrics/sweep_detail.html"


def sweep_url(sweep: Sweep) -> str:
    return reverse("rubrics:sweep_detail", args=[sweep.repository_id, sweep.pk])


@require_post("starts a sweep that grades the repository's runs", back="rubrics:repository_detail")
@login_required
def sweep_start(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    repository = access.repository
    form = SweepForm(request.POST)
    back = reverse("rubrics:repository_detail", args=[repository.pk])
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items()
        )
        messages.error(request, f"The sweep was not sent: {problems}")
        return redirect_to(request, back)
    data = form.cleaned_data
    task = None
    if data["task"] is not None:
        task = get_object_or_404(Task.objects.filter(repository=repository), pk=data["task"])
        back = reverse("rubrics:task_detail", args=[repository.pk, task.pk])
    revision = None
    if data["revision"] is not None:
        revision = get_object_or_404(
            RubricRevision.objects.filter(task__repository=repository), pk=data["revision"]
        )
    request_ = SweepRequest(
        task=task, revision=revision, arm=data["arm"], model=data["model"], export=bool(data["export"])
    )
    try:
        sweep = sweeps.start(repository, access, request_)
    except (SweepError, QueueUnreachable) as exc:
        messages.error(request, f"The sweep was not sent: {exc}")
        return redirect_to(request, back)
    return redirect_to(request, sweep_url(sweep))


def _next_steps(sweep: Sweep) -> dict[str, str]:
    """The report and the review queue, narrowed to what the sweep graded (its task, arm and model)."""
    scope = sweep_filters(sweep)
    report = reverse("rubrics:report", args=[sweep.repository_id])
    queue = reverse("rubrics:queue", args=[sweep.repository_id])
    return {
        "report_url": f"{report}?{urlencode(scope)}" if scope else report,
        "queue_url": f"{queue}?{urlencode(scope)}" if scope else queue,
    }


@require_GET
@login_required
def sweep_detail(request: HtmxHttpRequest, repo_pk: int, sweep_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    sweep = get_object_or_404(
        Sweep.objects.filter(repository=access.repository).select_related(
            "job", "task", "revision__task", "created_by"
        ),
        pk=sweep_pk,
    )
    job: Job = sweep.job
    context = {
        "access": access,
        "repository": access.repository,
        "sweep": sweep,
        "job": job,
        "result": job.result_as(SweepResult),
        **_next_steps(sweep),
    }
    return polled_page(request, PAGE, "sweep-progress", context, job.is_finished)
