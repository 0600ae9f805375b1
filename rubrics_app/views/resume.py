"""A form sent after the session ended is kept, and sent again once the user logs in and confirms it.

A POST that arrives without a logged-in user (the session expired, was cleared, or its cookie is gone) was
answered with the login page, and the login came back to the action's URL: a 405, and the label, the
cutoffs or the approval was lost. Instead the login-required middleware keeps the form here: the URL it was
sent to (a path of this site that resolves to one of its views), its fields (every value of every name,
never the CSRF token) and the names of the files it carried (a file is never kept: the page says so and
asks for it again), in the session the browser gets back with the login page. Nothing is stored for
another browser: the session is the new one this browser holds, and Django's login keeps an anonymous
session's data when it cycles the key.

After the login the user sees what was sent, and to where, and sends it again with a button (the form posts
to the original URL with a fresh CSRF token, as the page's own form would) or drops it. Nothing is replayed
without that click: the action runs under whoever logged in, with their permissions, because they saw it.

Bounds: at most ``MAX_BYTES`` of field names and values (more is not kept, and the page says so), only
for ``KEPT_FOR`` after it was sent, and one form per session (the latest). The next POST of a logged-in
user drops it, whether that is the form sent again or any other action."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from rubrics_app.views.common import require_post

SESSION_KEY = "rubrics_kept_post"
# Set by the middleware when a session of this browser ended, so that the login page can say so.
ENDED_SESSION_KEY = "rubrics_session_ended"
# A label, a note, a revision's fields or the cutoffs (100,000 characters at most) fit with room to spare.
MAX_BYTES = 512 * 1024
KEPT_FOR = datetime.timedelta(hours=1)
# The anonymous session that holds it lives no longer (the login gives the session the usual age again), so
# the rows that requests without a login leave behind go with the next clearsessions.
ANONYMOUS_SESSION_SECONDS = int(KEPT_FOR.total_seconds())
# How much of one value the confirm page shows (the form carries all of it).
SHOWN_CHARS = 300
# Fields the page never shows or sends again: the old CSRF token (the confirm form carries a fresh one).
_DROPPED = {"csrfmiddlewaretoken"}


def is_local_path(url: str) -> bool:
    """A path of this site ("/repos/1/"), never another site's address ("//evil.example/", "https://…",
    "/\\evil.example")."""
    return (
        url.startswith("/")
        and not url.startswith(("//", "/\\"))
        and url_has_allowed_host_and_scheme(url, allowed_hosts=None)
    )


def _view_of(path: str) -> Callable[..., Any] | None:
    """The view ``path`` (its query left out) resolves to, or None."""
    try:
        return resolve(path.split("?", 1)[0]).func
    except Resolver404:
        return None


def purpose_of(view: Callable[..., Any] | None) -> str:
    """What the view does when its form is sent ("records a reviewer's verdict …"), as its ``require_post``
    says; a plain description for a view that says nothing."""
    purpose = getattr(view, "post_purpose", None)
    return purpose if isinstance(purpose, str) else "sends a form"


def _back_from_referer(request: HttpRequest) -> str | None:
    """The page the form was on, from the Referer header, when it is a page of this site."""
    referer = request.headers.get("Referer", "")
    if not url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()}):
        return None
    parts = urlsplit(referer)
    local = parts.path + (f"?{parts.query}" if parts.query else "")
    return local if is_local_path(local) else None


def back_page(request: HttpRequest, view: Callable[..., Any] | None, current: str | None = None) -> str:
    """Where the user was: ``current`` (htmx's current URL) or the Referer when on this site, else the view's
    own page (``form_page``) or the page its ``require_post`` names, else the repository list."""
    for candidate in (current, _back_from_referer(request)):
        if candidate and is_local_path(candidate):
            return candidate
    if getattr(view, "post_back_is_page", False):
        return request.get_full_path()
    back = getattr(view, "post_back", None)
    if callable(back):
        match = resolve(request.path)
        url = back(match.kwargs)
        if isinstance(url, str) and is_local_path(url):
            return url
    return reverse("rubrics:repository_list")


def keep(request: HttpRequest, view: Callable[..., Any], *, current: str | None = None) -> str:
    """Keep the POST of ``request`` (its user is anonymous) for after the login; return the page the user
    was on, for the login's ``next``."""
    back = back_page(request, view, current)
    path = request.get_full_path()
    if not is_local_path(path) or getattr(view, "kept_across_login", True) is False:
        return back
    fields: list[tuple[str, list[str]]] = [
        (name, [str(value) for value in values])
        for name, values in request.POST.lists()
        if name not in _DROPPED
    ]
    files = [[name, [f.name or "" for f in uploads]] for name, uploads in request.FILES.lists()]
    size = sum(len(name.encode()) + sum(len(value.encode()) for value in values) for name, values in fields)
    kept: dict[str, Any] = {
        "path": path,
        "back": back,
        "at": timezone.now().isoformat(),
        "files": files,
        "size": size,
    }
    kept["fields"] = fields if size <= MAX_BYTES else None
    request.session[SESSION_KEY] = kept
    request.session.set_expiry(ANONYMOUS_SESSION_SECONDS)
    return back


class KeptPost(NamedTuple):
    path: str
    back: str
    purpose: str
    at: datetime.datetime
    fields: list[tuple[str, list[str]]] | None  # None: too large to keep
    files: list[tuple[str, list[str]]]
    size: int


def kept(request: HttpRequest) -> KeptPost | None:
    """The form kept in this session, when there is one still young enough, sent to a path of this site
    that resolves; None otherwise (and anything else found is dropped)."""
    raw = request.session.get(SESSION_KEY)
    if raw is None:
        return None
    try:
        at = datetime.datetime.fromisoformat(raw["at"])
        path, back = str(raw["path"]), str(raw["back"])
        fields = (
            None if raw["fields"] is None else [(str(n), [str(v) for v in vs]) for n, vs in raw["fields"]]
        )
        files = [(str(n), [str(v) for v in vs]) for n, vs in raw["files"]]
        size = int(raw["size"])
    except (KeyError, TypeError, ValueError):
        request.session.pop(SESSION_KEY, None)
        return None
    view = _view_of(path)
    if view is None or not is_local_path(path) or timezone.now() - at > KEPT_FOR:
        request.session.pop(SESSION_KEY, None)
        return None
    if not is_local_path(back):
        back = reverse("rubrics:repository_list")
    return KeptPost(path, back, purpose_of(view), at, fields, files, size)


def drop(request: HttpRequest) -> None:
    request.session.pop(SESSION_KEY, None)


def _shortened(value: str) -> str:
    if len(value) <= SHOWN_CHARS:
        return value
    return f"{value[:SHOWN_CHARS]}… ({len(value)} characters in all)"


@require_GET
@login_required
def resume_post(request: HttpRequest) -> HttpResponse:
    """What was sent when the session ended, with a button that sends it again and one that drops it."""
    post = kept(request)
    if post is None:
        return render(request, "registration/resume_post.html", {"post": None}, status=404)
    shown = [
        (
            name,
            [v if len(v) <= SHOWN_CHARS else f"{v[:SHOWN_CHARS]}… ({len(v)} characters in all)" for v in vs],
        )
        for name, vs in post.fields or []
    ]
    context = {"post": post, "shown": shown, "max_bytes": MAX_BYTES}
    return render(request, "registration/resume_post.html", context)


@require_post("drops a form kept across a login", back="resume_post")
@login_required
def resume_drop(request: HttpRequest) -> HttpResponse:
    """Drop the kept form (the middleware already did, as for any POST) and go back to the page."""
    back = str(request.POST.get("back", ""))
    return HttpResponseRedirect(back if is_local_path(back) else settings.LOGIN_REDIRECT_URL)
