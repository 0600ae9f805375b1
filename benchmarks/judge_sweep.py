"""A judge sweep against the local fake provider server, against the ideal time.

    .venv/bin/python benchmarks/judge_sweep.py [--diffs 200] [--latency 0.5] [--concurrency 8]

The server (tests/grading/judge/fake_servers.py) speaks the Anthropic and OpenAI APIs and holds every model
reply for ``--latency`` seconds; the real SDKs call it over HTTP. The ideal is ``diffs x latency /
concurrency``: every slot busy from start to end. The goal is 1.2x the ideal; what a sweep loses beyond it
is the runner's own overhead, the priming call that writes the provider's prompt cache alone, and the tail.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO_ROOT, Row, machine, print_table

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

        await asyncio.gather(*(one(r) for r in requests))

    started = time.perf_counter()
    asyncio.run(sweep())
    return time.perf_counter() - started


def sweep_seconds(backend: Backend, diffs: int, concurrency: int, cache_dir: Path) -> tuple[float, int]:
    """A cold sweep through the runner with the command line's SQLite verdict cache."""
    rubric = make_rubric()
    jobs = [
        SweepJob(label=f"run-{i}", task=TASK, rubric=rubric, diff_text=d)
        for i, d in enumerate(variants(diffs, "run"))
    ]
    cache = SqliteCache(cache_dir / f"{backend.spec.replace(':', '_')}.sqlite3")
    started = time.perf_counter()
    result = asyncio.run(
        judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(concurrency=concurrency))
    )
    elapsed = time.perf_counter() - started
    if result.failures:
        raise SystemExit(f"{result.failures} judge failures in the sweep")
    return elapsed, result.calls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--diffs", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    ideal = args.diffs * args.latency / args.concurrency
    server = FakeProviderServer().start()
    server.latency = args.latency
    rows = []
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
                elapsed, calls = sweep_seconds(backend, args.diffs, args.concurrency, Path(tmp))
                raw = raw_seconds(backend, args.diffs, args.concurrency)
                label = f"{name}: {args.diffs} diffs, {calls} calls, concurrency {args.concurrency}"
                rows.append(Row(label, elapsed, "ideal (n x latency / concurrency)", ideal, 1.2))
                rows.append(
                    Row(f"{name}: the same sweep", elapsed, "the same calls without the runner", raw, None)
                )
    finally:
        server.stop()
    print_table(
        f"Judge sweep against the local server ({args.latency} s per call)",
        rows,
        [
            "The second row of each pair is the runner's own cost: the same calls sent straight through the "
            "backend at the same concurrency (no runner, no verdict cache), measured in the same run.",
            f"One run each; {machine()}.",
        ],
    )


if __name__ == "__main__":
    main()
