"""The skeleton the Anthropic and OpenAI backends share (:class:`SdkBackend`): construction and the checked
decoding, one SDK client per call on one shared SSL context, sending a body with the SDK's named keys
apart from the rest, the batch's poll-until-ended loop, and how an SDK error reads (redacted). Each
backend adds its body, its SDK call and its reply mapping."""

from __future__ import annotations

import asyncio
import functools
import ssl
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, ClassVar

import httpx2
from pydantic import JsonValue

from grading.errors import InputError
from grading.judge.backend import BackendError, BackendReply, Decoding, JudgeRequest, redact_secrets


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


class SdkBackend[Client: AbstractAsyncContextManager[Any], Reply](ABC):
    """A judge backend over a provider SDK. ``Client`` is the SDK's async client, ``Reply`` what its create
    call returns. Subclasses name the provider, the SDK's error classes and the keys a decoding may not set,
    and give :meth:`render`, :meth:`_make_client`, :meth:`_create`, :meth:`_reply` and :meth:`_run_batch`.
    """

    PROVIDER: ClassVar[str]
    RESERVED_KEYS: ClassVar[frozenset[str]]  # what the judge sees and how it answers: the runner's
    NAMED_KEYS: ClassVar[tuple[str, ...]]  # body keys the SDK call takes by name; the rest go in extra_body
    SECRET_ENV: ClassVar[tuple[str, ...]]  # environment variables whose values never reach an error
    SDK_ERROR: ClassVar[type[Exception]]
    TIMEOUT_ERROR: ClassVar[type[Exception]]
    STATUS_ERROR: ClassVar[type[Exception]]
    CONNECTION_ERROR: ClassVar[type[Exception]]

    scripted = False
    limits_each_request = True  # its HTTP client takes the provider limit per request (retries too)

    def __init__(
        self,
        model: str,
        *,
        decoding: Decoding | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        batch: bool = False,
        batch_poll_interval: float = 30.0,
        batch_deadline: float = 24 * 3600.0,
    ) -> None:
        self.spec = f"{self.PROVIDER}:{model}"
        self.model = model
        self.decoding: Decoding = checked_decoding(decoding, self.RESERVED_KEYS)
        self.base_url = base_url
        self.api_key = api_key
        self.max_retries = max_retries
        self.timeout = timeout
        # The client each event loop's session shares (:meth:`session`); none outside a session.
        self._sessions: dict[asyncio.AbstractEventLoop, Client] = {}
        self.batch = batch  # the runner sends sweeps through complete_many (the provider's batch API)
        self.batch_poll_interval = batch_poll_interval
        self.batch_deadline = batch_deadline

    @abstractmethod
    def render(self, request: JudgeRequest) -> dict[str, Any]:
        """The exact JSON body sent for this request."""

    @abstractmethod
    def _make_client(self, kwargs: dict[str, Any]) -> Client:
        """The SDK's async client from the common keyword arguments."""

    @abstractmethod
    async def _create(self, client: Client, named: dict[str, Any], extra: dict[str, Any] | None) -> Reply:
        """The SDK's create call for one body: ``named`` keys by name, ``extra`` as ``extra_body``."""

    @abstractmethod
    def _reply(self, reply: Reply) -> BackendReply:
        """The SDK's reply in the runner's terms."""

    @abstractmethod
    async def _run_batch(
        self, client: Client, requests: Sequence[JudgeRequest], custom_ids: list[str]
    ) -> list[BackendReply | BackendError]:
        """Send ``requests`` as one batch under ``custom_ids``; one reply or error each, in order."""

    async def complete(self, request: JudgeRequest) -> BackendReply:
        """Send one request; raise :class:`BackendError` when it fails after the SDK's retries."""
        return self._reply(await self._send(self.render(request)))

    async def _send(self, body: dict[str, Any]) -> Reply:
        named = {k: body[k] for k in (*self.NAMED_KEYS, "tools") if k in body}
        extra = {k: v for k, v in body.items() if k not in named}
        try:
            shared = self._sessions.get(asyncio.get_running_loop())
            if shared is not None:
                return await self._create(shared, named, extra or None)
            # Outside a session the client is built per call and inside the try: missing credentials are a
            # failed call, not a crash (the SDK reports them as an error of its own), and --render-only
            # never needs a key.
            async with self._client() as client:
                return await self._create(client, named, extra or None)
        except self.SDK_ERROR as err:
            raise BackendError(self._describe(err)) from err

    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]:
        """Send many requests as one batch; one reply or error per request, in request order. Never raises:
        when the batch itself fails (creation, polling, deadline), every entry is that error."""
        if not requests:
            return []
        custom_ids = [f"judge-{i}" for i in range(len(requests))]
        try:
            async with self._client() as client:
                return await self._run_batch(client, requests, custom_ids)
        except BackendError as err:
            return [err for _ in requests]
        except self.SDK_ERROR as err:
            failure = BackendError(self._describe(err))
            failure.__cause__ = err
            return [failure for _ in requests]

    async def _wait_for_batch[Batch](
        self,
        batch: Batch,
        batch_id: str,
        ended: Callable[[Batch], bool],
        retrieve: Callable[[str], Awaitable[Batch]],
        cancel: Callable[[str], Awaitable[object]],
        what: str,
    ) -> Batch:
        """Poll ``batch`` every ``batch_poll_interval`` seconds until it has ended; past ``batch_deadline``
        it is cancelled and :class:`BackendError` raised."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.batch_deadline
        while not ended(batch):
            if loop.time() >= deadline:
                await cancel(batch_id)
                raise BackendError(
                    f"{self.PROVIDER}: {what} {batch_id} did not end within {self.batch_deadline:g}s"
                )
            await asyncio.sleep(self.batch_poll_interval)
            batch = await retrieve(batch_id)
        return batch

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Calls made in this event loop while the session is open share one SDK client, so its connection
        pool: a sweep's calls reuse their connections (and TLS sessions) instead of building a client and
        opening a connection for each call. The client is closed with the session, so no socket outlives
        it. A session that cannot build its client (no credentials) shares none: each call then fails as
        it would without a session. Sessions nest (the outermost one owns the client)."""
        loop = asyncio.get_running_loop()
        if loop in self._sessions:
            yield
            return
        try:
            client = self._client()
        except (BackendError, self.SDK_ERROR):
            yield
            return
        async with client:
            self._sessions[loop] = client
            try:
                yield
            finally:
                del self._sessions[loop]

    def _client(self) -> Client:
        # One client per call outside a session: the runner may drive calls from more than one event loop,
        # and a client closed with its call never leaves a socket behind.
        kwargs: dict[str, Any] = {"max_retries": self.max_retries, "timeout": self.timeout}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        return self._make_client(kwargs)

    def _describe(self, err: Exception) -> str:
        return self._redact(self._describe_error(err))

    def _redact(self, text: str) -> str:
        return redact_secrets(text, self.api_key, env=self.SECRET_ENV)

    def _describe_error(self, err: Exception) -> str:
        return describe_sdk_error(
            self.PROVIDER,
            err,
            max_retries=self.max_retries,
            timeout=self.timeout,
            timeout_error=self.TIMEOUT_ERROR,
            status_error=self.STATUS_ERROR,
            connection_error=self.CONNECTION_ERROR,
        )
