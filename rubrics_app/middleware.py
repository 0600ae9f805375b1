"""Middleware: Django's login-required backstop taught about htmx, the request body cap (a request
that says it carries more than REQUEST_MAX_BYTES is answered 413 before anything reads its body; Django
would read a form into memory, or spool an upload to disk, first), and the refusal of control characters in
the query string and the path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import middleware
from django.contrib.auth.signals import user_logged_out
from django.contrib.auth.views import redirect_to_login
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.http.response import HttpResponseBase
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect

from rubrics_app.views import resume
from rubrics_app.views.common import refuse_control_characters


class LoginRequiredMiddleware(middleware.LoginRequiredMiddleware):
    """An htmx request whose session has expired gets the login page as a full page, back to the page.

    Django's 302 to the login page is followed by htmx itself, which swapped the whole login form into the
    item being acted on; its ``next`` was the POST URL (logging in there ended on a 405). htmx is told to
    navigate instead (HX-Redirect), with ``next`` set to the page the browser shows (HX-Current-URL, when it
    is on this site), never to the endpoint of the action.

    A POST, plain or htmx, is kept for after the login (views.resume), and the login page says the session
    ended when it did: the browser named a session the server no longer has, or it still holds the cookie
    that says someone logged in here and never logged out (the session cookie itself goes when the session
    expires, so without this one an expiry looked like a first visit).
    """

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, LOGGED_OUT, False):
            response.delete_cookie(SEEN_COOKIE, samesite="Lax")
        elif not request.COOKIES.get(SEEN_COOKIE) and _logged_in(request):
            response.set_cookie(
                SEEN_COOKIE,
                "1",
                max_age=SEEN_COOKIE_SECONDS,
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response

    # django-stubs says HttpResponseRedirect. HttpResponseClientRedirect must be a 200 (the browser would
    # follow a 3xx itself before htmx saw its HX-Redirect header), so it only shares the redirect base.
    def handle_no_permission(  # type: ignore[override]
        self, request: HttpRequest, view_func: Callable[..., Any]
    ) -> HttpResponse:
        htmx = getattr(request, "htmx", None)
        if _session_ended(request) or request.COOKIES.get(SEEN_COOKIE):
            request.session[resume.ENDED_SESSION_KEY] = True
            request.session.set_expiry(resume.ANONYMOUS_SESSION_SECONDS)
        if request.method == "POST":
            # The form is kept for after the login (views.resume); the login comes back to the page it was on.
            page = resume.keep(request, view_func, current=htmx.current_url_abs_path if htmx else None)
        elif htmx:
            page = htmx.current_url_abs_path or resolve_url("rubrics:repository_list")
        else:
            return super().handle_no_permission(request, view_func)
        login = redirect_to_login(
            page, resolve_url(self.get_login_url(view_func)), self.get_redirect_field_name(view_func)
        )
        return HttpResponseClientRedirect(login["Location"]) if htmx else login

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if request.method == "POST" and request.user.is_authenticated:
            # A logged-in user's next action (the kept form sent again, or anything else) ends a kept form.
            resume.drop(request)
        return super().process_view(request, view_func, view_args, view_kwargs)


# Set at login, deleted at logout: "a session of this browser ended" (no user, no key: just that).
SEEN_COOKIE = "rubrics_had_session"
SEEN_COOKIE_SECONDS = 365 * 24 * 3600
LOGGED_OUT = "rubrics_logged_out"


@receiver(user_logged_out)
def _note_logout(sender: Any, request: HttpRequest | None, **kwargs: Any) -> None:
    if request is not None:
        setattr(request, LOGGED_OUT, True)


def _logged_in(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)  # absent when a middleware before this one answered
    return user is not None and user.is_authenticated


def _session_ended(request: HttpRequest) -> bool:
    """The browser named a session the server no longer has (expired, cleared, or ended by a password
    change): loading it found nothing, so its key is gone."""
    return bool(request.COOKIES.get(settings.SESSION_COOKIE_NAME)) and request.session.session_key is None


class RequestBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        raw = request.META.get("CONTENT_LENGTH") or "0"
        # ASCII digits only ('²' passes isdigit), and short enough to be a size at all.
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
            return HttpResponseBadRequest("Bad Content-Length.", content_type="text/plain")
        limit = int(settings.REQUEST_MAX_BYTES)
        if int(raw) > limit:
            return HttpResponse(
                f"Request body too large: the limit is {limit} bytes.", status=413, content_type="text/plain"
            )
        return self.get_response(request)


class RequestTextMiddleware:
    """Every query parameter (its name and each value) and every text part of the path is checked here,
    once, before any view reads it: a control character is a 400 naming the parameter (views.common's
    ``refuse_control_characters``), on every database. Posted forms check their own fields (Django's
    CharField refuses NUL with a form error); a view that reads a posted value itself checks it with the
    same rule."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> None:
        for name, values in request.GET.lists():
            for text in (name, *values):
                refuse_control_characters(text, f"query parameter {name!r}")
        for name, value in view_kwargs.items():
            if isinstance(value, str):
                refuse_control_characters(value, f"URL's {name}")
        for value in view_args:
            if isinstance(value, str):
                refuse_control_characters(value, "URL")
