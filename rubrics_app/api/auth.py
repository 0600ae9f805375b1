"""Token authentication and the per-token limits: who is asking (a live token: not revoked, not expired),
each use recorded (when, from where), at most API_RATE_LIMIT requests per window (429 with Retry-After),
and a body no larger than API_MAX_BODY_BYTES (413, by its Content-Length, before a byte is read)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from django.conf import settings
from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from rubrics_app.api.problems import ApiProblem
from rubrics_app.models import ApiToken
from rubrics_app.models.tokens import TOKEN_TAG, token_hash

# The rate limit's clock, seconds since the epoch: tests replace it to count requests in one window.
clock: Callable[[], float] = time.time


def _token_of(raw: str) -> ApiToken | None:
    tag, _, rest = raw.partition("_")
    prefix, _, secret = rest.partition("_")
    if tag != TOKEN_TAG or not prefix or not secret or len(raw) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=prefix).first()
    # A constant-time comparison is not needed: what is compared is a hash of the secret, not the secret.
    if token is None or token.secret_sha256 != token_hash(secret) or not token.is_active():
        return None
    if not token.user.is_active:
        return None
    return token


def _count_request(token: ApiToken) -> None:
    """One more request in this window, or ApiProblem 429 when the window's limit is reached."""
    window_seconds = max(1, int(settings.API_RATE_WINDOW_SECONDS))
    now = clock()
    window = int(now // window_seconds)
    rows = ApiToken.objects.filter(pk=token.pk)
    started = rows.exclude(window=window).update(window=window, window_requests=1)
    if started or rows.filter(window_requests__lt=settings.API_RATE_LIMIT).update(
        window_requests=F("window_requests") + 1
    ):
        return
    retry = max(1, math.ceil((window + 1) * window_seconds - now))
    raise ApiProblem(
        429,
        "Too many requests",
        f"this token made {settings.API_RATE_LIMIT} requests in the last {window_seconds} s; "
        f"try again in {retry} s",
        headers={"Retry-After": str(retry)},
    )


def _check_body(request: HttpRequest) -> None:
    raw = request.META.get("CONTENT_LENGTH") or "0"
    size = int(raw) if raw.isascii() and raw.isdigit() else 0  # RequestBodyLimitMiddleware refused the rest
    limit = int(settings.API_MAX_BODY_BYTES)
    if size > limit:
        raise ApiProblem(413, "Request body too large", f"the body is {size} bytes; the limit is {limit}")
    if size and request.method in ("POST", "PUT", "PATCH"):
        # Django caps request.body at DATA_UPLOAD_MAX_MEMORY_SIZE (the pages' form fields); an API body is
        # capped by API_MAX_BODY_BYTES above instead, so it is read here, once, within that bound.
        request._body = request.read(limit + 1)


class TokenAuth(HttpBearer):
    """``Authorization: Bearer rbk_...``: the request's ``auth`` is the ApiToken."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        found = _token_of(token)
        if found is None:
            return None
        _count_request(found)
        ApiToken.objects.filter(pk=found.pk).update(
            last_used_at=timezone.now(),
            last_used_from=str(request.META.get("REMOTE_ADDR", ""))[:100],
            uses=F("uses") + 1,
        )
        _check_body(request)
        return found


def token_of(request: HttpRequest) -> ApiToken:
    token = getattr(request, "auth", None)
    assert isinstance(token, ApiToken)
    return token
