"""What the rubric views share: the htmx request type, the readers of request parameters, a polled page,
the POST-only decorator, the revision loader and the rows of the item list."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import BadRequest
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.views import defaults
from django_htmx.http import HttpResponseStopPolling
from django_htmx.middleware import HtmxDetails

from grading import MAX_BLOCKERS, MAX_NON_BLOCKERS, MIN_BLOCKERS, MIN_NON_BLOCKERS
from rubrics_app.forms.rubrics import CommentForm, ItemForm
from rubrics_app.models import (
    CalibrationDiff,
    FieldError,
    ItemComment,
    ItemKind,
    Repository,
    ReviewState,
    RevisionStatus,
    RubricItem,
    RubricRevision,
)


class HtmxHttpRequest(HttpRequest):
    """What every view receives: django-htmx's details and a logged-in user (every view is login_required)."""

    htmx: HtmxDetails
    user: User


_ROW_ID = re.compile(r"[0-9]{1,18}")


def request_int(raw: str | None) -> int | None:
    """An id or version sent in a request, or None when it is not one: ASCII digits that fit a 64-bit
    column. (``str.isdigit`` accepts '²', which ``int`` refuses; 5,000 digits overflow the column.)"""
    if raw is None or not _ROW_ID.fullmatch(raw):
        return None
    return int(raw)


class BadParameter(BadRequest):
    """A request parameter no view can use; its message, shown on the 400 page, names the parameter."""


def refuse_control_characters(text: str, what: str) -> None:
    """BadParameter when ``text`` holds a control character (Unicode category Cc: C0, DEL, C1).

    No filter, id, name or choice of this app holds one, and a NUL reaching a query is a 500 on PostgreSQL
    ("text fields cannot contain NUL") where SQLite quietly finds nothing: refused here, the same on both.
    ``what`` names the parameter: "query parameter 'arm'"."""
    for character in text:
        if unicodedata.category(character) == "Cc":
            raise BadParameter(
                f"The {what} holds a control character (U+{ord(character):04X}), which no name, id or filter "
                "here holds: nothing was looked up."
            )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a BadParameter's page says what was wrong, in the site's frame. Django's own 400s
    (a disallowed Host header, too many fields) keep its bare page: their message is for the log, and
    the frame could trip on the same bad request."""
    if not isinstance(exception, BadParameter):
        return defaults.bad_request(request, exception)
    return render(request, "400.html", {"problem": str(exception)}, status=400)


def polled_page(
    request: HtmxHttpRequest, page: str, part: str, context: dict[str, Any], finished: bool
) -> HttpResponse:
    """A page whose partial ``part`` htmx polls while its work runs: the whole ``page``, or under htmx the
    partial, answered with status 286 once ``finished`` (htmx swaps that last one in and stops polling)."""
    if not request.htmx:
        return render(request, page, context)
    response = render(request, f"{page}#{part}", context)
    return HttpResponseStopPolling(response.content) if finished else response


def page_number(request: HttpRequest) -> int:
    """?page=N of a paged list (services.paging); anything else is the first page (a number past the end is
    the last)."""
    number = request_int(request.GET.get("page"))
    return number if number is not None and number < 10**9 else 1


def page_size() -> int:
    """Entries per page of the review queue and of a task's runs."""
    return max(1, int(settings.RUNS_QUEUE_PAGE_SIZE))


# --- POST-only URLs ----------------------------------------------------------------------------------------


def _converters(url_name: str) -> set[str]:
    """The path parameters of the URL named ``url_name`` ("rubrics:revision_detail")."""
    namespace, _, name = url_name.rpartition(":")
    patterns = get_resolver().url_patterns
    if namespace:
        resolvers = [r for r in patterns if isinstance(r, URLResolver) and r.namespace == namespace]
        patterns = [p for r in resolvers for p in r.url_patterns]
    for pattern in patterns:
        if isinstance(pattern, URLPattern) and pattern.name == name:
            return set(pattern.pattern.converters)
    raise LookupError(f"no URL named {url_name!r}")


View = Callable[..., HttpResponse]


