"""Limits on judge calls when many runs are graded at once: per-provider concurrency and rate, and a spend
budget checked before every call.

:class:`LimitedBackend` wraps a judge backend. Before each call it reserves the call's estimated cost from
a :class:`Budget` (:func:`grading.judge.cost.estimate_call_cost`), then takes a slot of the provider's
:class:`ProviderLimit` (at most ``concurrency`` calls in flight, calls started at least ``60 / per_minute``
seconds apart). A call that would take the spend past the budget is never made: :class:`BudgetExceeded`
is raised instead. It is not a :class:`~grading.judge.backend.BackendError`, so the runner does not turn
it into a judge failure: it stops whoever is grading, with its message.

A limit counts the HTTP requests the provider receives: the SDK backends send through
:class:`LimitedSendClient`, which takes a slot and a turn for every request, so a retry the SDK makes counts
again. A backend that does not speak HTTP itself (the Claude Code judge) holds one slot for its whole call.

Two kinds of limit: :class:`ProviderLimit` is shared by every thread of one process;
:class:`SharedProviderLimit` by every process on every machine that reaches one Redis server. Its calls in
flight are a Redis semaphore whose holders expire (a holder killed mid-call frees its slot once the call's
timeout has passed), and its rate is a pyrate-limiter bucket in the same Redis.

Everything else (spec, model, decoding, ``render``) is the wrapped backend's, so cache keys do not change.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import httpx2
import redis
from pydantic import BaseModel, ConfigDict, Field
from pyrate_limiter import Duration, Rate, RateItem, RedisBucket

from grading.errors import InputError
from grading.judge.backend import Backend, BackendError, BackendReply, JudgeRequest
from grading.judge.cost import PriceTable, estimate_call_cost


class ProviderLimitSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    concurrency: int = Field(ge=1)
    per_minute: int = Field(default=0, ge=0)  # 0: no rate limit


def parse_provider_limits(text: str, source: str = "SWEEP_PROVIDER_LIMITS") -> dict[str, ProviderLimitSpec]:
    """``"anthropic=4/50,openai=8"``: per provider, calls in flight at once and (after ``/``) calls started
    per minute. InputError naming ``source`` for anything else."""
    limits: dict[str, ProviderLimitSpec] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        provider, sep, value = part.partition("=")
        provider = provider.strip()
        concurrency, _, per_minute = value.strip().partition("/")
        try:
            if not sep or not provider:
                raise ValueError
            spec = ProviderLimitSpec(concurrency=int(concurrency), per_minute=int(per_minute or 0))
        except ValueError:
            raise InputError(
                None,
                f"{part!r}: expected PROVIDER=CONCURRENCY or PROVIDER=CONCURRENCY/PER_MINUTE with whole "
                "numbers (concurrency at least 1), e.g. anthropic=4/50",
                source,
            ) from None
        limits[provider] = spec
    return limits


def provider_of(spec: str) -> str:
    """The provider part of a judge spec (``anthropic`` of ``anthropic:claude-...``)."""
    return spec.partition(":")[0]


# How long a slot is held at most when the backend names no timeout of its own.
DEFAULT_HOLD_SECONDS = 600.0


class Limit(Protocol):
    spec: ProviderLimitSpec

    def slot(self, hold: float = DEFAULT_HOLD_SECONDS) -> AbstractAsyncContextManager[None]: ...


class ProviderLimit:
    """At most ``concurrency`` calls in flight, and calls started ``60 / per_minute`` s apart, across every
    thread and event loop of the process."""

    def __init__(self, spec: ProviderLimitSpec) -> None:
        self.spec = spec
        self._slots = threading.BoundedSemaphore(spec.concurrency)
        self._lock = threading.Lock()
        self._next_start = 0.0

    def _wait_for_turn(self) -> float:
        if not self.spec.per_minute:
            return 0.0
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + 60.0 / self.spec.per_minute
            return start - now

    @asynccontextmanager
    async def slot(self, hold: float = DEFAULT_HOLD_SECONDS) -> AsyncIterator[None]:
        # ``hold`` does not apply: a thread that dies takes its process, and this limit, with it.
        # The semaphore is a thread one (each grading thread runs its own event loop): wait for it off the
        # loop, polling, so a cancelled wait never leaves a slot taken.
        while not self._slots.acquire(blocking=False):
            await asyncio.sleep(0.01)
        try:
            delay = self._wait_for_turn()
            if delay > 0:
                await asyncio.sleep(delay)
            yield
        finally:
            self._slots.release()


class LimitUnavailable(Exception):
    """The Redis server holding a shared limit could not be reached in time: the call was not made."""


# KEYS[1]: the holders (a sorted set of holder ids scored by when their hold expires, in Redis's own
# milliseconds, so that the machines' clocks do not matter). ARGV: the limit, the holder id, the hold in ms.
# Expired holders are dropped first; a free slot is taken in the same step. Returns 1 when taken.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expires, ARGV[2])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.max(expires, tonumber(last[2])) + 1000)
return 1
"""

