"""Request body cap: a request that says it carries more than REQUEST_MAX_BYTES is answered 413 before
anything reads its body (Django would read a form into memory, or spool an upload to disk, first)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


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
