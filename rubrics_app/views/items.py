"""Row actions on one blocker or non-blocker. Under htmx each returns just that row
(``revision_detail.html#item-row``); a plain form post falls back to the page. Adding and removing an item
change the lists themselves: under htmx they return the item sections (``#item-sections``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms.rubrics import CommentForm, ItemForm, NewItemForm, RequestChangesForm
from rubrics_app.models import (
    ItemKind,
    RevisionFrozen,
    Role,
    RubricItem,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services.rubrics.revisions import (
    Conflict,
    add_item,
    approve_item,
    comment,
    edit_item,
    fork_for_edit,
    remove_item,
    request_changes,
)
from rubrics_app.views.common import (
    HtmxHttpRequest,
    ItemRow,
    form_is_stale,
    load_item,
    load_revision,
    request_int,
    require_post,
    validation_report,
)
from rubrics_app.views.kept_forms import form_key, redirect_with_form
from rubrics_app.views.revisions import (
    PAGE,
    redirect_to,
    render_partials,
    render_transition,
    revision_context,
    revision_url,
)


def _meanwhile(exc: RevisionFrozen, what: str) -> str:
    """The notice for a draft that turned approved (or admitted) while the maintainer was acting on it."""
    revision = exc.revision
    return (
        f"Revision {revision.number} was {revision.status} meanwhile, so {what}. "
        "Reload the page; to change it now, start a new draft from it."
    )


def _row(
    item: RubricItem,
    *,
    form: ItemForm | None = None,
    conflict: dict[str, Any] | None = None,
    notice: str = "",
    comment_form: CommentForm | None = None,
) -> ItemRow:
    errors = validation_report(item.revision).by_item.get(item.pk, {})
    return ItemRow(item, errors, form=form, conflict=conflict, notice=notice, comment_form=comment_form)


def _respond(
    request: HtmxHttpRequest,
    access: RepositoryAccess,
    item: RubricItem,
    row: ItemRow | None = None,
    *,
    status: int = 200,
    transition: bool = False,
) -> HttpResponse:
    """The row under htmx (plus the revision's status and activity, out of band); otherwise the page, at
    the row. After a ``transition`` of the revision (its last item approved) the whole review changes:
    every row, the add forms, the status, Activity and History."""
    if request.htmx:
        revision = load_revision(access.repository, item.revision_id)
        if transition:
            return render_transition(request, revision_context(access, revision, editing=row))
        fresh = row or _row(next(i for i in revision.ordered_items() if i.pk == item.pk))
        context = revision_context(access, revision)
        context.update({"row": fresh, "oob": True})
        return render_partials(request, ["item-row", "revision-status", "activity"], context)
    if row is not None and row.notice:
        messages.error(request, row.notice)
    if row is not None and row.comment_form is not None:
        # Posted to the comment's own URL: the page shows the comment again with its error.
        key = form_key("item_comment", item.revision_id)
        url = revision_url(item.revision, f"item-{item.pk}")
        return redirect_with_form(request, url, key, row.comment_form, target=item.pk)
    if row is not None and row.form is not None:
        # A form with errors or a conflict: the whole page, with this row still in edit mode.
        revision = load_revision(access.repository, item.revision_id)
        return render(request, PAGE, revision_context(access, revision, editing=row), status=status)
    return redirect_to(request, revision_url(item.revision, f"item-{item.pk}"))


@require_GET
@login_required
def item_row(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    item = load_item(access.repository, item_pk)
    return _respond(request, access, item)


@require_http_methods(["GET", "POST"])
@login_required
def item_edit(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item = load_item(access.repository, item_pk)
    if request.method == "GET":
        return _respond(request, access, item, _row(item, form=ItemForm(instance=item)))

    # The form writes the submitted values onto its instance: give it its own copy, so `item` stays as stored.
    form = ItemForm(request.POST, instance=load_item(access.repository, item_pk))
    if not form.is_valid():
        return _respond(request, access, item, _row(item, form=form), status=400)
    if form_is_stale(request, item.revision):
        # Opened on a draft approved since: the text stays in the form, which now says that saving again
        # starts a new draft.
        row = _row(
            item, form=form, notice=_meanwhile(RevisionFrozen(item.revision), "your edit was not saved")
        )
        return _respond(request, access, item, row, status=409)
    if item.revision.is_frozen:
        # Never edited in place: the edit lands in a new draft carrying every item over. One transaction:
        # no draft is left behind when the edit fails.
        def edit_carried(draft: RubricRevision) -> RubricItem:
            carried = RubricItem.objects.get(revision=draft, item_id=item.item_id)
            return edit_item(carried, carried.version, form.text_fields(), by=access)

        try:
            draft, carried = fork_for_edit(item.revision, access, edit_carried, changing={item.item_id})
        except IntegrityError:
            form.add_error(
                "item_id", f"{form.cleaned_data['item_id']} was just taken by another item of this revision."
            )
            return _respond(request, access, item, _row(item, form=form), status=409)
        messages.success(
            request,
            f"Revision {item.revision.number} is {item.revision.status}; your edit is draft {draft.number}.",
        )
        return redirect_to(request, revision_url(draft, f"item-{carried.pk}"))
    try:
        edit_item(item, form.cleaned_data["version"], form.text_fields(), by=access)
    except Conflict as conflict:
        data = request.POST.copy()
        # Saving again after reading their text is a deliberate overwrite of the version they saved.
        data["version"] = str(conflict.version)
        again = ItemForm(data, instance=load_item(access.repository, item_pk))
        again.is_valid()
        current = load_item(access.repository, item_pk)
        row = _row(current, form=again, conflict={"text": conflict.current, "who": conflict.who or "Someone"})
        return _respond(request, access, current, row, status=409)
    except RevisionFrozen as exc:
        # Approved between loading the item and saving (or between the check and the write, where the
        # database trigger refused it): the text stays in the form; saving again starts a new draft.
        current = load_item(access.repository, item_pk)
        row = _row(current, form=form, notice=_meanwhile(exc, "your edit was not saved"))
        return _respond(request, access, current, row, status=409)
    except IntegrityError:
        # Another maintainer took the same id for another item between our check and the save.
        form.add_error(
            "item_id", f"{form.cleaned_data['item_id']} was just taken by another item of this revision."
        )
        return _respond(request, access, item, _row(item, form=form), status=409)
    return _respond(request, access, load_item(access.repository, item_pk))


@require_post("approves a blocker or non-blocker", back="rubrics:item_row")
@login_required
def item_approve(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item = load_item(access.repository, item_pk)
    errors = validation_report(item.revision).by_item.get(item.pk)
    if errors:
        # A revision that would not validate cannot be approved, so neither can the item at fault.
        row = _row(item, notice="Fix the problems shown before approving this item.")
        return _respond(request, access, item, row, status=400)
    version = request_int(request.POST.get("version"))
    if version is None:
        # An approval is of the text the maintainer read: without its version it could approve another.
        row = _row(item, notice="Reload the page and approve again: this approval did not say which text.")
        return _respond(request, access, item, row, status=400)
    try:
        outcome = approve_item(item, by=access, expected_version=version)
    except Conflict:
        notice = "Someone edited this item since you loaded it: read it again, then approve."
        row = _row(load_item(access.repository, item_pk), notice=notice)
        return _respond(request, access, row.item, row, status=409)
    except RevisionFrozen as exc:
        row = _row(load_item(access.repository, item_pk), notice=_meanwhile(exc, "nothing was approved"))
        return _respond(request, access, row.item, row, status=409)
    except TransitionError as exc:
        row = _row(item, notice=str(exc))
        return _respond(request, access, item, row, status=409)
    if outcome.revision_approved:
        messages.success(request, f"Every item is approved: revision {item.revision.number} is approved.")
    elif outcome.errors:
        messages.error(
            request, "Every item is approved, but the rubric does not validate yet (see the errors)."
        )
    return _respond(request, access, outcome.item, transition=outcome.revision_approved)


@require_post("requests changes to a blocker or non-blocker", back="rubrics:item_row")
@login_required
def item_request_changes(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item = load_item(access.repository, item_pk)
    form = RequestChangesForm(request.POST)
    if not form.is_valid():
        row = _row(item, notice="; ".join(str(e) for errors in form.errors.values() for e in errors))
        return _respond(request, access, item, row, status=400)
    try:
        request_changes(item, by=access, note=form.cleaned_data["note"])
    except RevisionFrozen as exc:
        row = _row(
            load_item(access.repository, item_pk), notice=_meanwhile(exc, "your request was not recorded")
        )
        return _respond(request, access, row.item, row, status=409)
    except TransitionError as exc:
        row = _row(item, notice=str(exc))
        return _respond(request, access, item, row, status=409)
    return _respond(request, access, load_item(access.repository, item_pk))


@require_post("adds a comment to a blocker or non-blocker", back="rubrics:item_row")
@login_required
def item_comment(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.REVIEWER)
    item = load_item(access.repository, item_pk)
    form = CommentForm(request.POST)
    if not form.is_valid():
        row = _row(item, comment_form=form)
        return _respond(request, access, item, row, status=400)
    # Comments are rows of their own, so a frozen revision can still be discussed.
    comment(item, by=access, text=form.cleaned_data["text"])
    return _respond(request, access, load_item(access.repository, item_pk))


# --- adding and removing items ------------------------------------------------------------------------------


def _respond_list(
    request: HtmxHttpRequest,
    access: RepositoryAccess,
    rev_pk: int,
    *,
    adding: NewItemForm | None = None,
    notice: str = "",
    anchor: str = "item-sections",
    status: int = 200,
) -> HttpResponse:
    """Under htmx the item sections, with the revision's status and calibration diffs out of band (the
    counts, the validation errors and whether it can be approved all change with the lists); otherwise the
    page: in full when an add form has errors, else a redirect to it."""
    revision = load_revision(access.repository, rev_pk)
    context = revision_context(access, revision, adding=adding, list_notice=notice)
    if request.htmx:
        context["oob"] = True
        return render_partials(
            request, ["item-sections", "revision-status", "calibration-diffs", "activity"], context
        )
    if adding is not None and (adding.errors or notice):
        # Posted to the add URL: the page shows the form again, with its errors or why it was not added.
        key = form_key(f"item_add_{adding.instance.kind}", revision.pk)
        url = revision_url(revision, f"add-{adding.instance.kind}")
        return redirect_with_form(request, url, key, adding, [notice] if notice else None)
    if notice:
        messages.error(request, notice)
    return redirect_to(request, revision_url(revision, anchor))


def _item_kind(value: str) -> ItemKind:
    try:
        return ItemKind(value)
    except ValueError:
        raise Http404("no such kind of item") from None


@require_post("adds a blocker or non-blocker to a rubric revision", back="rubrics:revision_detail")
@login_required
def item_add(request: HtmxHttpRequest, repo_pk: int, rev_pk: int, kind: str) -> HttpResponse:
    """Add a blocker or non-blocker to a draft. On an approved or admitted revision, as with an edit, the
    new item lands in a new draft made from it."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item_kind = _item_kind(kind)
    revision = load_revision(access.repository, rev_pk)
    form = NewItemForm(request.POST, instance=RubricItem(revision=revision, kind=item_kind))
    if not form.is_valid():
        return _respond_list(request, access, rev_pk, adding=form, status=400)
    if form_is_stale(request, revision):
        notice = _meanwhile(RevisionFrozen(revision), "nothing was added")
        return _respond_list(request, access, rev_pk, adding=form, notice=notice, status=409)
    try:
        # A frozen revision forks into a new draft, in one transaction with the addition (fork_for_edit).
        def add(target: RubricRevision) -> RubricItem:
            return add_item(target, item_kind, form.text_fields(), by=access)

        target = revision
        if revision.is_frozen:
            target, item = fork_for_edit(revision, access, add)
        else:
            item = add(revision)
    except RevisionFrozen as exc:
        notice = _meanwhile(exc, "nothing was added")
        return _respond_list(request, access, rev_pk, adding=form, notice=notice, status=409)
    except IntegrityError:
        # Another maintainer gave the same id to an item of this revision between our check and the save.
        form.add_error(
            "item_id", f"{form.cleaned_data['item_id']} was just taken by another item of this revision."
        )
        return _respond_list(request, access, rev_pk, adding=form, status=409)
    if target.pk != revision.pk:
        messages.success(
            request,
            f"Revision {revision.number} is {revision.status}; "
            f"{item.item_id} was added in draft {target.number}.",
        )
        return redirect_to(request, revision_url(target, f"item-{item.pk}"))
    messages.success(request, f"{item.get_kind_display()} {item.item_id} was added to this draft.")
    return _respond_list(request, access, rev_pk, anchor=f"item-{item.pk}")


