"""A judge sweep against the local fake provider server, against the ideal time.

    .venv/bin/python benchmarks/judge_sweep.py [--diffs 200] [--latency 0.5] [--concurrency 8]

The server (tests/grading/judge/fake_servers.py) speaks the Anthropic and OpenAI APIs and holds every model
reply for ``--latency`` seconds; the real SDKs call it over HTTP. It runs in a process of its own, as a
provider runs on machines of its own (in the sweep's process its handler threads shared the sweep's GIL).
The ideal is ``diffs x latency / concurrency``: every slot busy from start to end. The goal is 1.1x the ideal
(issue 34 §4); what a sweep loses beyond it is split into rows: the event loop alone (a sleep for each call),
plain HTTP to the server (no SDK), the SDK, the runner (with the priming call that writes the provider's
prompt cache alone), and the SQLite verdict cache. The sweep's CPU time (this process) is reported beside
it: it moves less with the machine's load than the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
from _common import REPO_ROOT, Goal, Row, load, machine, print_table

sys.path.insert(0, str(REPO_ROOT))

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend
from grading.judge.cache import SqliteCache
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.prompt import render_request, select_items
from grading.judge.runner import JudgeSettings
from grading.judge.sweep import SweepJob, judge_sweep
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"


# The stand-in provider in a child process: prints its address, serves until its stdin closes.
SERVER = f"""
import sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from tests.grading.judge.fake_servers import FakeProviderServer
server = FakeProviderServer().start()
server.latency = float(sys.argv[1])
print(server.url, flush=True)
sys.stdin.read()
server.stop()
"""


@contextlib.contextmanager
def provider_process(latency: float) -> Iterator[str]:
    """The local stand-in provider, answering after ``latency`` seconds, in a process of its own: its URL."""
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def loop_seconds(diffs: int, latency: float, concurrency: int) -> float:
    """The event loop alone: a sleep of ``latency`` for each call, under the same semaphore."""

    async def sweep() -> None:
        limit = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with limit:
                await asyncio.sleep(latency)

        await asyncio.gather(*(one() for _ in range(diffs)))

    started = time.perf_counter()
    asyncio.run(sweep())
    return time.perf_counter() - started


def http_seconds(backend: Backend, url: str, path: str, diffs: int, concurrency: int) -> float:
    """The same request bodies posted with httpx alone (the transport the SDKs use), no SDK."""
    rubric = make_rubric()
    items, _ = select_items(rubric, config_edited=False)
    bodies = [backend.render(render_request(TASK, rubric, items, d)) for d in variants(diffs, "http")]
    headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "authorization": "Bearer sk-bench"}

    async def sweep() -> None:
        limit = asyncio.Semaphore(concurrency)
        async with httpx2.AsyncClient(base_url=url, timeout=30.0, headers=headers) as client:

            async def one(body: object) -> None:
                async with limit:
                    response = await client.post(path, json=body)
                    response.raise_for_status()
                    response.json()

            await asyncio.gather(*(one(b) for b in bodies))

    started = time.perf_counter()
    asyncio.run(sweep())
    return time.perf_counter() - started


def variants(n: int, tag: str) -> list[str]:
    return [DIFF.replace("abs(total) / 2", f"abs(total) / 2  # {tag} {i}") for i in range(n)]


def raw_seconds(backend: Backend, diffs: int, concurrency: int) -> float:
    """The same number of calls straight through the backend under a semaphore: no runner, no cache."""
    rubric = make_rubric()
    items, _ = select_items(rubric, config_edited=False)
    requests = [render_request(TASK, rubric, items, d) for d in variants(diffs, "raw")]

    async def sweep() -> None:
        limit = asyncio.Semaphore(concurrency)

        async def one(request: object) -> None:
            async with limit:
                await backend.complete(request)  # type: ignore[arg-type]

        session = getattr(backend, "session", None)  # one client for every call, as the sweep has
        async with session() if session is not None else contextlib.nullcontext():
            await asyncio.gather(*(one(r) for r in requests))

    started = time.perf_counter()
    asyncio.run(sweep())
    return time.perf_counter() - started


def sweep_seconds(
    backend: Backend, diffs: int, concurrency: int, cache_dir: Path | None, tag: str
) -> tuple[float, int, float]:
    """A cold sweep through the runner, with the command line's SQLite verdict cache (None: no cache)."""
    rubric = make_rubric()
    jobs = [
        SweepJob(label=f"{tag}-{i}", task=TASK, rubric=rubric, diff_text=d)
        for i, d in enumerate(variants(diffs, tag))
    ]
    name = f"{backend.spec.replace(':', '_')}.sqlite3"
    cache = None if cache_dir is None else SqliteCache(cache_dir / name)
    started, cpu = time.perf_counter(), cpu_seconds()
    result = asyncio.run(
        judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(concurrency=concurrency))
    )
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    if result.failures:
        raise SystemExit(f"{result.failures} judge failures in the sweep")
    return elapsed, result.calls, cpu


