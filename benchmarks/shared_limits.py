"""A judge sweep by several worker processes sharing one provider limit through Redis (issue 23).

    .venv/bin/python benchmarks/shared_limits.py [--diffs 2000] [--workers 3] [--concurrency 8] \
        [--per-minute 600] [--latency 0.2] [--redis redis://127.0.0.1:6379/15]

The local API stand-in (tests/grading/judge/fake_servers.py) runs in this process and notes when every
model call arrives and how many are answered at once. Each worker is a process of its own that judges its
share of the diffs through the runner's sweep (``judge_sweep``) and the real Anthropic SDK, with the backend
wrapped as a sweep wraps it (``LimitedBackend`` over a ``SharedProviderLimit`` in Redis). The workers are
started, wait until all have loaded, and are then let go together.

Reported: the most calls in flight the stand-in saw and the most that arrived in any 60 s (both must stay
within the limit), and the wall time against the ideal under the limit: ``(n - 1) x 60 / per_minute +
latency`` when the rate binds (or ``n x latency / concurrency`` when the calls in flight do). Goal: 1.2x.
2,000 calls at 600 per minute take over three minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import subprocess
import sys
import time
import uuid

from _common import REPO_ROOT, Row, env, machine, print_table

sys.path.insert(0, str(REPO_ROOT))

import redis

from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.limits import LimitedBackend, ProviderLimitSpec, SharedProviderLimit
from grading.judge.runner import JudgeSettings
from grading.judge.sweep import SweepJob, judge_sweep
from tests.grading.judge.fake_servers import FakeProviderServer
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

RUN_ALL = False  # over 3 minutes and needs Redis: run_all.py lists it without running it
MODEL = "claude-sonnet-4-5-20250929"


def worker(args: argparse.Namespace) -> None:
    """One worker process: wait for "go" on stdin, judge diffs [start, end), print the result."""
    start, end = (int(x) for x in args.worker.split(":"))
    spec = ProviderLimitSpec(concurrency=args.concurrency, per_minute=args.per_minute)
    backend = AnthropicBackend(MODEL, base_url=args.base_url, api_key="sk-bench", max_retries=0, timeout=60.0)
    limited = LimitedBackend(backend, SharedProviderLimit(spec, args.redis, args.key))
    rubric = make_rubric()
    jobs = [
        SweepJob(label=f"run-{i}", task=TASK, rubric=rubric,
                 diff_text=DIFF.replace("abs(total) / 2", f"abs(total) / 2  # run {i}"))
        for i in range(start, end)
    ]  # fmt: skip
    print("ready", flush=True)
    sys.stdin.readline()
    result = asyncio.run(judge_sweep(jobs, limited, settings=JudgeSettings(concurrency=args.concurrency)))
    print(json.dumps({"calls": result.calls, "failures": result.failures}), flush=True)


def peak_per_window(arrivals: list[float], window: float) -> int:
    """The most arrivals in any closed interval of ``window`` seconds."""
    arrivals = sorted(arrivals)
    return max((bisect.bisect_right(arrivals, t + window) - i for i, t in enumerate(arrivals)), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--diffs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--per-minute", type=int, default=600)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # START:END, in a worker process
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    key = f"bench-limits:{uuid.uuid4().hex}"
    server = FakeProviderServer().start()
    server.latency = args.latency
    bounds = [round(args.diffs * n / args.workers) for n in range(args.workers + 1)]
    common = [
        f"--concurrency={args.concurrency}", f"--per-minute={args.per_minute}", f"--redis={args.redis}",
        f"--key={key}", f"--base-url={server.anthropic_base_url}",
    ]  # fmt: skip
    children = [
        subprocess.Popen(
            [sys.executable, __file__, f"--worker={a}:{b}", *common],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env(),
        )  # fmt: skip
        for a, b in zip(bounds, bounds[1:], strict=False)
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        started = time.monotonic()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        results = []
        for child in children:
            assert child.stdout is not None
            results.append(json.loads(child.stdout.readline()))
        elapsed = time.monotonic() - started
        for child in children:
            if child.wait(timeout=60) != 0:
                raise SystemExit(f"a worker failed: exit {child.returncode}")
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    stream.close()
        server.stop()
        client = redis.Redis.from_url(args.redis)
        for name in client.scan_iter(f"{key}*"):
            client.delete(name)
        client.close()

    calls = sum(r["calls"] for r in results)
    failures = sum(r["failures"] for r in results)
    if failures or calls != len(server.arrivals):
        raise SystemExit(f"{failures} judge failures; {calls} calls, {len(server.arrivals)} arrived")
    rate_bound = (calls - 1) * 60 / args.per_minute + args.latency if args.per_minute else 0.0
    ideal = max(rate_bound, calls * args.latency / args.concurrency)
    peak_minute = peak_per_window(server.arrivals, 60.0)
    within = server.max_in_flight <= args.concurrency and (
        not args.per_minute or peak_minute <= args.per_minute
    )
    label = f"{args.diffs} diffs, {calls} calls, {args.workers} workers"
    print_table(
        f"Shared provider limit: {args.concurrency} in flight, {args.per_minute}/min, "
        f"{args.latency} s per call",
        [Row(label, elapsed, "ideal under the limit", ideal, 1.2)],
        [
            f"Peak in flight at the stand-in: {server.max_in_flight} (limit {args.concurrency}); peak calls "
            f"arrived in any 60 s: {peak_minute} (limit {args.per_minute}); "
            f"{'within' if within else 'ABOVE'} the limit.",
            "Ideal: (calls - 1) x 60 / per-minute + latency, every start at its earliest turn.",
            f"One run; {machine()}.",
        ],
    )
    if not within:
        raise SystemExit("the limit was passed")


if __name__ == "__main__":
    main()
