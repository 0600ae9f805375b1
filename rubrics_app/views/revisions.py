from __future__ import annotations

import difflib
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from rubrics_app.access import RepositoryAccess, get_repository_for_user
from rubrics_app.forms.rubrics import CalibrationOptionsForm, CommentForm, NewItemForm, RevisionForm
from rubrics_app.models import (
    AuditEvent,
    CalibrationDiff,
    CalibrationRun,
    ItemKind,
    Origin,
    RemoteSetting,
    ReviewState,
    RevisionStatus,
    Role,
    RubricDraft,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.rubrics.rereview import re_review_context
from rubrics_app.services.rubrics.revisions import (
    Conflict,
    NotCalibrated,
    admit,
    approve_revision,
    edit_revision,
    fork_for_edit,
)
from rubrics_app.views.common import (
    HtmxHttpRequest,
    ItemRow,
    form_is_stale,
    item_rows,
    load_revision,
    request_int,
    require_post,
    revisions_of,
    validation_report,
)
from rubrics_app.views.kept_forms import form_key, kept_form

PAGE = "rubrics/revision_detail.html"


def revision_url(revision: RubricRevision, anchor: str = "") -> str:
    url = reverse("rubrics:revision_detail", args=[revision.task.repository_id, revision.pk])
    return f"{url}#{anchor}" if anchor else url


def redirect_to(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """A full-page move: htmx is told to navigate, a plain form post gets a 302.

    htmx navigates by setting ``window.location``; a URL that differs from the page the post came from
    only by its ``#fragment`` then scrolls without loading the page, and the post's messages never show.
    To that same page htmx is sent without the fragment, so the page loads (at its top)."""
    if request.htmx:
        target = urlsplit(url)
        current = urlsplit(request.htmx.current_url or "")
        if target.fragment and (target.path, target.query) == (current.path, current.query):
            url = urlunsplit(target._replace(fragment=""))
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url)


def revision_context(
    access: RepositoryAccess,
    revision: RubricRevision,
    *,
    editing: ItemRow | None = None,
    revision_form: RevisionForm | None = None,
    revision_conflict: dict[str, Any] | None = None,
    adding: NewItemForm | None = None,
    list_notice: str = "",
) -> dict[str, Any]:
    report = validation_report(revision)
    blockers, non_blockers = item_rows(revision, report)
    if editing is not None:
        blockers = [editing if r.item.pk == editing.item.pk else r for r in blockers]
        non_blockers = [editing if r.item.pk == editing.item.pk else r for r in non_blockers]
    history = list(
        RubricRevision.objects.filter(task_id=revision.task_id)
        .only("pk", "number", "status", "created_at", "origin", "task_id")
        .order_by("-number")
    )
    # The audit trail of this revision, newest first; capped so a long review stays one short query.
    activity = list(
        AuditEvent.objects.filter(revision=revision)
        .select_related("actor", "item")
        .order_by("-at", "-pk")[:50]
    )
    # "Add blocker" / "Add non-blocker" forms: maintainers, on drafts (a frozen revision is changed through a
    # new draft); a bound one (with its errors) replaces the empty form of its kind.
    add_forms: dict[str, NewItemForm] = {}
    if access.can_edit and revision.status == RevisionStatus.DRAFT:
        for kind in ItemKind:
            add_forms[kind] = NewItemForm(instance=RubricItem(revision=revision, kind=kind))
    if adding is not None:
        add_forms[adding.instance.kind] = adding
    return {
        "access": access,
        "repository": access.repository,
        "task": revision.task,
        "revision": revision,
        "activity": activity,
        "report": report,
        "sections": [
            ("Blockers", blockers, ItemKind.BLOCKER, add_forms.get(ItemKind.BLOCKER)),
            ("Non-blockers", non_blockers, ItemKind.NON_BLOCKER, add_forms.get(ItemKind.NON_BLOCKER)),
        ],
        "list_notice": list_notice,
        "diffs": revision.ordered_diffs(),
        "history": history,
        "revision_form": revision_form,
        "revision_conflict": revision_conflict,
        "all_items_approved": revision.all_items_approved(),
        "calibrations": list(
            CalibrationRun.objects.filter(revision=revision).select_related("created_by").order_by("-pk")[:10]
        ),
        "judges": access.repository.judge_setting(),
        # "Send as a pull request" shows only where a remote is set.
        "remote_setting": RemoteSetting.objects.filter(repository=access.repository).first()
        if revision.status == RevisionStatus.ADMITTED
        else None,
        # Admission calibrates against the oracle: say so before Admit is pressed, not after.
        "admit_needs_oracle": revision.status == RevisionStatus.APPROVED
        and not revision.task.task_file("oracle.diff"),
        "draft_record": RubricDraft.objects.filter(revision=revision).first()
        if revision.origin == Origin.MODEL
        else None,
        "item_count": len(blockers) + len(non_blockers),
        "approved_count": sum(row.is_approved for row in blockers + non_blockers),
        # Open disputes and evidence changes (§6 re-review); blockers are disputed from the admitted one.
        **re_review_context(revision),
        **({} if revision.status == RevisionStatus.ADMITTED else {"disputable_blockers": []}),
    }


@require_GET
@login_required
def revision_detail(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    revision = load_revision(access.repository, rev_pk)
    return render(request, PAGE, revision_context(access, revision, **_kept_item_forms(request, revision)))


def _kept_item_forms(request: HtmxHttpRequest, revision: RubricRevision) -> dict[str, Any]:
    """An add-item or comment form that failed on its POST-only URL, back on this page with its errors
    (views/kept_forms.py)."""
    for kind in ItemKind:
        instance = RubricItem(revision=revision, kind=kind)
        kept = kept_form(request, form_key(f"item_add_{kind}", revision.pk), NewItemForm, instance=instance)
        if kept.form is not None:
            return {"adding": kept.form, "list_notice": " ".join(kept.problems)}
    comment = kept_form(request, form_key("item_comment", revision.pk), CommentForm)
    item = next((i for i in revision.ordered_items() if i.pk == comment.target), None)
    if comment.form is not None and item is not None:
        errors = validation_report(revision).by_item.get(item.pk, {})
        return {"editing": ItemRow(item, errors, comment_form=comment.form)}
    return {}


@require_GET
@login_required
def revision_fields(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """Intent, scope and hack report as shown (the "cancel" of their edit form)."""
    access = get_repository_for_user(request, repo_pk)
    revision = load_revision(access.repository, rev_pk)
    template = f"{PAGE}#revision-fields" if request.htmx else PAGE
    return render(request, template, revision_context(access, revision))


@require_http_methods(["GET", "POST"])
@login_required
def revision_edit(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    partial = f"{PAGE}#revision-form" if request.htmx else PAGE
    if request.method == "GET":
        context = revision_context(access, revision, revision_form=RevisionForm(instance=revision))
        return render(request, partial, context)

    # The form writes the submitted values onto its instance: give it its own copy, so `revision` stays as
    # stored (a new draft made from a frozen revision must start from its stored text).
    form = RevisionForm(request.POST, instance=RubricRevision.objects.get(pk=revision.pk))
    if not form.is_valid():
        return render(request, partial, revision_context(access, revision, revision_form=form))
    if form_is_stale(request, revision):
        form.add_error(
            None,
            f"Revision {revision.number} was {revision.status} meanwhile, so your edit was not saved. "
            "Saving again starts a new draft from it.",
        )
        context = revision_context(access, revision, revision_form=form)
        return render(request, partial, context, status=200 if request.htmx else 409)
    target = revision
    if revision.is_frozen:
        # An approved or admitted revision is never edited: the edit goes into a new draft made from it.
        target, _ = fork_for_edit(
            revision,
            access,
            lambda draft: edit_revision(draft, draft.version, form.content(), access),
        )
        messages.success(
            request, f"Revision {revision.number} is {revision.status}; your edit is draft {target.number}."
        )
        return redirect_to(request, revision_url(target))
    try:
        edit_revision(target, form.cleaned_data["version"], form.content(), by=access)
    except Conflict as conflict:
        data = request.POST.copy()
        # Saving again after reading their text is a deliberate overwrite of that version.
        data["version"] = str(conflict.version)
        fresh = load_revision(access.repository, rev_pk)
        again = RevisionForm(data, instance=fresh)
        again.is_valid()
        context = revision_context(access, fresh, revision_form=again, revision_conflict=conflict.current)
        return render(request, partial, context, status=200 if request.htmx else 409)
    if request.htmx:
        fresh = load_revision(access.repository, rev_pk)
        return render(request, f"{PAGE}#revision-fields", revision_context(access, fresh))
    return redirect(revision_url(revision, "revision-fields"))


@require_post("starts a new draft from a rubric revision", back="rubrics:revision_detail")
@login_required
def revision_new_draft(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    draft, _ = fork_for_edit(revision, access, lambda draft: None)
    messages.success(request, f"Draft {draft.number} starts from revision {revision.number}.")
    return redirect_to(request, revision_url(draft))


@require_post("approves a rubric revision", back="rubrics:revision_detail")
@login_required
def revision_approve(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """Approve a draft whose items are all approved (after a fix to intent, scope or hack report)."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    try:
        approve_revision(revision, access)
    except RubricInvalid:
        messages.error(request, "The rubric does not validate yet; the problems are shown beside each field.")
    except TransitionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Revision {revision.number} is approved.")
    return redirect_to(request, revision_url(revision))


@require_post("admits a rubric revision, calibrating it first if needed", back="rubrics:revision_detail")
@login_required
def revision_admit(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """Admit through a passing calibration of this exact content; without one, run the calibration, which
    admits the revision when every row holds."""
    access = get_repository_for_user(request, repo_pk, role=Role.MAINTAINER)
    revision = load_revision(access.repository, rev_pk)
    form = CalibrationOptionsForm(request.POST)
    form.is_valid()  # a checkbox: absent means off, any value means on
    suite = bool(form.cleaned_data.get("injection_suite"))
    try:
        retired = admit(revision, by=access, with_suite=suite)
    except NotCalibrated:
        try:
            run = calibration.start(revision, access, admit=True, injection_suite=suite)
        except (TransitionError, QueueUnreachable) as exc:
            messages.error(request, str(exc))
            return redirect_to(request, revision_url(revision))
        with_suite = " and the injection suite finds no attack success" if suite else ""
        messages.info(
            request,
            f"Calibrating revision {revision.number}: admitted when every row holds with the primary "
            f"judge{with_suite}.",
        )
        return redirect_to(
            request, reverse("rubrics:calibration_detail", args=[access.repository.pk, run.pk])
        )
    except TransitionError as exc:
        messages.error(request, str(exc))
    else:
        note = f" (revision {retired.number} is retired)" if retired is not None else ""
        messages.success(request, f"Revision {revision.number} is admitted{note}.")
    return redirect_to(request, revision_url(revision))


@require_GET
@login_required
def revision_compare(request: HtmxHttpRequest, repo_pk: int, rev_pk: int) -> HttpResponse:
    """Two revisions of a task side by side, item by item (matched by id)."""
    access = get_repository_for_user(request, repo_pk)
    left = load_revision(access.repository, rev_pk)
    other_pk = request.GET.get("other", "")
    siblings = list(
        RubricRevision.objects.filter(task_id=left.task_id).only("pk", "number", "status").order_by("-number")
    )
    right = None
    if other_pk:
        other = request_int(other_pk)
        if other is None:
            raise Http404("no such revision")
        right = load_revision(access.repository, other)
        if right.task_id != left.task_id:
            right = None
    if right is None:
        default = left.parent_id or next((r.pk for r in siblings if r.pk != left.pk), None)
        if default is not None:
            right = load_revision(access.repository, default)
    rows = compare_rows(right, left) if right is not None else []
    context = {
        "access": access,
        "repository": access.repository,
        "task": left.task,
        "revision": left,
        "other": right,
        "siblings": siblings,
        "fields": compare_fields(right, left) if right is not None else [],
        "rows": rows,
    }
    template = "rubrics/revision_compare.html#comparison" if request.htmx else "rubrics/revision_compare.html"
    return render(request, template, context)


_REVISION_FIELDS = [
    ("Intent", "intent"),
    ("Allowed globs", "allowed_globs"),
    ("Denied globs", "denied_globs"),
    ("Max changed lines", "max_changed_lines"),
    ("Max files", "max_files"),
    ("Lazy solution", "lazy_solution"),
    ("Valid alternative", "alt_valid_solution"),
]
_ITEM_FIELDS = [
    ("Criterion", "criterion"),
    ("Rationale", "rationale"),
    ("Evidence", "evidence"),
    ("Needs tree", "needs_tree"),
    ("Weight", "weight"),
    ("Review", "review_state"),
]


def _shown(name: str, value: Any) -> str:
    """A value as the page and its edit form put it: globs one per line, a weight as rubric.json writes it
    (2, not 2.0), yes/no for a flag, "no limit" for an absent limit, the review state in words."""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if value is None:
        return "no limit" if name.startswith("max_") else ""
    if name == "review_state":
        return str(ReviewState(value).label)
    return str(value)


# Words, runs of white space, and each other character: the units a changed field's words are marked in.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
# A field longer than this (in tokens, either side) is marked whole: matching stays quick on any text.
MAX_MARKED_TOKENS = 4000


def _marked(tokens: list[str], tag: str) -> str:
    """The tokens escaped, inside one <ins>/<del> (a run of changed words reads as one change)."""
    text = "".join(escape(token) for token in tokens)
    return f"<{tag}>{text}</{tag}>" if text.strip() else text


def word_marks(old: str, new: str) -> tuple[SafeString, SafeString]:
    """``old`` and ``new`` as HTML with the words that differ marked: ``<del>`` in the old, ``<ins>`` in the
    new. Criterion text is anyone's: every token goes through ``escape``; only the tags are ours."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > MAX_MARKED_TOKENS or len(b) > MAX_MARKED_TOKENS:
        return mark_safe(_marked(a, "del")), mark_safe(_marked(b, "ins"))  # each token escaped in _marked
    left: list[str] = []
    right: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append("".join(escape(t) for t in a[i1:i2]))
            right.append("".join(escape(t) for t in b[j1:j2]))
            continue
        left.append(_marked(a[i1:i2], "del"))
        right.append(_marked(b[j1:j2], "ins"))
    return mark_safe("".join(left)), mark_safe("".join(right))  # every token escaped above


def _compared(label: str, old: str | None, new: str | None) -> dict[str, Any]:
    """One row of the comparison: both values, whether they differ and, when both exist and differ, each
    with its changed words marked (``old_marked``, ``new_marked``)."""
    row: dict[str, Any] = {"label": label, "old": old, "new": new, "changed": old != new}
    if row["changed"] and old is not None and new is not None:
        row["old_marked"], row["new_marked"] = word_marks(old, new)
    return row


def compare_fields(old: RubricRevision, new: RubricRevision) -> list[dict[str, Any]]:
    return [
        _compared(label, _shown(name, getattr(old, name)), _shown(name, getattr(new, name)))
        for label, name in _REVISION_FIELDS
    ]


def compare_rows(old: RubricRevision, new: RubricRevision) -> list[dict[str, Any]]:
    """One row per item id in either revision: its fields in both, and whether they differ."""
    old_items = {i.item_id: i for i in old.ordered_items()}
    new_items = {i.item_id: i for i in new.ordered_items()}
    order = [i.item_id for i in new.ordered_items()] + [k for k in old_items if k not in new_items]
    rows = []
    for item_id in order:
        a, b = old_items.get(item_id), new_items.get(item_id)
        either = b if b is not None else a
        assert either is not None  # item_id came from one of the two
        fields = []
        for label, name in _ITEM_FIELDS:
            if name == "weight" and either.kind == ItemKind.BLOCKER:
                continue
            if name in ("evidence", "needs_tree") and either.kind != ItemKind.BLOCKER:
                continue
            va = _shown(name, getattr(a, name)) if a is not None else None
            vb = _shown(name, getattr(b, name)) if b is not None else None
            fields.append(_compared(label, va, vb))
        rows.append(
            {
                "item_id": item_id,
                "kind": either.get_kind_display(),
                "added": a is None,
                "removed": b is None,
                "changed": any(f["changed"] for f in fields if f["label"] != "Review"),
                "fields": fields,
            }
        )
    return rows


@require_GET
@login_required
def calibration_diff(request: HtmxHttpRequest, repo_pk: int, rev_pk: int, diff_pk: int) -> HttpResponse:
    access = get_repository_for_user(request, repo_pk)
    revision = get_object_or_404(revisions_of(access.repository).select_related("task"), pk=rev_pk)
    diff = get_object_or_404(CalibrationDiff.objects.filter(revision=revision), pk=diff_pk)
    context = {
        "access": access,
        "repository": access.repository,
        "task": revision.task,
        "revision": revision,
        "diff": diff,
    }
    template = "rubrics/calibration_diff.html#diff-view" if request.htmx else "rubrics/calibration_diff.html"
    return render(request, template, context)


def render_partials(request: HtmxHttpRequest, names: list[str], context: dict[str, Any]) -> HttpResponse:
    """Several partials of the revision page in one htmx response (the extra ones swap out of band)."""
    body = "".join(render_to_string(f"{PAGE}#{name}", context, request=request) for name in names)
    return HttpResponse(body)


# What a change of the revision's status (a draft turning approved) changes on its page besides the item
# that was acted on: every row's buttons, the add forms, the status card, Activity and History.
TRANSITION_PARTIALS = ["item-sections", "revision-status", "activity", "history"]


def render_transition(request: HtmxHttpRequest, context: dict[str, Any]) -> HttpResponse:
    """The item sections in place of the element the action targeted (one row, or the sections), and the
    rest of what the transition changed out of band."""
    response = render_partials(request, TRANSITION_PARTIALS, {**context, "oob": True})
    return reswap(retarget(response, "#item-sections"), "outerHTML")