def measure(diffs: int, latency: float, concurrency: int, rounds: int) -> list[Goal]:
    """Each backend's sweep against the ideal, and where the rest goes: the event loop alone, the same
    request bodies over plain HTTP, the same calls straight through the backend (the SDK), the runner
    without a cache, the runner with the SQLite cache. Taken in turns, ``rounds`` times; the medians are
    reported."""
    ideal = diffs * latency / concurrency
    rows: list[Row] = []
    goals: list[Goal] = []
    with provider_process(latency) as url, tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        common = {"api_key": "sk-bench", "max_retries": 0, "timeout": 30.0}
        backends: list[tuple[str, Backend, str]] = [
            ("anthropic", AnthropicBackend(ANTHROPIC_MODEL, base_url=url, **common), "/v1/messages"),
            ("openai", OpenAIBackend(OPENAI_MODEL, base_url=f"{url}/v1", **common), "/v1/chat/completions"),
        ]
        for name, backend, path in backends:
            times: dict[str, list[float]] = {"loop": [], "http": [], "raw": [], "runner": [], "sweep": []}
            cpu: list[float] = []
            calls = 0
            for r in range(rounds):
                times["loop"].append(loop_seconds(diffs, latency, concurrency))
                times["http"].append(http_seconds(backend, url, path, diffs, concurrency))
                times["raw"].append(raw_seconds(backend, diffs, concurrency))
                times["runner"].append(sweep_seconds(backend, diffs, concurrency, None, f"bare{r}")[0])
                elapsed, calls, used = sweep_seconds(backend, diffs, concurrency, Path(tmp), f"run{r}")
                times["sweep"].append(elapsed)
                cpu.append(used)
            median = {k: statistics.median(v) for k, v in times.items()}
            label = f"{name}: {diffs} diffs, {calls} calls, concurrency {concurrency}"
            rows += [
                Row(label, median["sweep"], "ideal (n x latency / concurrency)", ideal, 1.1),
                Row(f"{name}: the event loop alone (a sleep per call)", median["loop"], "ideal", ideal, None),
                Row(f"{name}: the same bodies over plain HTTP", median["http"], "ideal", ideal, None),
                Row(f"{name}: the same calls through the SDK", median["raw"], "ideal", ideal, None),
                Row(f"{name}: the runner without a cache", median["runner"], "ideal", ideal, None),
                Row(f"{name}: the runner with the SQLite cache", median["sweep"], "the runner without",
                    median["runner"], None),
                Row(f"{name}: the sweep's CPU time", statistics.median(cpu), "ideal", ideal, None),
            ]  # fmt: skip
            goals.append(
                Goal(
                    "issue 34 §4: sweep",
                    f"{name}, {diffs} diffs, {latency} s latency, concurrency {concurrency}, "
                    "against the ideal",
                    median["sweep"] / ideal,
                    1.1,
                    note=(
                        f"event loop alone {median['loop'] / ideal:.2f}x, plain HTTP "
                        f"{median['http'] / ideal:.2f}x, SDK {median['raw'] / ideal:.2f}x, runner without "
                        f"cache {median['runner'] / ideal:.2f}x; CPU {statistics.median(cpu):.2f} s; median "
                        f"of {rounds}; {load()}"
                    ),
                )
            )
    floor = (ideal + latency) / ideal
    notes = [
        "Where the rest goes, row by row: the event loop (a sleep for each call under the same semaphore); "
        "plain HTTP to the stand-in provider (its own process: the connection, its HTTP server threads, the "
        "reply's JSON), no SDK; the SDK (the same calls straight through the backend under a semaphore, no "
        "runner, no cache); the runner (its one priming call sent alone, a fixed "
        f"{latency} s: with it the best a sweep can do is {floor:.2f}x the ideal; rendering, the cache key, "
        "checking each reply); the SQLite verdict cache (reads in a worker thread, writes queued to one "
        "writer thread). The app's sweeps also write each grade to the database; this benchmark is the "
        "library's.",
        f"Median of {rounds} rounds, the variants taken in turns; {load()}; {machine()}.",
    ]
    print_table(f"Judge sweep against the local server ({latency} s per call)", rows, notes)
    return goals


def goals(quick: bool = False) -> list[Goal]:
    """Issue 34 §4. Quick: the same 200 diffs at 0.2 s per call, one round."""
    if quick:
        return measure(200, 0.2, 8, rounds=1)
    return measure(200, 0.5, 8, rounds=3)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--diffs", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    measure(args.diffs, args.latency, args.concurrency, args.rounds)


if __name__ == "__main__":
    main()
