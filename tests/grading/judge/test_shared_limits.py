"""Provider limits shared by every process through Redis (grading/judge/limits.py SharedProviderLimit),
against the real local Redis at 127.0.0.1:6379 and the local API server: several processes sharing one limit
never pass it; a holder killed mid-call frees its slot once its hold (the call's timeout) has passed; a
retried call takes the limit again. Every test uses keys of its own (a uuid) and deletes them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.limits import (
    LimitedBackend,
    LimitUnavailable,
    ProviderLimit,
    ProviderLimitSpec,
    SharedProviderLimit,
)
from grading.judge.runner import judge_run
from grading.judge.scripted import ScriptedBackend
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture, storm, valid
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric
from tests.grading.judge.limits_helpers import MODEL

__all__ = ["fake_server_fixture"]

REDIS_URL = "redis://127.0.0.1:6379/15"
REPO_ROOT = Path(__file__).resolve().parents[3]

# One worker process: ``threads`` diffs judged at once through the shared limit, as a sweep's threads do.
CHILD = """
import sys
from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.limits import LimitedBackend, ProviderLimitSpec, SharedProviderLimit
from tests.grading.judge.test_limits import judge_in_threads

url, key, base_url, concurrency, per_minute, threads = sys.argv[1:]
spec = ProviderLimitSpec(concurrency=int(concurrency), per_minute=int(per_minute))
backend = AnthropicBackend("claude-sonnet-4-5-20250929", base_url=base_url, api_key="k", max_retries=0)
judge_in_threads(LimitedBackend(backend, SharedProviderLimit(spec, url, key)), int(threads))
"""

# Takes one slot for ``hold`` seconds, says so, and waits to be killed.
HOLDER = """
import asyncio, sys, time
from grading.judge.limits import ProviderLimitSpec, SharedProviderLimit

url, key, hold = sys.argv[1:]

async def main() -> None:
    async with SharedProviderLimit(ProviderLimitSpec(concurrency=1), url, key).slot(float(hold)):
        print("held", flush=True)
        time.sleep(600)

