"""Django's login-required backstop, taught about htmx."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import middleware
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


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
