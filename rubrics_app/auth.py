"""Login throttling: django-axes' backend, for the logins it can throttle."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginThrottleBackend(AxesStandaloneBackend):  # type: ignore[misc]
    """django-axes refuses a locked-out username and address before the password is checked. It counts by
    the request's address, so a login without a request (no HTTP: a management command, the test client's
    ``login()``) has nothing to throttle by; it is left to the next backend instead of raising."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
