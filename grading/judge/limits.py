"""Limits on judge calls when many runs are graded at once: per-provider concurrency and rate, and a spend
budget checked before every call.

:class:`LimitedBackend` wraps a judge backend. Before each call it reserves the call's estimated cost from
a :class:`Budget` (:func:`grading.judge.cost.estimate_call_cost`), then takes a slot of the provider's
:class:`ProviderLimit` (at most ``concurrency`` calls in flight, calls started at least ``60 / per_minute``
seconds apart). A call that would take the spend past the budget is never made: :class:`BudgetExceeded`
is raised instead. It is not a :class:`~grading.judge.backend.BackendError`, so the runner does not turn
it into a judge failure: it stops whoever is grading, with its message.

Everything else (spec, model, decoding, ``render``) is the wrapped backend's, so cache keys do not change.
Limits are shared by every thread of one process; they do not coordinate several processes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from grading.errors import InputError
from grading.judge.backend import Backend, BackendReply, JudgeRequest
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
    async def slot(self) -> AsyncIterator[None]:
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


class LimitedBackend:
    """A backend whose calls wait for their provider's limit and are paid for from a budget."""

    def __init__(
        self,
        backend: Backend,
        limit: ProviderLimit | None = None,
        *,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
    ) -> None:
        self.inner = backend
        self.spec = backend.spec
        self.model = backend.model
        self.scripted = backend.scripted
        self.decoding = backend.decoding
        self.limit = limit
        self.budget = budget
        self.prices = prices or PriceTable()

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return self.inner.render(request)

    async def complete(self, request: JudgeRequest) -> BackendReply:
        estimate = 0.0
        if self.budget is not None:
            estimate = estimate_call_cost(self.prices, self.inner, request) or 0.0
            self.budget.reserve(estimate)
        actual = 0.0
        try:
            if self.limit is None:
                reply = await self.inner.complete(request)
            else:
                async with self.limit.slot():
                    reply = await self.inner.complete(request)
            if not self.scripted:
                actual = self.prices.cost(reply.usage, self.model, reply.model_id).cost_usd
            return reply
        finally:
            if self.budget is not None:
                self.budget.settle(estimate, actual)