def require_post(purpose: str, back: str) -> Callable[[View], View]:
    """Django's ``require_POST``, whose 405 for any other method is a page: what the URL does (``purpose``,
    completing "This address ...") and a link to the page its form is on (the URL named ``back``, with the
    path parameters of this URL that it takes). A bookmark, a reload or a login that returns to an action's
    URL lands here; a bare empty 405 told nobody anything."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method == "POST":
                return view(request, *args, **kwargs)
            needed = _converters(back)
            context = {
                "purpose": purpose,
                "back_url": reverse(back, kwargs={k: v for k, v in kwargs.items() if k in needed}),
            }
            response = render(request, "405.html", context, status=405)
            response["Allow"] = "POST"
            return response

        # Read by views.resume: what a form kept across a login does, and the page it came from.
        wrapped.post_purpose = purpose  # type: ignore[attr-defined]
        wrapped.post_back = lambda kwargs: reverse(  # type: ignore[attr-defined]
            back, kwargs={k: v for k, v in kwargs.items() if k in _converters(back)}
        )
        return wrapped

    return decorator


def form_page(purpose: str) -> Callable[[View], View]:
    """For a page that takes its own form back at its own URL (GET shows it, POST saves it): what sending
    the form does, completing "It ..." (views.resume shows it when a form sent after the session ended is
    kept), and that the page to come back to is this one."""

    def decorator(view: View) -> View:
        view.post_purpose = purpose  # type: ignore[attr-defined]
        view.post_back_is_page = True  # type: ignore[attr-defined]
        return view

    return decorator


def revisions_of(repository: Repository) -> QuerySet[RubricRevision]:
    return RubricRevision.objects.filter(task__repository=repository)


def load_revision(repository: Repository, pk: int) -> RubricRevision:
    """A revision of ``repository`` with everything its page shows, in a fixed number of queries."""
    items = RubricItem.objects.select_related("reviewed_by").prefetch_related(
        Prefetch("comments", queryset=ItemComment.objects.select_related("author"))
    )
    return get_object_or_404(
        revisions_of(repository)
        .select_related("task", "task__repository", "parent", "drafted_by", "approved_by", "admitted_by")
        .prefetch_related(
            Prefetch("items", queryset=items),
            # The page lists the diffs; their bytes are read only on the diff page.
            Prefetch("calibration_diffs", queryset=CalibrationDiff.objects.defer("content")),
        ),
        pk=pk,
    )


def form_is_stale(request: HttpRequest, revision: RubricRevision) -> bool:
    """The form was on the page of a draft that has been approved (or admitted) since.

    Acting on a frozen revision makes a new draft from it, which is what a form shown on that revision's own
    page asks for; a draft's forms (they post ``seen_status=draft``) meeting a frozen revision would fork one
    the maintainer never asked for, so they are told instead."""
    return request.POST.get("seen_status") == RevisionStatus.DRAFT and revision.is_frozen


def load_item(repository: Repository, pk: int) -> RubricItem:
    return get_object_or_404(
        RubricItem.objects.select_related("revision", "revision__task", "reviewed_by").prefetch_related(
            Prefetch("comments", queryset=ItemComment.objects.select_related("author"))
        ),
        revision__task__repository=repository,
        pk=pk,
    )


# --- validation errors in the maintainer's words ------------------------------------------------------

_BLANK = {
    "intent": "Say what the maintainer wants, including what the prompt only implies: the intent is empty.",
    "criterion": "Say what the change must do: the criterion is empty.",
    "evidence": "Cite the evidence: a review comment on the source PR, a guidance line, or path:line.",
    "lazy_solution": "Describe how a weak change could pass the tests and still be unmergeable.",
    "alt_valid_solution": "Describe a different approach that is also mergeable.",
}
_COUNTED = {
    "blockers": (MIN_BLOCKERS, MAX_BLOCKERS, "blockers"),
    "non_blockers": (MIN_NON_BLOCKERS, MAX_NON_BLOCKERS, "non-blockers"),
}


def plain_words(error: FieldError) -> str:
    """grading.schema's problem in a maintainer's words, chosen by its error type (pydantic's, carried from
    grading's validation) rather than by its English message; grading's own message otherwise."""
    if error.type in ("blank", "missing"):
        return _BLANK.get(error.field or "", "This cannot be empty.")
    if error.type == "string_pattern_mismatch":
        return "Use letters, digits, '.', '_' or '-', starting with a letter or digit."
    if error.type == "greater_than":
        return f"Use a number above {error.ctx['gt']}."
    if error.type == "string_too_long":
        return f"Keep it to {error.ctx['max_length']} characters."
    if error.type in ("too_short", "too_long") and error.path in _COUNTED:
        low, high, noun = _COUNTED[error.path]
        return f"A task has {low}–{high} {noun}; this revision has {error.ctx['actual_length']}."
    return error.message


@dataclass
class ValidationReport:
    """The revision's validation errors, sorted to the place each is shown."""

    by_item: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    by_field: dict[str, list[str]] = field(default_factory=dict)  # revision-level field -> messages
    by_diff: dict[int, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)  # not tied to one field (e.g. duplicate ids)
    count: int = 0

    @property
    def ok(self) -> bool:
        return self.count == 0


def validation_report(revision: RubricRevision) -> ValidationReport:
    report = ValidationReport()
    for error in revision.validation_errors():
        report.count += 1
        words = plain_words(error)
        if error.item_pk is not None:
            report.by_item.setdefault(error.item_pk, {}).setdefault(error.field or "criterion", []).append(
                words
            )
        elif error.diff_pk is not None:
            report.by_diff.setdefault(error.diff_pk, []).append(words)
        elif error.field in ("blockers", "non_blockers", "calibration") or error.field is None:
            report.general.append(f"{error.path}: {words}" if error.field is None else words)
        else:
            report.by_field.setdefault(error.field, []).append(words)
    return report


@dataclass
class ItemRow:
    """One blocker or non-blocker as its row shows it: the item, its validation errors, and, while it is
    being edited, the form (with the other maintainer's text when the save conflicted)."""

    item: RubricItem
    errors: dict[str, list[str]] = field(default_factory=dict)
    form: ItemForm | None = None
    conflict: dict[str, Any] | None = None  # {"text": the other maintainer's saved text, "who": their name}
    notice: str = ""  # why an action on this row was refused
    comment_form: CommentForm | None = None

    @property
    def error_list(self) -> list[tuple[str, list[str]]]:
        return sorted(self.errors.items())

    @property
    def is_blocker(self) -> bool:
        return self.item.kind == ItemKind.BLOCKER

    @property
    def is_approved(self) -> bool:
        return self.item.review_state == ReviewState.APPROVED


def item_rows(revision: RubricRevision, report: ValidationReport) -> tuple[list[ItemRow], list[ItemRow]]:
    blockers: list[ItemRow] = []
    non_blockers: list[ItemRow] = []
    for item in revision.ordered_items():
        row = ItemRow(item, report.by_item.get(item.pk, {}))
        (blockers if item.kind == ItemKind.BLOCKER else non_blockers).append(row)
    return blockers, non_blockers