# The same holder's hold starts again from now (after it waited for its turn); 0 when it had expired.
_RENEW = """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], expires, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], math.max(expires, tonumber(last[2])) + 1000)
return 1
"""


def rates_of(spec: ProviderLimitSpec) -> list[Rate]:
    """The rate of a spec as pyrate-limiter rates: at most ``per_minute`` starts in any minute, spaced
    ``60 / per_minute`` s apart (so a minute's calls are not sent in one burst)."""
    if not spec.per_minute:
        return []
    rates = [Rate(spec.per_minute, Duration.MINUTE)]
    spacing_ms = Duration.MINUTE.value // spec.per_minute
    if spacing_ms >= 1 and spec.per_minute > 1:
        rates.insert(0, Rate(1, spacing_ms))
    return rates


class SharedProviderLimit:
    """At most ``concurrency`` calls in flight and ``per_minute`` started per minute across every process
    that uses the same Redis server and ``key``.

    Calls in flight are a semaphore: a sorted set of holder ids scored by when each hold expires, taken
    and renewed by Lua scripts (one atomic step each). A holder that dies mid-call (kill -9, a lost
    machine) frees its slot once its hold, the call's timeout, has passed. Starts are a pyrate-limiter
    :class:`~pyrate_limiter.RedisBucket` (a sliding-window log in the same server; its timestamps are the
    workers' wall clocks, which should agree to a few milliseconds, as NTP keeps them).

    When the server cannot be reached for ``unavailable_after`` seconds, :class:`LimitUnavailable` is
    raised and the call is not made. Every Redis command is bounded by ``socket_timeout``.
    """

    poll_seconds = 0.01

    def __init__(
        self,
        spec: ProviderLimitSpec,
        url: str,
        key: str,
        *,
        unavailable_after: float = 30.0,
        socket_timeout: float = 5.0,
    ) -> None:
        self.spec = spec
        self.key = key
        self.unavailable_after = unavailable_after
        self._redis = redis.Redis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )
        self._holders = f"{key}:in-flight"
        self._starts = f"{key}:starts"
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._renew = self._redis.register_script(_RENEW)
        self._rates = rates_of(spec)
        self._bucket: RedisBucket | None = None
        self._bucket_lock = threading.Lock()  # put and waiting read the bucket's last verdict

    def _retrying[T](self, step: Callable[[], T], deadline: float) -> T | None:
        """``step()``, or None when Redis failed and there is time left to try again."""
        try:
            return step()
        except redis.RedisError as exc:
            if time.monotonic() >= deadline:
                raise LimitUnavailable(
                    f"the Redis server of the shared provider limit {self.key!r} could not be reached for "
                    f"{self.unavailable_after:g}s: {exc}"
                ) from exc
            return None

    async def _take_slot(self, holder: str, hold_ms: int) -> None:
        deadline = time.monotonic() + self.unavailable_after
        while True:
            taken = self._retrying(
                lambda: self._acquire(keys=[self._holders], args=[self.spec.concurrency, holder, hold_ms]),
                deadline,
            )
            if taken:
                return
            if taken is not None:  # all slots taken: not a failure, so the deadline starts again
                deadline = time.monotonic() + self.unavailable_after
            await asyncio.sleep(self.poll_seconds if taken is not None else 0.5)

    def _put(self) -> int:
        """Take a start now (0), or the milliseconds to wait before trying again."""
        with self._bucket_lock:
            if self._bucket is None:
                self._bucket = RedisBucket.init(self._rates, self._redis, self._starts)
            bucket = self._bucket
            item = RateItem(self.key, bucket.now())
            if bucket.put(item):
                bucket.leak(item.timestamp)  # starts older than the longest window
                self._redis.pexpire(self._starts, Duration.MINUTE.value * 2)
                return 0
            wait = bucket.waiting(item)
            assert isinstance(wait, int)
            return max(wait, 1)

    async def _take_turn(self) -> bool:
        """Wait for this call's start; True when it had to wait."""
        waited = False
        deadline = time.monotonic() + self.unavailable_after
        while True:
            wait = self._retrying(self._put, deadline)
            if wait == 0:
                return waited
            if wait is not None:
                deadline = time.monotonic() + self.unavailable_after
                waited = True
            await asyncio.sleep(wait / 1000 if wait is not None else 0.5)

    @asynccontextmanager
    async def slot(self, hold: float = DEFAULT_HOLD_SECONDS) -> AsyncIterator[None]:
        holder = uuid.uuid4().hex
        hold_ms = max(1, math.ceil(hold * 1000))
        try:
            while True:
                await self._take_slot(holder, hold_ms)
                if not self._rates or not await self._take_turn():
                    break
                # The hold runs from the call's start; a slot that expired while waiting is taken again.
                renewed = self._retrying(
                    lambda: self._renew(keys=[self._holders], args=[holder, hold_ms]),
                    time.monotonic() + self.unavailable_after,
                )
                if renewed:
                    break
            yield
        finally:
            with contextlib.suppress(redis.RedisError):  # the hold expires on its own
                self._redis.zrem(self._holders, holder)


