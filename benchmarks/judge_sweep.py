"""A judge sweep against the local fake provider server, against the ideal time.

    .venv/bin/python benchmarks/judge_sweep.py [--diffs 200] [--latency 0.5] [--concurrency 8]

The server (tests/grading/judge/fake_servers.py) speaks the Anthropic and OpenAI APIs and holds every model
reply for ``--latency`` seconds; the real SDKs call it over HTTP. The ideal is ``diffs x latency /
concurrency``: every slot busy from start to end. The goal is 1.1x the ideal (issue 34 §4); what a sweep loses
beyond it is split into rows: the SDK and event loop, the runner (with the priming call that writes the
provider's prompt cache alone), and the SQLite verdict cache.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO_ROOT, Goal, Row, load, machine, print_table

sys.path.insert(0, str(REPO_ROOT))

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend
from grading.judge.cache import SqliteCache
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.prompt import render_request, select_items
from grading.judge.runner import JudgeSettings
from grading.judge.sweep import SweepJob, judge_sweep
from tests.grading.judge.fake_servers import FakeProviderServer
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"


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
) -> tuple[float, int]:
    """A cold sweep through the runner, with the command line's SQLite verdict cache (None: no cache)."""
    rubric = make_rubric()
    jobs = [
        SweepJob(label=f"{tag}-{i}", task=TASK, rubric=rubric, diff_text=d)
        for i, d in enumerate(variants(diffs, tag))
    ]
    name = f"{backend.spec.replace(':', '_')}.sqlite3"
    cache = None if cache_dir is None else SqliteCache(cache_dir / name)
    started = time.perf_counter()
    result = asyncio.run(
        judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(concurrency=concurrency))
    )
    elapsed = time.perf_counter() - started
    if result.failures:
        raise SystemExit(f"{result.failures} judge failures in the sweep")
    return elapsed, result.calls


def measure(diffs: int, latency: float, concurrency: int, rounds: int) -> list[Goal]:
    """Each backend's sweep against the ideal, and where the rest goes: the same calls straight through the
    backend (the SDK, the event loop and the local server), the runner without a cache, the runner with
    the SQLite cache. Taken in turns, ``rounds`` times; the medians are reported."""
    ideal = diffs * latency / concurrency
    server = FakeProviderServer().start()
    server.latency = latency
    rows: list[Row] = []
    goals: list[Goal] = []
    notes: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
            common = {"api_key": "sk-bench", "max_retries": 0, "timeout": 30.0}
            backends: list[tuple[str, Backend]] = [
                (
                    "anthropic",
                    AnthropicBackend(ANTHROPIC_MODEL, base_url=server.anthropic_base_url, **common),
                ),
                ("openai", OpenAIBackend(OPENAI_MODEL, base_url=server.openai_base_url, **common)),
            ]
            for name, backend in backends:
                times: dict[str, list[float]] = {"raw": [], "runner": [], "sweep": []}
                calls = 0
                for r in range(rounds):
                    times["raw"].append(raw_seconds(backend, diffs, concurrency))
                    times["runner"].append(sweep_seconds(backend, diffs, concurrency, None, f"bare{r}")[0])
                    elapsed, calls = sweep_seconds(backend, diffs, concurrency, Path(tmp), f"run{r}")
                    times["sweep"].append(elapsed)
                median = {k: statistics.median(v) for k, v in times.items()}
                label = f"{name}: {diffs} diffs, {calls} calls, concurrency {concurrency}"
                rows += [
                    Row(label, median["sweep"], "ideal (n x latency / concurrency)", ideal, 1.1),
                    Row(f"{name}: the same calls without the runner", median["raw"], "ideal", ideal, None),
                    Row(f"{name}: the runner without a cache", median["runner"], "ideal", ideal, None),
                    Row(f"{name}: the runner with the SQLite cache", median["sweep"], "the runner without",
                        median["runner"], None),
                ]  # fmt: skip
                goals.append(
                    Goal(
                        "issue 34 §4: sweep",
                        f"{name}, {diffs} diffs, {latency} s latency, concurrency {concurrency}, "
                        "against the ideal",
                        median["sweep"] / ideal,
                        1.1,
                        note=(
                            f"without the runner {median['raw'] / ideal:.2f}x, runner without cache "
                            f"{median['runner'] / ideal:.2f}x; median of {rounds}; {load()}"
                        ),
                    )
                )
    finally:
        server.stop()
    floor = (ideal + latency) / ideal
    notes += [
        "Where the rest goes, row by row: the SDK, the event loop and the local server (the same calls sent "
        "straight through the backend under a semaphore, no runner, no cache); the runner (its one priming "
        f"call sent alone, a fixed {latency} s: with it the best a sweep can do is {floor:.2f}x the ideal; "
        "rendering, the cache key, checking each reply); the SQLite verdict cache's reads and writes (in a "
        "thread, off the event loop). The app's sweeps also write each grade to the database; this "
        "benchmark is the library's.",
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
