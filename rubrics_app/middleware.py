"""Middleware: Django's login-required backstop taught about htmx, the request body cap (a request
that says it carries more than REQUEST_MAX_BYTES is answered 413 before anything reads its body; Django
would read a form into memory, or spool an upload to disk, first), and the refusal of control characters in
the query string and the path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import middleware
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect

from rubrics_app.api.problems import Problem, problem_response
from rubrics_app.views.common import refuse_control_characters


class LoginRequiredMiddleware(middleware.LoginRequiredMiddleware):
    """An htmx request whose session has expired gets the login page as a full page, back to the page.

    Django's 302 to the login page is followed by htmx itself, which swapped the whole login form into the
    item being acted on; its ``next`` was the POST URL (logging in there ended on a 405). htmx is told to
    navigate instead (HX-Redirect), with ``next`` set to the page the browser shows (HX-Current-URL, when it
    is on this site), never to the endpoint of the action.
    """

    # django-stubs says HttpResponseRedirect. HttpResponseClientRedirect must be a 200 (the browser would
    # follow a 3xx itself before htmx saw its HX-Redirect header), so it only shares the redirect base.
    def handle_no_permission(  # type: ignore[override]
        self, request: HttpRequest, view_func: Callable[..., Any]
    ) -> HttpResponse:
        htmx = getattr(request, "htmx", None)
        if not htmx:
            return super().handle_no_permission(request, view_func)
        page = htmx.current_url_abs_path or resolve_url("rubrics:repository_list")
        login = redirect_to_login(
            page, resolve_url(self.get_login_url(view_func)), self.get_redirect_field_name(view_func)
        )
        return HttpResponseClientRedirect(login["Location"])


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
            if request.path.startswith("/api/"):
                # The API answers every error as problem details, this one too.
                detail = f"the body is {raw} bytes; the limit is {limit}"
                return problem_response(Problem(title="Request body too large", status=413, detail=detail))
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
