"""Judge calls from many threads sent as provider batches (grading.judge.batching), priced at the batch price;
the real SDKs against the local API stand-in."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend, BackendError, BackendReply
from grading.judge.batching import ThreadBatchBackend
from grading.judge.cost import Price, PriceTable, estimate_call_cost
from grading.judge.limits import Budget, LimitedBackend, ProviderLimit, ProviderLimitSpec
from grading.judge.openai_backend import OpenAIBackend
from tests.grading.judge.backend_helpers import request
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    error,
    expired,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    tokens,
    valid,
)

MODEL = "claude-judge-9-2026-01-01"
PRICES = PriceTable(prices={MODEL: Price(input=3.0, output=15.0)})


def batch_backend(server: FakeProviderServer, provider: str) -> Backend:
    if provider == "anthropic":
        return AnthropicBackend(
            MODEL, base_url=server.anthropic_base_url, api_key="sk-test", batch=True, batch_poll_interval=0.01
        )
    return OpenAIBackend(
        MODEL, base_url=server.openai_base_url, api_key="sk-test", batch=True, batch_poll_interval=0.01
    )


def from_threads(backend: Any, count: int) -> list[BackendReply | BaseException]:
    """``count`` calls, each from a thread with its own event loop, as a sweep's pool makes them."""
    out: list[BackendReply | BaseException] = [BackendError("not run")] * count

    def one(n: int) -> None:
        try:
            out[n] = asyncio.run(backend.complete(request(ids=(f"B{n}",))))
        except BaseException as exc:  # the test inspects whatever it raised
            out[n] = exc

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return out


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_calls_from_many_threads_go_as_one_batch_each_answered_or_failed(
    fake_server: FakeProviderServer, provider: str
) -> None:
    fake_server.script(valid(), error(500), expired(), valid(), valid(), valid())
    batcher = ThreadBatchBackend(batch_backend(fake_server, provider), size=6, window=5.0)

    out = from_threads(batcher, 6)

    assert batcher.batches == [6]  # full: sent at once, without waiting for the window
    assert fake_server.model_calls() == []  # nothing went one by one
    replies = [o for o in out if isinstance(o, BackendReply)]
    failures = [o for o in out if isinstance(o, BackendError)]
    assert len(replies) == 4 and len(failures) == 2  # the errored item and the expired one
    assert batcher.spec == f"{provider}:{MODEL}" and batcher.render(request()) == batcher.inner.render(
        request()
    )


def test_a_quiet_window_sends_what_is_waiting(fake_server: FakeProviderServer) -> None:
    batcher = ThreadBatchBackend(batch_backend(fake_server, "anthropic"), size=100, window=0.2)
    out = from_threads(batcher, 3)
    assert batcher.batches == [3] and all(isinstance(o, BackendReply) for o in out)


def test_a_batch_that_breaks_wakes_every_call(fake_server: FakeProviderServer) -> None:
    broken = AnthropicBackend(MODEL, base_url=fake_server.url + "/nowhere", api_key="sk-test", max_retries=0)
    batcher = ThreadBatchBackend(broken, size=2)
    out = from_threads(batcher, 2)
    assert all(isinstance(o, BackendError) for o in out)


def test_a_backend_without_a_batch_api_is_refused(fake_server: FakeProviderServer) -> None:
    class NoBatch:
        spec, model, scripted = "x:y", "y", False
        decoding: dict[str, object] = {}

    with pytest.raises(TypeError, match="cannot send batches"):
        ThreadBatchBackend(NoBatch())  # type: ignore[arg-type]


def test_batch_calls_are_reserved_and_paid_at_half_price(fake_server: FakeProviderServer) -> None:
    interactive = AnthropicBackend(MODEL, base_url=fake_server.anthropic_base_url, api_key="sk-test")
    batcher = ThreadBatchBackend(batch_backend(fake_server, "anthropic"), size=1)
    plain = estimate_call_cost(PRICES, interactive, request())
    assert plain is not None and estimate_call_cost(PRICES, batcher, request()) == pytest.approx(plain / 2)

    budget = Budget(1.0, 0.0)
    limited = LimitedBackend(
        batcher, ProviderLimit(ProviderLimitSpec(concurrency=1)), budget=budget, prices=PRICES
    )
    assert limited.batch
    reply = asyncio.run(limited.complete(request()))
    full = PRICES.cost(reply.usage, MODEL).cost_usd
    assert budget.spent == pytest.approx(full / 2) and full > 0


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_stand_in_caches_no_prefix_below_the_providers_minimum(
    fake_server: FakeProviderServer, provider: str
) -> None:
    # benchmarks/batch_billing.py bills with these: a prefix under the minimum is never cached, and
    # OpenAI's cached tokens are whole steps of 128.
    one = request().model_copy(update={"rubric_text": "rubric and task, long enough to cache\n" * 30})
    prefix = tokens(one.instructions + one.rubric_text) + (2 if provider == "openai" else 0)  # "\n\n"
    cached = prefix - prefix % 128 if provider == "openai" else prefix
    backend: Any
    if provider == "anthropic":
        backend = AnthropicBackend(MODEL, base_url=fake_server.anthropic_base_url, api_key="sk-test")
    else:
        backend = OpenAIBackend(MODEL, base_url=fake_server.openai_base_url, api_key="sk-test")
    fake_server.openai_cache_increment = 128
    fake_server.cache_min_tokens = {provider: cached + 1}
    usages = [asyncio.run(backend.complete(one)).usage for _ in range(2)]
    assert [(u.cache_write_tokens, u.cache_read_tokens) for u in usages] == [(0, 0), (0, 0)]

    fake_server.cache_min_tokens = {provider: cached}
    usages = [asyncio.run(backend.complete(one)).usage for _ in range(2)]
    assert cached > 0 and usages[1].cache_read_tokens == cached
    total = usages[1].input_tokens + usages[1].cache_read_tokens
    assert total == usages[0].input_tokens + usages[0].cache_write_tokens + usages[0].cache_read_tokens
