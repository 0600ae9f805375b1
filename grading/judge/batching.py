"""Judge calls made by many threads, sent together through a provider's batch API.

A sweep in the app grades its runs in a pool of threads, each with an event loop of its own, so the
sweep's :class:`grading.judge.sweep.BatchingBackend` (one event loop) cannot gather them.
:class:`ThreadBatchBackend` can: every thread's ``complete`` joins one pending list, and the list is sent as
one batch (``complete_many`` of an Anthropic or OpenAI backend built with ``batch=True``) from a thread of
its own once ``size`` calls are waiting, or once no call joined for ``window`` seconds (or ``max_wait`` passed
since the first). Each waiting call gets its own reply or error; a batch that fails wakes every call with
the error, so no thread waits forever.

Everything else (spec, model, decoding, ``render``) is the wrapped backend's, so the verdict cache keys, the
request bodies and the fence are those of interactive calls.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, cast

from grading.judge.backend import Backend, BackendError, BackendReply, BatchBackend, JudgeRequest


async def answer_batch(
    backend: BatchBackend, requests: Sequence[JudgeRequest]
) -> list[BackendReply | BackendError]:
    """One reply or error per request, in order, whatever happens: a batch that fails, or answers another
    number of requests, gives every request its error. Every waiting call must wake up: an unresolved
    future would hang its caller."""
    try:
        replies = list(await backend.complete_many(requests))
        if len(replies) != len(requests):
            raise BackendError(f"the batch answered {len(replies)} of {len(requests)} requests")
    except Exception as exc:
        failure = exc if isinstance(exc, BackendError) else BackendError(f"batch failed: {exc!r}")
        return [failure for _ in requests]
    return replies


class ThreadBatchBackend:
    """A backend whose calls, from any thread, are sent as batches (see the module)."""

    # The batch API's few requests (create, poll, results) are not judge calls: the provider limit on calls
    # in flight does not apply to them, and a call waiting for its batch holds no slot.
    limits_each_request = True

    def __init__(
        self, backend: Backend, *, size: int = 100, window: float = 2.0, max_wait: float = 30.0
    ) -> None:
        if size < 1:
            raise ValueError("a batch holds at least one call")
        if not callable(getattr(backend, "complete_many", None)):
            raise TypeError(f"{backend.spec} cannot send batches")
        self.inner = cast(BatchBackend, backend)
        self.spec = backend.spec
        self.model = backend.model
        self.scripted = backend.scripted
        self.decoding = backend.decoding
        self.batch = True
        self.timeout = getattr(backend, "timeout", None)
        self.size = size
        self.window = window
        self.max_wait = max_wait
        self.batches: list[int] = []  # the size of each batch sent
        self._lock = threading.Lock()
        self._pending: list[tuple[JudgeRequest, Future[BackendReply]]] = []
        self._first = 0.0
        self._last = 0.0
        self._timer: threading.Thread | None = None

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return self.inner.render(request)

    async def complete(self, request: JudgeRequest) -> BackendReply:
        future: Future[BackendReply] = Future()
        full: list[tuple[JudgeRequest, Future[BackendReply]]] = []
        with self._lock:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending.append((request, future))
            self._last = now
            if len(self._pending) >= self.size:
                full, self._pending = self._pending, []
            elif self._timer is None:
                self._timer = threading.Thread(
                    target=self._wait_then_send, name="judge-batch-timer", daemon=True
                )
                self._timer.start()
        if full:
            self._start(full)
        return await asyncio.wrap_future(future)

    def _wait_then_send(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._timer = None
                    return
                now = time.monotonic()
                due = min(self._last + self.window, self._first + self.max_wait)
                if now >= due:
                    taken, self._pending = self._pending, []
                    self._timer = None
                    break
            time.sleep(min(max(due - now, 0.01), 0.5))
        self._send(taken)

    def _start(self, taken: list[tuple[JudgeRequest, Future[BackendReply]]]) -> None:
        threading.Thread(target=self._send, args=(taken,), name="judge-batch", daemon=True).start()

    def _send(self, taken: list[tuple[JudgeRequest, Future[BackendReply]]]) -> None:
        with self._lock:
            self.batches.append(len(taken))
        replies = asyncio.run(answer_batch(self.inner, [request for request, _ in taken]))
        for (_, future), reply in zip(taken, replies, strict=True):
            if isinstance(reply, BaseException):
                future.set_exception(reply)
            else:
                future.set_result(reply)
