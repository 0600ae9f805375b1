"""A repository's settings page (drafting, judges, the remote): everyone with a role sees the setting, a
maintainer's POST saves it through its service, whose refusal shows on the field it names (a 400)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.models import Repository, Role
from rubrics_app.views.common import HtmxHttpRequest
from rubrics_app.views.revisions import redirect_to


class FieldRefusal(Protocol):
    """What a settings service raises when it refuses a value: the form field it belongs to, and why."""

    field: str | None
    message: str


def settings_page(
    request: HtmxHttpRequest,
    repo_pk: int,
    *,
    load: Callable[[Repository], Any],
    form_class: Callable[..., forms.Form],
    save: Callable[..., object],
    refused: type[Exception],
    saved: str,
    url_name: str,
    template: str,
    more: Callable[[RepositoryAccess], dict[str, Any]] | None = None,
) -> HttpResponse:
    """The page at ``url_name`` of the repository ``repo_pk``: the setting ``load`` finds (None before the
    first save) in ``form_class`` (which takes it as ``instance_setting``); a maintainer's valid POST goes to
    ``save(repository, by=access, **cleaned_data)`` and back to this page with the message ``saved``;
    ``refused``, the service's error (a ``FieldRefusal``), shows on its field. ``more`` adds to the
    page's context, once the POST is handled."""
    access = get_repository_for_user(request, repo_pk)
    setting = load(access.repository)
    form = form_class(instance_setting=setting)
    if request.method == "POST":
        access.require(Role.MAINTAINER, access.repository)
        form = form_class(request.POST, instance_setting=setting)
        if form.is_valid():
            try:
                save(access.repository, by=access, **form.cleaned_data)
            except refused as exc:
                problem = cast(FieldRefusal, exc)
                form.add_error(problem.field if problem.field in form.fields else None, problem.message)
            else:
                messages.success(request, saved)
                return redirect_to(request, reverse(url_name, args=[access.repository.pk]))
    context = {"access": access, "repository": access.repository, "setting": setting, "form": form}
    if more is not None:
        context.update(more(access))
    status = 400 if form.is_bound and form.errors else 200
    return render(request, template, context, status=status)
