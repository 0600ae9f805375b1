"""Downloads, checkout writes and pull requests, for admitted revisions only (what `rubric validate`
accepts); and the repository's remote, where pull requests go. rubric.json is downloaded by anyone with a
role (read access); every other export is for maintainers.

A revision with an open dispute on a blocker needs re-review: each export first answers with a page that
names the disputed blockers and asks for an explicit confirmation (a checkbox, sent again with the same
request; no JavaScript needed). Only ``confirm_disputed=1`` goes through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms.rubrics import CheckoutExportForm, ExportConfirmForm, RemoteSettingForm
from rubrics_app.models import RemoteSetting, RevisionStatus, Role, RubricRevision, TransitionError
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.rubrics.exports import export_rubric_json, export_zip, start_export
from rubrics_app.services.rubrics.pull_requests import RemoteSettingError, set_remote_setting
from rubrics_app.services.rubrics.rereview import disputed_blockers, open_disputes
from rubrics_app.views.common import HtmxHttpRequest, form_page, load_revision, require_post
from rubrics_app.views.revisions import redirect_to, revision_url
from rubrics_app.views.settings_pages import settings_page


def _admitted(access: RepositoryAccess, rev_pk: int) -> RubricRevision:
    revision = load_revision(access.repository, rev_pk)
    if revision.status != RevisionStatus.ADMITTED:
        # Only the admitted rubric of a task leaves the app: a draft or a superseded one has no download.
        raise Http404("only an admitted revision is exported")
    return revision


CONFIRM = "confirm_disputed"
ASKED = "asked"  # set by the confirmation page's form: its request was seen, unticked or not


def _target(request: HtmxHttpRequest, access: RepositoryAccess, what: str) -> str:
    """Where the export asked for goes, in words, for the confirmation page."""
    data = request.POST if request.method == "POST" else request.GET
    branch = str(data.get("branch") or "").strip()
    repository = access.repository
    if request.method == "GET":
        return f"{what.removeprefix('Download ')}, downloaded to your computer"
    if "pull request" in what:
        setting = RemoteSetting.objects.filter(repository=repository).first()
        remote = setting.remote if setting is not None else "the repository's remote"
        named = f"branch {branch}" if branch else "a new branch the job names"
        return f"{named}, pushed to {remote} and proposed as a pull request"
    private = data.get("private") in ("on", "1", "true")
    root = repository.private_path if private else repository.checkout_path
    where = f"the {'private path' if private else 'checkout'} {root}"
    return f"a commit on the new branch {branch} of {where}" if branch else f"the files of {where}"


def _unconfirmed(
    request: HtmxHttpRequest, access: RepositoryAccess, revision: RubricRevision, what: str
) -> HttpResponse | None:
    """The confirmation page when the revision has disputed blockers and the request does not confirm
    them; None when the export may go ahead. The page names each dispute with its reason and where the
    export goes; its form sends the same request again (same method, same fields) with the confirmation,
    and an unticked box comes back with a form error saying so."""
    disputes = open_disputes(revision)
    data = request.POST if request.method == "POST" else request.GET
    form = ExportConfirmForm(data if data.get(ASKED) == "1" else None)
    if not disputes or data.get(CONFIRM) == "1":
        return None
    form.is_valid()  # an unbound form (the first ask) has no errors to show
    fields = [
        (name, value) for name, value in data.items() if name not in (CONFIRM, ASKED, "csrfmiddlewaretoken")
    ]
    context = {
        "access": access,
        "repository": access.repository,
        "task": revision.task,
        "revision": revision,
        "disputes": disputes,
        "disputed": sorted({d.item.item_id for d in disputes}),
        "target": _target(request, access, what),
        "form": form,
        "what": what,
        "method": request.method,
        "action": request.path,
        "fields": fields,
        "confirm": CONFIRM,
        "asked": ASKED,
    }
    return render(request, "rubrics/export_confirm.html", context, status=409)


@require_GET
@login_required
def export_json(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """rubric.json of an admitted revision: read access is enough (viewers read every criterion on the
    page); a draft's is 404 for everyone, and the zips stay maintainers'."""
    access = get_repository_for_user(request, repo_pk, role=Role.VIEWER)
    revision = _admitted(access, rev_pk)
    if (confirm := _unconfirmed(request, access, revision, "Download rubric.json")) is not None:
        return confirm
    response = HttpResponse(export_rubric_json(revision, by=access), content_type="application/json")
    response["Content-Disposition"] = 'attachment; filename="rubric.json"'
    return response


@require_GET
@login_required
def export_zip_view(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = _admitted(access, rev_pk)
    # ?private=1: the held-out set's zip, with the task's own files that `rubric check` reads.
    private = request.GET.get("private") == "1"
    what = "Download the private zip" if private else "Download the zip"
    if (confirm := _unconfirmed(request, access, revision, what)) is not None:
        return confirm
    response = HttpResponse(export_zip(revision, by=access, private=private), content_type="application/zip")
    # task ids match [A-Za-z0-9._-]+ (name_validator), so the header needs no quoting.
    suffix = "-private" if private else ""
    response["Content-Disposition"] = (
        f'attachment; filename="{revision.task.task_id}-r{revision.number}{suffix}.zip"'
    )
    return response


@require_post("writes a rubric revision into the repository's checkout", back="rubrics:revision_detail")
@login_required
def export_checkout(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """Writing into the checkout runs git: it is a job, and its page shows how it went."""
    return _export_job(
        request,
        repo_pk,
        rev_pk,
        ("Write to the checkout", "Nothing was written"),
        lambda data, revision: {"private": data["private"]},
    )


@require_post(
    "sends a rubric revision to the repository's remote as a pull request", back="rubrics:revision_detail"
)
@login_required
def export_pull_request(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """ "Send as a pull request": a job that commits the branch, pushes it and opens the pull request; its
    page links the pull request. Disputed blockers are confirmed first, and named in the pull request."""
    return _export_job(
        request,
        repo_pk,
        rev_pk,
        ("Send as a pull request", "Nothing was sent"),
        lambda data, revision: {
            "pull_request": True,
            # Confirmed on the page above (or none were disputed): the job stops on any other.
            "overriding": disputed_blockers([revision.pk]).get(revision.pk, []),
        },
    )


def _export_job(
    request: HtmxHttpRequest,
    repo_pk: int,
    rev_pk: int,
    words: tuple[str, str],
    options: Callable[[dict[str, Any], RubricRevision], dict[str, Any]],
) -> HttpResponse:
    """An export job for an admitted revision, its disputed blockers confirmed first, to the form's branch;
    then its page. ``words``: the action as its button says it, and how a refusal begins ("Nothing was
    sent"); ``options``: start_export's other arguments, from the form's data and the revision."""
    action, nothing = words
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = _admitted(access, rev_pk)
    if (confirm := _unconfirmed(request, access, revision, action)) is not None:
        return confirm
    form = CheckoutExportForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"{nothing}: {problems}")
        return redirect_to(request, revision_url(revision))
    try:
        job = start_export(
            revision,
            access,
            branch=form.cleaned_data["branch"] or None,
            **options(form.cleaned_data, revision),
        )
    except (TransitionError, QueueUnreachable) as exc:
        messages.error(request, f"{nothing}: {exc}")
        return redirect_to(request, revision_url(revision))
    return redirect_to(request, reverse("rubrics:job_detail", args=[access.repository.pk, job.pk]))


@form_page("saves where the repository's rubrics are sent")
@require_http_methods(["GET", "POST"])
@login_required
def remote_settings(request: HtmxHttpRequest, repo_pk: int) -> HttpResponse:
    """Everyone with a role sees where rubrics are sent; maintainers edit it."""
    return settings_page(
        request,
        repo_pk,
        load=lambda repository: RemoteSetting.objects.filter(repository=repository).first(),
        form_class=RemoteSettingForm,
        save=set_remote_setting,
        refused=RemoteSettingError,
        saved="The remote is saved.",
        url_name="rubrics:remote_settings",
        template="rubrics/remote_settings.html",
    )
