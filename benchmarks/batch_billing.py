"""What a batch sweep's input is billed, against the same sweep's input at the uncached interactive price.

    .venv/bin/python benchmarks/batch_billing.py [--diffs 200]

A sweep of ``--diffs`` diffs of one task through the real SDKs in batch mode (Anthropic Message Batches,
OpenAI Batch) against the local API stand-in (tests/grading/judge/fake_servers.py), which bills the prompt
cache as the providers do: the static prefix (instructions, rubric, task) is written once and read by every
later request, and a prefix shorter than the provider caches at all (1,024 tokens for Claude Sonnet 4.5
and for OpenAI, which also caches in steps of 128 tokens) is not cached. The billed input is every call's
uncached, cache-write and cache-read tokens at their prices, times the batch price; the reference is every
input token at the interactive input price. Goal (issue 23): <= 0.1x.

Three cases, each over the same task for every diff:
- toy: the tests' rubric and task (tests/grading/judge/judge_helpers.py) and their 13-line diff;
- example: the shipped example task (examples/tasks/fix_clockwise_polygon_area: its rubric.json and
  task.json) and its five real diffs in turn (the two calibration diffs, the oracle, the two runs);
- example, 300-line diffs: the same task, each diff the good run's fix plus a 280-line test module (what
  an agent that adds a table of cases writes).

Before measuring, the script checks the request layout the sweep sends: instructions and rubric (with the
task) are the whole cached prefix, and what follows the breakpoint is the fenced diff with a fixed frame
around it (the nonce aside), so nothing of a run sits in the prefix and nothing static after it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass

from _common import REPO_ROOT, machine

sys.path.insert(0, str(REPO_ROOT))

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend
from grading.judge.cost import DEFAULT_PRICES, Price
from grading.judge.models import Usage
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.prompt import INSTRUCTIONS, render_request, select_items
from grading.judge.runner import JudgeSettings
from grading.judge.sweep import SweepJob, judge_sweep
from grading.loaders import load_rubric, load_task
from grading.schema import Rubric, TaskSpec
from tests.grading.judge.fake_servers import FakeProviderServer, tokens
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"
GOAL = 0.1
# The shortest prefix each provider caches: Claude Sonnet 4.5 1,024 tokens (Opus 4.5 and Haiku 4.5: 4,096),
# OpenAI 1,024 tokens, then in steps of 128 (docs/benchmarks.md#batch-billing cites the pages).
CACHE_MIN_TOKENS = {"anthropic": 1024, "openai": 1024}
OPENAI_CACHE_INCREMENT = 128
# gpt-5-family list price of cached input, as a fraction of input (not in DEFAULT_PRICES: unverified here).
GPT5_CACHED_FRACTION = 0.1

EXAMPLE = REPO_ROOT / "examples" / "tasks" / "fix_clockwise_polygon_area"
EXAMPLE_DIFFS = [
    EXAMPLE / "calib" / "lazy.diff",
    EXAMPLE / "calib" / "alt.diff",
    EXAMPLE / "oracle.diff",
    REPO_ROOT / "examples" / "runs" / "good" / "workspace.diff",
    REPO_ROOT / "examples" / "runs" / "scope_creep" / "workspace.diff",
]


@dataclass(frozen=True)
class Case:
    name: str
    task: TaskSpec
    rubric: Rubric
    diffs: list[str]  # taken in turn


def test_table_diff(cases: int = 70) -> str:
    """A new test module of ``4 * cases`` lines: a parametrized table of squares in both orientations."""
    lines = ["import pytest", "", "from shapes.polygon import polygon_area", "", "CASES = ["]
    for n in range(1, cases + 1):
        lines += [f"    # side {n}", f"    ([(0, 0), (0, {n}), ({n}, {n}), ({n}, 0)], {n * n}.0),"]
        lines += [f"    ([(0, 0), ({n}, 0), ({n}, {n}), (0, {n})], {n * n}.0),", ""]
    lines += ["]", "", "", '@pytest.mark.parametrize("points, area", CASES)']
    lines += ["def test_area_either_orientation(points, area):", "    assert polygon_area(points) == area"]
    header = (
        "diff --git a/tests/test_polygon_cases.py b/tests/test_polygon_cases.py\n"
        "new file mode 100644\n"
        "index 0000000..1111111\n"
        "--- /dev/null\n"
        "+++ b/tests/test_polygon_cases.py\n"
        f"@@ -0,0 +1,{len(lines)} @@\n"
    )
    return header + "".join(f"+{line}\n" for line in lines)


def cases() -> list[Case]:
    rubric = load_rubric(EXAMPLE / "rubric.json")
    task = load_task(EXAMPLE)
    example_diffs = [p.read_text() for p in EXAMPLE_DIFFS]
    good = example_diffs[3]
    return [
        Case("toy", TASK, make_rubric(), [DIFF]),
        Case("example", task, rubric, example_diffs),
        Case("example, 300-line diffs", task, rubric, [good + test_table_diff()]),
    ]


def check_layout(case: Case, backend: AnthropicBackend) -> tuple[int, int]:
    """(prefix tokens, mean per-run tokens); raises when something of a run is in the cached prefix or
    something static follows it."""
    items, _ = select_items(case.rubric, config_edited=False)
    frames = set()
    per_run = []
    prefix = 0
    for diff in case.diffs:
        request = render_request(case.task, case.rubric, items, diff)
        body = backend.render(request)
        system = body["system"]
        if [b["text"] for b in system] != [
            INSTRUCTIONS,
            request.rubric_text,
        ] or "cache_control" not in system[-1]:
            raise SystemExit(f"{case.name}: the cached prefix is not instructions + rubric")
        if diff.strip() in request.rubric_text or request.nonce in request.rubric_text:
            raise SystemExit(f"{case.name}: the run's material is in the cached prefix")
        [message] = body["messages"]
        user = message["content"][0]["text"]
        frames.add(user.replace(request.diff_text, "").replace(request.nonce, "NONCE"))
        per_run.append(tokens(user))
        prefix = tokens(INSTRUCTIONS + request.rubric_text)
    if len(frames) != 1:
        raise SystemExit(f"{case.name}: the part after the breakpoint holds more than the run's diff")
    return prefix, round(sum(per_run) / len(per_run))


def sweep_usage(backend: Backend, case: Case, diffs: int) -> tuple[Usage, int]:
    jobs = [
        SweepJob(
            label=f"run-{i}", task=case.task, rubric=case.rubric, diff_text=case.diffs[i % len(case.diffs)]
        )
        for i in range(diffs)
    ]
    result = asyncio.run(judge_sweep(jobs, backend, settings=JudgeSettings(concurrency=diffs)))
    if result.failures:
        raise SystemExit(f"{result.failures} judge failures in the sweep")
    return result.usage, result.calls


def billed(usage: Usage, price: Price, cache_read: float) -> float:
    return (
        usage.input_tokens * price.input
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * cache_read
    ) * price.batch


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--diffs", type=int, default=200)
    args = parser.parse_args()
    server = FakeProviderServer().start()
    server.batch_polls_in_progress = 1
    server.cache_min_tokens = dict(CACHE_MIN_TOKENS)
    server.openai_cache_increment = OPENAI_CACHE_INCREMENT
    common = {"api_key": "sk-bench", "max_retries": 0, "batch": True, "batch_poll_interval": 0.01}
    rows = []
    layout = {}
    try:
        for case in cases():
            server.clear_prompt_cache()
            anthropic = AnthropicBackend(ANTHROPIC_MODEL, base_url=server.anthropic_base_url, **common)
            layout[case.name] = check_layout(case, anthropic)
            openai = OpenAIBackend(OPENAI_MODEL, base_url=server.openai_base_url, **common)
            for provider, model, backend in (
                ("anthropic", ANTHROPIC_MODEL, anthropic),
                ("openai", OPENAI_MODEL, openai),
            ):
                usage, calls = sweep_usage(backend, case, args.diffs)
                price = DEFAULT_PRICES[model]
                total = usage.input_tokens + usage.cache_write_tokens + usage.cache_read_tokens
                uncached = total * price.input / 1e6
                rows.append(
                    (
                        case.name,
                        f"{provider} ({model})",
                        calls,
                        usage,
                        billed(usage, price, price.cache_read) / 1e6,
                        uncached,
                    )
                )
                if provider == "openai":
                    # If Batch does not discount cached input for this model (not documented either way).
                    rows.append(
                        (
                            case.name,
                            f"openai ({model}), cached input not discounted in Batch",
                            calls,
                            usage,
                            billed(usage, price, price.input) / 1e6,
                            uncached,
                        )
                    )
                    rows.append(
                        (
                            case.name,
                            f"openai, cached input at {GPT5_CACHED_FRACTION}x (a gpt-5-family price)",
                            calls,
                            usage,
                            billed(usage, price, price.input * GPT5_CACHED_FRACTION) / 1e6,
                            uncached,
                        )
                    )
    finally:
        server.stop()
    print(f"### Batch billing: {args.diffs} diffs of one task, batch mode with the prompt cache\n")
    print("| case | static prefix (tokens) | per run, after the breakpoint (tokens) |")
    print("|---|---:|---:|")
    for name, (prefix, per_run) in layout.items():
        print(f"| {name} | {prefix} | {per_run} |")
    print()
    print(
        "| case | judge | calls | input tokens (uncached / cache write / cache read) | billed input ($) "
        "| uncached interactive ($) | ratio | goal | met |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---|")
    for name, judge, calls, usage, cost, uncached in rows:
        ratio = cost / uncached
        tokens_ = f"{usage.input_tokens} / {usage.cache_write_tokens} / {usage.cache_read_tokens}"
        met = "yes" if ratio <= GOAL else "NO"
        money = f"{cost:.4f} | {uncached:.4f}"
        print(f"| {name} | {judge} | {calls} | {tokens_} | {money} | {ratio:.3f}x | <= {GOAL}x | {met} |")
    print(
        f"\nOne run each, against the local stand-in, which caches no prefix under "
        f"{CACHE_MIN_TOKENS['anthropic']} tokens; {machine()}."
    )


if __name__ == "__main__":
    main()
