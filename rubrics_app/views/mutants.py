"""Mutants of the oracle on a calibration page: each one's diff, and marking one harmless (maintainers)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from rubrics_app.access import get_repository_for_user
from rubrics_app.forms.runs import ReasonForm
from rubrics_app.models import CalibrationMutant, CalibrationRun, Role, TransitionError
from rubrics_app.services.calibration import mutants
from rubrics_app.views.calibration import calibration_url, run_page
from rubrics_app.views.common import HtmxHttpRequest, require_post
from rubrics_app.views.kept_forms import form_key, redirect_with_form
from rubrics_app.views.revisions import redirect_to


def _mutant_for(repository_pk: int, run_pk: int, mutant_pk: int) -> CalibrationMutant:
    return get_object_or_404(
        CalibrationMutant.objects.select_related("run__revision__task__repository"),
        pk=mutant_pk,
        run_id=run_pk,
        run__revision__task__repository_id=repository_pk,
    )


def _back(run: CalibrationRun, mutant: CalibrationMutant) -> str:
    return f"{calibration_url(run)}#mutant-{mutant.position}"


@require_GET
@login_required
def calibration_mutant_diff(
    request: HtmxHttpRequest, repo_pk: int, run_pk: int, mutant_pk: int
) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    mutant = _mutant_for(access.repository.pk, run_pk, mutant_pk)
    context = {**run_page(access, mutant.run), "mutant": mutant}
    return render(request, "rubrics/calibration_mutant_diff.html", context)


@require_post("marks a mutant of a calibration harmless", back="rubrics:calibration_detail")
@login_required
def mutant_mark_harmless(request: HtmxHttpRequest, repo_pk: int, run_pk: int, mutant_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    mutant = _mutant_for(access.repository.pk, run_pk, mutant_pk)
    form = ReasonForm(request.POST)
    if form.is_valid():
        try:
            mutants.mark_harmless(mutant, access, form.cleaned_data["reason"])
        except TransitionError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{mutant.mutant_id} is marked harmless for this rubric content.")
        return redirect_to(request, _back(mutant.run, mutant))
    # The page, with the reason's error beside this mutant's form.
    key = form_key("mutant_mark_harmless", mutant.run.pk)
    return redirect_with_form(request, _back(mutant.run, mutant), key, form, target=mutant.pk)


@require_post("takes back a mutant's harmless mark", back="rubrics:calibration_detail")
@login_required
def mutant_unmark(request: HtmxHttpRequest, repo_pk: int, run_pk: int, mutant_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    mutant = _mutant_for(access.repository.pk, run_pk, mutant_pk)
    try:
        mutants.unmark(mutant, access)
    except TransitionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{mutant.mutant_id} is no longer marked harmless.")
    return redirect_to(request, _back(mutant.run, mutant))