@require_http_methods(["GET", "POST"])
@login_required
def item_remove(request: HtmxHttpRequest, repo_pk: int, item_pk: int) -> HttpResponse:
    """Remove a blocker or non-blocker from a draft (§6: review drops questionable blockers). On an approved
    or admitted revision, as with an edit, the removal happens in a new draft made from it.

    GET is the confirmation step for a browser without JavaScript (htmx asks with a dialog and posts)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    item = load_item(access.repository, item_pk)
    revision = item.revision
    if request.method == "GET":
        context = {"access": access, "repository": access.repository, "task": revision.task}
        context.update({"revision": revision, "item": item})
        return render(request, "rubrics/item_remove.html", context)
    if form_is_stale(request, revision):
        return _respond_list(
            request, access, revision.pk, notice=_meanwhile(RevisionFrozen(revision), "nothing was removed")
        )
    try:
        if revision.is_frozen:
            draft, _ = fork_for_edit(
                revision,
                access,
                lambda draft: remove_item(
                    RubricItem.objects.get(revision=draft, item_id=item.item_id), by=access
                ),
                changing={item.item_id},
            )
            messages.success(
                request,
                f"Revision {revision.number} is {revision.status}; "
                f"{item.item_id} was removed in draft {draft.number}.",
            )
            return redirect_to(request, revision_url(draft, "item-sections"))
        remove_item(item, by=access)
    except RevisionFrozen as exc:
        return _respond_list(request, access, revision.pk, notice=_meanwhile(exc, "nothing was removed"))
    messages.success(request, f"{item.get_kind_display()} {item.item_id} was removed from this draft.")
    return _respond_list(request, access, revision.pk)
