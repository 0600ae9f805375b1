"""What the Anthropic and OpenAI backends share: one SSL context, and how an SDK error reads."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping

import httpx2
from pydantic import JsonValue

from grading.errors import InputError
from grading.judge.backend import Decoding


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One context for every client: building the default one loads the CA bundle again (~0.1 s a call)."""
    return httpx2.create_ssl_context()


def describe_sdk_error(
    provider: str,
    err: Exception,
    *,
    max_retries: int,
    timeout: float,
    timeout_error: type[Exception],
    status_error: type[Exception],
    connection_error: type[Exception],
) -> str:
    """One line for a call that failed after the SDK's own retries (each SDK has its own error classes)."""
    if isinstance(err, timeout_error):  # a subclass of connection_error in both SDKs: test it first
        return f"{provider}: timed out after {max_retries} retries ({timeout:g}s per attempt)"
    if isinstance(err, status_error):
        code: int = getattr(err, "status_code", 0)
        retried = f" after {max_retries} retries" if code == 429 or code >= 500 else ""
        return f"{provider}: HTTP {code}{retried}: {getattr(err, 'message', err)}"
    if isinstance(err, connection_error):
        return f"{provider}: connection failed after {max_retries} retries: {err}"
    return f"{provider}: {err}"


def checked_decoding(decoding: Mapping[str, JsonValue] | None, reserved: frozenset[str]) -> Decoding:
    """A copy of the decoding parameters; InputError for a key the runner sets itself (model, messages...)."""
    checked = dict(decoding or {})
    for key in checked:
        if key in reserved:
            raise InputError(
                None, f"{key!r} is set by the judge runner, not a decoding parameter", f"decoding.{key}"
            )
    return checked