@dataclass
class _CallLimit:
    """The limit (and the hold) a LimitedBackend call asks of every HTTP request it sends, and the
    LimitUnavailable that refused one of them, if any."""

    limit: Limit
    hold: float
    unavailable: LimitUnavailable | None = None


_request_limit: contextvars.ContextVar[_CallLimit | None] = contextvars.ContextVar(
    "provider_request_limit", default=None
)


class LimitedSendClient(httpx2.AsyncClient):
    """An HTTP client whose every request, a retry included, waits for the caller's provider limit. The SDK
    backends build their clients from this (a non-streamed reply is read before ``send`` returns, so the
    slot covers the whole exchange)."""

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        limited = _request_limit.get()
        if limited is None:
            return await super().send(request, **kwargs)
        if limited.unavailable is not None:
            # The SDK retries whatever its client raised: the limit's server is not asked (and waited for)
            # once more per retry.
            raise limited.unavailable
        try:
            async with limited.limit.slot(limited.hold):
                return await super().send(request, **kwargs)
        except LimitUnavailable as exc:
            limited.unavailable = exc
            raise


class BudgetExceeded(Exception):
    """The next call would take the spend past the budget; it was not made."""


class Budget:
    """What may still be spent: ``cap_usd`` less ``spent_usd`` before, less what calls made since cost, less
    what calls in flight may cost (their estimates)."""

    def __init__(self, cap_usd: float, spent_usd: float, *, what: str = "the spend cap") -> None:
        self.cap_usd = cap_usd
        self.spent_before = spent_usd
        self.what = what
        self.spent = 0.0
        self.reserved = 0.0
        self.in_flight = 0
        self._changed = threading.Condition()

    def reserve(self, estimate: float) -> None:
        """Set ``estimate`` aside for a call, or raise BudgetExceeded. While other calls are under way and
        their estimates leave no room, wait for them: they usually cost less than estimated."""
        with self._changed:
            while True:
                total = self.spent_before + self.spent
                if total + self.reserved + estimate <= self.cap_usd:
                    self.reserved += estimate
                    self.in_flight += 1
                    return
                if self.in_flight == 0:
                    raise BudgetExceeded(
                        f"stopped before {self.what} (${self.cap_usd:.2f}) would be exceeded: "
                        f"${total:.4f} spent, and the next judge call may cost up to ${estimate:.4f}"
                    )
                self._changed.wait(timeout=1.0)

    def settle(self, estimate: float, actual: float) -> None:
        with self._changed:
            self.reserved -= estimate
            self.spent += actual
            self.in_flight -= 1
            self._changed.notify_all()


def _not_made(unavailable: LimitUnavailable) -> BackendError:
    """The judge failure of a call the limit's Redis server refused: it names Redis, not the provider."""
    return BackendError(f"{unavailable} (the call was not made)")


class LimitedBackend:
    """A backend whose calls wait for their provider's limit and are paid for from a budget."""

    def __init__(
        self,
        backend: Backend,
        limit: Limit | None = None,
        *,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.inner = backend
        self.spec = backend.spec
        self.model = backend.model
        self.scripted = backend.scripted
        self.decoding = backend.decoding
        self.batch = bool(getattr(backend, "batch", False))  # priced (and reserved) at the batch price
        self.limit = limit
        self.budget = budget
        self.prices = prices or PriceTable()

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return self.inner.render(request)

    def _hold(self) -> float:
        """How long a slot may be held: the backend's timeout (per attempt), plus a second's slack."""
        timeout = getattr(self.inner, "timeout", None)
        return float(timeout) + 1.0 if isinstance(timeout, int | float) else DEFAULT_HOLD_SECONDS

    async def complete(self, request: JudgeRequest) -> BackendReply:
        estimate = 0.0
        if self.budget is not None:
            estimate = estimate_call_cost(self.prices, self.inner, request) or 0.0
            self.budget.reserve(estimate)
        actual = 0.0
        try:
            if self.limit is None:
                reply = await self.inner.complete(request)
            elif getattr(self.inner, "limits_each_request", False):
                call = _CallLimit(self.limit, self._hold())
                token = _request_limit.set(call)
                try:
                    reply = await self.inner.complete(request)
                except BackendError:
                    # The SDK took the limit's failure for a connection error of the provider's.
                    if call.unavailable is not None:
                        raise _not_made(call.unavailable) from call.unavailable
                    raise
                finally:
                    _request_limit.reset(token)
            else:
                try:
                    async with self.limit.slot(self._hold()):
                        reply = await self.inner.complete(request)
                except LimitUnavailable as exc:
                    raise _not_made(exc) from exc
            if not self.scripted:
                actual = self.prices.cost(reply.usage, self.model, reply.model_id, batch=self.batch).cost_usd
            return reply
        finally:
            if self.budget is not None:
                self.budget.settle(estimate, actual)
