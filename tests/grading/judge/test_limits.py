"""Judge-call limits (grading/judge/limits.py) with the real SDK against the local API server: at most the
provider's concurrency in flight, calls spaced by its per-minute rate, and a budget that stops before the
call that could pass it, which is never made."""

from __future__ import annotations

import asyncio
import time

import pytest

from grading.errors import InputError
from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.cost import PriceTable, estimate_call_cost
from grading.judge.limits import (
    Budget,
    BudgetExceeded,
    LimitedBackend,
    ProviderLimit,
    ProviderLimitSpec,
    parse_provider_limits,
)
from grading.judge.prompt import render_request, select_items
from grading.judge.runner import judge_run
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric
from tests.grading.judge.limits_helpers import MODEL, judge_in_threads

__all__ = ["fake_server_fixture"]


def sdk(server: FakeProviderServer) -> AnthropicBackend:
    return AnthropicBackend(MODEL, base_url=server.anthropic_base_url, api_key="test-key", max_retries=0)


def test_no_more_calls_in_flight_than_the_providers_concurrency(fake_server: FakeProviderServer) -> None:
    fake_server.latency = 0.2
    limit = ProviderLimit(ProviderLimitSpec(concurrency=2))
    judge_in_threads(LimitedBackend(sdk(fake_server), limit), 6)
    assert len(fake_server.model_calls()) == 6
    assert fake_server.max_in_flight == 2


def test_calls_start_no_faster_than_the_rate(fake_server: FakeProviderServer) -> None:
    limit = ProviderLimit(ProviderLimitSpec(concurrency=4, per_minute=600))  # one start every 0.1 s
    start = time.monotonic()
    judge_in_threads(LimitedBackend(sdk(fake_server), limit), 5)
    assert len(fake_server.model_calls()) == 5
    assert time.monotonic() - start >= 0.4  # five starts, four gaps


def test_the_budget_stops_before_a_call_that_could_pass_it(fake_server: FakeProviderServer) -> None:
    prices = PriceTable()
    backend = sdk(fake_server)
    rubric = make_rubric()
    items, _ = select_items(rubric, config_edited=False)
    estimate = estimate_call_cost(prices, backend, render_request(TASK, rubric, items, DIFF))
    assert estimate is not None and estimate > 0
    budget = Budget(cap_usd=1.0, spent_usd=1.0 - estimate * 1.05, what="the test cap")
    limited = LimitedBackend(backend, budget=budget, prices=prices)
    first = judge_run(TASK, rubric, DIFF, limited, config_edited=False)
    assert first.failure is None and first.calls == 1
    # What the call cost is settled, and is below its estimate; the next one would not fit.
    assert budget.spent == pytest.approx(first.usage.cost_usd) and 0 < budget.spent < estimate
    assert budget.reserved == 0
    with pytest.raises(BudgetExceeded, match=r"stopped before the test cap \(\$1.00\) would be exceeded"):
        judge_run(TASK, rubric, DIFF.replace("area", "area2", 1), limited, config_edited=False)
    assert len(fake_server.model_calls()) == 1  # the refused call was never sent


def test_the_estimate_is_none_without_a_price() -> None:
    rubric = make_rubric()
    items, _ = select_items(rubric, config_edited=False)
    request = render_request(TASK, rubric, items, DIFF)
    assert estimate_call_cost(PriceTable(prices={}), AnthropicBackend(MODEL), request) is None


def test_provider_limits_are_read_strictly() -> None:
    limits = parse_provider_limits("anthropic=4/50, openai=8")
    assert limits == {
        "anthropic": ProviderLimitSpec(concurrency=4, per_minute=50),
        "openai": ProviderLimitSpec(concurrency=8, per_minute=0),
    }
    for bad in ("anthropic", "anthropic=0", "anthropic=four", "=4", "openai=4/x"):
        with pytest.raises(InputError, match="SWEEP_PROVIDER_LIMITS"):
            parse_provider_limits(bad)


def test_a_slot_is_held_only_while_the_call_runs() -> None:
    limit = ProviderLimit(ProviderLimitSpec(concurrency=1))

    async def twice() -> None:
        async with limit.slot():
            pass
        async with limit.slot():
            pass

    asyncio.run(asyncio.wait_for(twice(), timeout=2))
