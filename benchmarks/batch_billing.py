"""What a batch sweep's input is billed, against the same sweep's input at the uncached interactive price.

    .venv/bin/python benchmarks/batch_billing.py [--diffs 200]

A sweep of ``--diffs`` diffs of one task through the real SDKs in batch mode (Anthropic Message Batches,
OpenAI Batch) against the local API stand-in (tests/grading/judge/fake_servers.py), which bills the prompt
cache as the providers do: the static prefix (instructions, rubric, task) is written once and read by every
later request. The billed input is every call's uncached, cache-write and cache-read tokens at their prices,
times the batch price; the reference is every input token at the interactive input price. Goal: <= 0.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from _common import REPO_ROOT, machine

sys.path.insert(0, str(REPO_ROOT))

from grading.judge.anthropic_backend import AnthropicBackend  # noqa: E402
from grading.judge.backend import Backend  # noqa: E402
from grading.judge.cost import DEFAULT_PRICES  # noqa: E402
from grading.judge.models import Usage  # noqa: E402
from grading.judge.openai_backend import OpenAIBackend  # noqa: E402
from grading.judge.runner import JudgeSettings, SweepJob, judge_sweep  # noqa: E402
from tests.grading.judge.fake_servers import FakeProviderServer  # noqa: E402
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric  # noqa: E402

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"
GOAL = 0.1


def sweep_usage(backend: Backend, diffs: int) -> tuple[Usage, int, int]:
    rubric = make_rubric()
    jobs = [
        SweepJob(label=f"run-{i}", task=TASK, rubric=rubric, diff_text=DIFF.replace("/ 2", f"/ 2  # run {i}"))
        for i in range(diffs)
    ]
    result = asyncio.run(judge_sweep(jobs, backend, settings=JudgeSettings(concurrency=diffs)))
    if result.failures:
        raise SystemExit(f"{result.failures} judge failures in the sweep")
    return result.usage, result.calls, int(getattr(backend, "batches", 0))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--diffs", type=int, default=200)
    args = parser.parse_args()
    server = FakeProviderServer().start()
    server.batch_polls_in_progress = 1
    common = {"api_key": "sk-bench", "max_retries": 0, "batch": True, "batch_poll_interval": 0.01}
    rows = []
    try:
        for name, model, backend in (
            ("anthropic", ANTHROPIC_MODEL,
             AnthropicBackend(ANTHROPIC_MODEL, base_url=server.anthropic_base_url, **common)),
            ("openai", OPENAI_MODEL, OpenAIBackend(OPENAI_MODEL, base_url=server.openai_base_url, **common)),
        ):  # fmt: skip
            usage, calls, _ = sweep_usage(backend, args.diffs)
            price = DEFAULT_PRICES[model]
            billed = (
                usage.input_tokens * price.input
                + usage.cache_write_tokens * price.cache_write
                + usage.cache_read_tokens * price.cache_read
            ) * price.batch
            uncached = (usage.input_tokens + usage.cache_write_tokens + usage.cache_read_tokens) * price.input
            rows.append((name, calls, usage, billed / 1e6, uncached / 1e6))
    finally:
        server.stop()
    print(f"### Batch billing: {args.diffs} diffs of one task, batch mode with the prompt cache\n")
    print(
        "| provider | calls | input tokens (uncached / cache write / cache read) | billed input ($) "
        "| uncached interactive ($) | ratio | goal | met |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---|")
    for name, calls, usage, billed, uncached in rows:
        ratio = billed / uncached
        tokens = f"{usage.input_tokens} / {usage.cache_write_tokens} / {usage.cache_read_tokens}"
        met = "yes" if ratio <= GOAL else "NO"
        money = f"{billed:.4f} | {uncached:.4f}"
        print(f"| {name} | {calls} | {tokens} | {money} | {ratio:.3f}x | <= {GOAL}x | {met} |")
    print(f"\nOne run each, against the local stand-in; {machine()}.")


if __name__ == "__main__":
    main()