asyncio.run(main())
"""


@pytest.fixture
def key() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip("no Redis at 127.0.0.1:6379: the shared-limit tests need the local one")
    prefix = f"test-limits:{uuid.uuid4().hex}"
    try:
        yield prefix
    finally:
        for name in client.scan_iter(f"{prefix}*"):
            client.delete(name)
        client.close()


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def run_workers(
    server: FakeProviderServer, key: str, spec: ProviderLimitSpec, processes: int, threads: int
) -> None:
    args = [
        REDIS_URL,
        key,
        server.anthropic_base_url,
        str(spec.concurrency),
        str(spec.per_minute),
        str(threads),
    ]
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=REPO_ROOT, env=child_env())
        for n in range(processes)
    ]
    for child in children:
        assert child.wait(timeout=120) == 0


def test_processes_sharing_a_limit_never_pass_it(fake_server: FakeProviderServer, key: str) -> None:
    fake_server.latency = 0.5  # with a start every 0.2 s, up to three calls would be in flight
    spec = ProviderLimitSpec(concurrency=2, per_minute=300)
    run_workers(fake_server, key, spec, processes=3, threads=3)
    assert len(fake_server.model_calls()) == 9
    # Each process alone would have had 2 in flight (three processes: 6), and would have started its three
    # calls within 0.4 s, all three processes at once.
    assert fake_server.max_in_flight == 2
    arrivals = sorted(fake_server.arrivals)
    assert arrivals[-1] - arrivals[0] >= 8 * 0.2 - 0.1, arrivals


def test_a_holder_killed_mid_call_frees_its_slot_after_its_hold(key: str) -> None:
    hold = 2.0
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, REDIS_URL, key, str(hold)],
        cwd=REPO_ROOT, env=child_env(), stdout=subprocess.PIPE, text=True,
    ) as holder:  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            held_at = time.monotonic()
        finally:
            holder.kill()  # as kill -9: no release
            holder.wait(timeout=10)
    limit = SharedProviderLimit(ProviderLimitSpec(concurrency=1), REDIS_URL, key)

    async def take() -> float:
        async with limit.slot(1.0):
            return time.monotonic()

    taken_at = asyncio.run(asyncio.wait_for(take(), timeout=10))
    # Not before the dead holder's hold ran out, and not much later either.
    assert hold - 0.1 <= taken_at - held_at <= hold + 1.0


def test_a_slot_is_freed_when_the_call_ends(key: str) -> None:
    limit = SharedProviderLimit(ProviderLimitSpec(concurrency=1), REDIS_URL, key)

    async def twice() -> None:
        async with limit.slot(60.0):
            pass
        async with limit.slot(60.0):
            pass

    asyncio.run(asyncio.wait_for(twice(), timeout=2))


@pytest.mark.parametrize("shared", [False, True])
def test_a_retried_call_takes_the_limit_again(
    fake_server: FakeProviderServer, key: str, shared: bool
) -> None:
    spec = ProviderLimitSpec(concurrency=1, per_minute=300)  # one start every 0.2 s
    limit = SharedProviderLimit(spec, REDIS_URL, key) if shared else ProviderLimit(spec)
    fake_server.script(*storm(429, 2), valid())  # answered with retry-after-ms: 1
    backend = AnthropicBackend(MODEL, base_url=fake_server.anthropic_base_url, api_key="k", max_retries=2)
    result = judge_run(TASK, make_rubric(), DIFF, LimitedBackend(backend, limit), config_edited=False)
    assert result.failure is None
    arrivals = sorted(fake_server.arrivals)
    assert len(arrivals) == 3
    # Each retry waited for its turn: the SDK alone would have sent them a few milliseconds apart.
    assert min(b - a for a, b in zip(arrivals, arrivals[1:], strict=False)) > 0.15


def test_an_unreachable_redis_stops_the_call_with_its_reason(key: str) -> None:
    limit = SharedProviderLimit(
        ProviderLimitSpec(concurrency=1),
        "redis://127.0.0.1:1/0",
        key,
        unavailable_after=0.2,
        socket_timeout=0.5,
    )

    async def take() -> None:
        async with limit.slot(5.0):
            raise AssertionError("the slot must not be taken")

    with pytest.raises(LimitUnavailable, match=f"shared provider limit '{key}' could not be reached"):
        asyncio.run(asyncio.wait_for(take(), timeout=10))


def test_a_judge_call_the_unreachable_redis_stopped_names_redis_not_the_provider(
    fake_server: FakeProviderServer,
) -> None:
    # A closed port: the SDK takes what its HTTP client raised for a connection error of the provider's.
    limit = SharedProviderLimit(
        ProviderLimitSpec(concurrency=1),
        "redis://127.0.0.1:1/0",
        "test-limits:unreachable",
        unavailable_after=0.2,
        socket_timeout=0.5,
    )
    fake_server.script(valid())
    backend = AnthropicBackend(MODEL, base_url=fake_server.anthropic_base_url, api_key="k", max_retries=2)
    result = judge_run(TASK, make_rubric(), DIFF, LimitedBackend(backend, limit), config_edited=False)
    assert result.failure is not None
    assert "the Redis server of the shared provider limit 'test-limits:unreachable' could not be reached" in (
        result.failure
    )
    assert "(the call was not made)" in result.failure
    assert "anthropic: connection failed" not in result.failure
    assert fake_server.arrivals == []  # the provider was never called


def test_a_call_limited_as_a_whole_names_redis_too(tmp_path: Path) -> None:
    # A backend without its own HTTP client (claude-code, a scripted judge) is limited around the call.
    script = tmp_path / "judge.json"
    script.write_text('{"default": {}}')
    limit = SharedProviderLimit(
        ProviderLimitSpec(concurrency=1),
        "redis://127.0.0.1:1/0",
        "test-limits:unreachable",
        unavailable_after=0.2,
        socket_timeout=0.5,
    )
    backend = ScriptedBackend(script)
    result = judge_run(TASK, make_rubric(), DIFF, LimitedBackend(backend, limit), config_edited=False)
    assert result.failure is not None
    assert "the Redis server of the shared provider limit 'test-limits:unreachable'" in result.failure
    assert backend.calls == 0
