"""The whole judge path with real SDKs: runner (retries, location checks, consistency, cache, cost) ->
backend -> SDK -> HTTP -> the local provider server, for both providers, and the ``rubric judge`` command.

Run with ``-s`` to see the sweep accounting (request count and cost, with and without the verdict cache).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import Backend
from grading.judge.cache import SqliteCache
from grading.judge.models import JudgeResult, Usage
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.prompt import fence_open
from grading.judge.runner import JudgeSettings, judge_diff
from grading.judge.sweep import SweepJob, SweepResult, judge_sweep
from tests.grading.judge.fake_servers import (
    Behaviour,
    FakeProviderServer,
    ParsedPrompt,
    bad_location,
    default_reply,
    error,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    malformed,
    missing_id,
    refusal,
    storm,
    truncated,
)
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric, rubric_data

# Dated ids in the built-in price table, so the cost is the list price of these token counts.
ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
OPENAI_MODEL = "gpt-4.1-2025-04-14"
JUDGED = ["B1", "N1", "N2", "N3"]  # B2 is sent too unless needs_tree
ALL_IDS = ["B1", "B2", "N1", "N2", "N3"]

MakeBackend = Callable[[FakeProviderServer], Backend]


def anthropic_backend(server: FakeProviderServer, **kwargs: Any) -> AnthropicBackend:
    return AnthropicBackend(ANTHROPIC_MODEL, base_url=server.anthropic_base_url, api_key="sk-test",
                            max_retries=3, timeout=5.0, **kwargs)  # fmt: skip


def openai_backend(server: FakeProviderServer) -> OpenAIBackend:
    return OpenAIBackend(
        OPENAI_MODEL, base_url=server.openai_base_url, api_key="sk-test", max_retries=3, timeout=5.0
    )


BACKENDS = pytest.mark.parametrize("make", [anthropic_backend, openai_backend], ids=["anthropic", "openai"])


def judge(backend: Backend, diff: str = DIFF, **settings: Any) -> JudgeResult:
    return asyncio.run(
        judge_diff(
            TASK, make_rubric(), diff, backend, config_edited=False, settings=JudgeSettings(**settings)
        )
    )


def user_text(server: FakeProviderServer, n: int) -> str:
    body = server.model_calls()[n].body
    parse = server.parse_anthropic if "system" in body else server.parse_openai
    return parse(body).user_text


@BACKENDS
def test_a_valid_reply_is_accepted_with_the_reported_model_id(
    fake_server: FakeProviderServer, make: MakeBackend
) -> None:
    fake_server.reported_model = lambda model: f"{model}-as-served"
    backend = make(fake_server)
    result = judge(backend)

    assert result.failure is None
    assert [v.item_id for v in result.verdicts] == ALL_IDS
    assert {v.verdict for v in result.verdicts} == {"pass"}
    assert result.model_id == f"{backend.model}-as-served"
    assert all(v.model_id == result.model_id for v in result.verdicts)
    assert result.verdicts[0].locations[0].file == "src/area.py"
    assert (result.calls, result.retries) == (1, 0)
    assert result.usage.cost_known and result.usage.cost_usd > 0


@BACKENDS
def test_a_malformed_first_reply_is_retried_with_a_fresh_nonce(
    fake_server: FakeProviderServer, make: MakeBackend
) -> None:
    fake_server.script(malformed('{"verdicts": [{"id": "B1", "verdict": "pa'))
    result = judge(make(fake_server))

    assert result.failure is None and [v.item_id for v in result.verdicts] == ALL_IDS
    assert (result.calls, result.retries) == (2, 1)
    assert "malformed reply" in result.attempt_errors[0]
    assert len(fake_server.model_calls()) == 2
    first, second = user_text(fake_server, 0), user_text(fake_server, 1)
    assert first != second  # each call is fenced with its own nonce
    assert DIFF in first and DIFF in second


@BACKENDS
def test_a_verdict_citing_lines_not_in_the_diff_is_asked_again(
    fake_server: FakeProviderServer, make: MakeBackend
) -> None:
    fake_server.script(bad_location())
    result = judge(make(fake_server))

    assert result.failure is None
    assert (
        "not in the diff" in result.attempt_errors[0]
        and "not/in/the/diff.py:99999" in result.attempt_errors[0]
    )
    assert result.calls == 2
    assert all(loc.file == "src/area.py" for v in result.verdicts for loc in v.locations)


@BACKENDS
@pytest.mark.parametrize("bad", [truncated, refusal, missing_id], ids=["truncated", "refused", "missing"])
def test_replies_that_never_cover_every_id_are_a_judge_failure(
    fake_server: FakeProviderServer, make: MakeBackend, bad: Callable[[], Behaviour]
) -> None:
    fake_server.script(bad(), bad(), bad())
    result = judge(make(fake_server), attempts=3)

    assert result.failure is not None and result.verdicts == []  # never a pass, never a fail
    assert result.calls == 3 == len(fake_server.model_calls())
    assert result.usage.output_tokens > 0  # the failed calls are still paid for and counted


@BACKENDS
def test_a_rate_limit_storm_is_absorbed_by_the_sdk(
    fake_server: FakeProviderServer, make: MakeBackend
) -> None:
    fake_server.script(storm(429, 2))
    result = judge(make(fake_server))
    assert result.failure is None and result.calls == 1
    assert len(fake_server.model_calls()) == 3  # two 429s retried inside the SDK, then the reply


@BACKENDS
def test_an_exhausted_storm_is_a_judge_failure(fake_server: FakeProviderServer, make: MakeBackend) -> None:
    fake_server.script(storm(500, 10))
    result = judge(make(fake_server))
    assert result.failure is not None and "HTTP 500 after 3 retries" in result.failure
    assert result.verdicts == [] and result.calls == 0
    assert len(fake_server.model_calls()) == 4


@BACKENDS
def test_a_verdict_disagreeing_with_its_finding_is_judged_again(
    fake_server: FakeProviderServer, make: MakeBackend
) -> None:
    def contradict_once(prompt: ParsedPrompt, behaviour: Behaviour) -> dict[str, Any]:
        reply = default_reply(prompt, behaviour)
        if len(fake_server.model_calls()) == 1:
            reply["verdicts"][0]["finding"] = "violated"  # the verdict says pass
        return reply

    fake_server.reply_builder = contradict_once
    result = judge(make(fake_server))

    assert result.failure is None
    assert (result.consistency_flags, result.rejudged, result.calls) == (1, 1, 2)
    second = fake_server.model_calls()[1]
    parsed = (fake_server.parse_anthropic if "system" in second.body else fake_server.parse_openai)(
        second.body
    )
    assert parsed.ids == ["B1"]  # only the flagged item is sent again
    assert result.verdicts[0].flagged_inconsistent and result.verdicts[0].reason == "The change meets B1."
    assert result.verdicts[0].finding == "satisfied"


@BACKENDS
def test_a_second_disagreement_is_a_judge_failure(fake_server: FakeProviderServer, make: MakeBackend) -> None:
    def contradict(prompt: ParsedPrompt, behaviour: Behaviour) -> dict[str, Any]:
        reply = default_reply(prompt, behaviour)
        reply["verdicts"][0]["finding"] = "violated"  # the verdict says pass, every time
        return reply

    fake_server.reply_builder = contradict
    result = judge(make(fake_server))

    assert result.failure is not None and "disagreed with its own finding again" in result.failure
    assert result.verdicts == [] and (result.consistency_flags, result.rejudged, result.calls) == (2, 1, 2)


# --- sweeps: request count and cost, with and without the verdict cache ------------------------------------


def sweep_diffs(n: int) -> list[str]:
    return [DIFF.replace("abs(total) / 2", f"abs(total) / 2  # variant {i}") for i in range(n)]


def run_sweep(backend: Backend, diffs: list[str], cache: SqliteCache, **settings: Any) -> SweepResult:
    jobs = [
        SweepJob(label=f"run-{i}", task=TASK, rubric=make_rubric(), diff_text=d) for i, d in enumerate(diffs)
    ]
    return asyncio.run(judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(**settings)))


def report(label: str, sweep: SweepResult, requests: int) -> str:
    u = sweep.usage
    return (
        f"{label:<34} http={requests:>3} calls={sweep.calls:>3} hits={sweep.cache_hits:>3} "
        f"in={u.input_tokens:>6} cw={u.cache_write_tokens:>6} cr={u.cache_read_tokens:>6} "
        f"out={u.output_tokens:>5} cost=${u.cost_usd:.6f}"
    )


SWEEP_N = 12


@BACKENDS
def test_sweep_accounting_with_and_without_the_verdict_cache(
    fake_server: FakeProviderServer, make: MakeBackend, tmp_path: Path
) -> None:
    backend = make(fake_server)
    cache = SqliteCache(tmp_path / "verdicts.sqlite3")
    diffs = sweep_diffs(SWEEP_N)
    fake_server.latency = 0.2  # the first wave of concurrent calls is sent before any is answered

    cold = run_sweep(backend, diffs, cache, concurrency=4)
    after_cold = len(fake_server.model_calls())
    warm = run_sweep(backend, diffs, cache, concurrency=4)
    after_warm = len(fake_server.model_calls())
    fake_server.clear_prompt_cache()  # as after the provider's cache TTL: the regrade writes it again
    regrade = run_sweep(backend, diffs, cache, concurrency=4, no_cache=True)
    after_regrade = len(fake_server.model_calls())

    lines = [
        f"[{backend.spec}] sweep of {SWEEP_N} diffs against the local server",
        report("cold (verdict cache empty)", cold, after_cold),
        report("warm (verdict cache filled)", warm, after_warm - after_cold),
        report("--no-cache (regrade)", regrade, after_regrade - after_warm),
    ]
    print("\n" + "\n".join(lines))

    assert cold.failures == warm.failures == regrade.failures == 0
    assert (cold.calls, cold.cache_hits, after_cold) == (SWEEP_N, 0, SWEEP_N)
    assert (warm.calls, warm.cache_hits, after_warm - after_cold) == (0, SWEEP_N, 0)
    assert warm.usage.cost_usd == 0.0
    assert (regrade.calls, regrade.cache_hits, after_regrade - after_warm) == (SWEEP_N, 0, SWEEP_N)
    assert cold.usage.cost_known and cold.usage.cost_usd > 0

    def prompt_tokens(u: Usage) -> int:
        return u.input_tokens + u.cache_write_tokens + u.cache_read_tokens

    assert prompt_tokens(regrade.usage) == prompt_tokens(cold.usage)
    assert regrade.usage.output_tokens == cold.usage.output_tokens and regrade.usage.cost_usd > 0
    # The static part (instructions, rubric, task) is the same for every diff: the provider caches it.
    assert cold.usage.cache_read_tokens > 0
    if isinstance(backend, AnthropicBackend):
        prefix = (cold.usage.cache_write_tokens + cold.usage.cache_read_tokens) // SWEEP_N
        writers = cold.usage.cache_write_tokens // prefix
        print(f"calls that wrote the prompt cache: {writers} of {SWEEP_N} (concurrency 4)")
        assert writers == 1  # the first call goes alone; everything after reads the prefix
    verdicts = {tuple((v.item_id, v.verdict) for v in r.verdicts) for r in warm.results + regrade.results}
    assert len(verdicts) == 1


def test_one_call_at_a_time_writes_the_prompt_cache_once(
    fake_server: FakeProviderServer, tmp_path: Path
) -> None:
    sweep = run_sweep(
        anthropic_backend(fake_server), sweep_diffs(SWEEP_N), SqliteCache(tmp_path / "c"), concurrency=1
    )
    prefix = (sweep.usage.cache_write_tokens + sweep.usage.cache_read_tokens) // SWEEP_N
    print("\n" + report("anthropic, concurrency 1", sweep, len(fake_server.model_calls())))
    assert sweep.usage.cache_write_tokens == prefix
    assert sweep.usage.cache_read_tokens == prefix * (SWEEP_N - 1)


def test_a_concurrent_sweep_writes_each_static_prefix_once_and_then_runs_in_parallel(
    fake_server: FakeProviderServer, tmp_path: Path
) -> None:
    """The first call for each distinct static prefix (rubric, task, fixed blocker) goes alone; the others
    wait for it, then run concurrently and read the prefix from the provider's prompt cache."""
    fake_server.latency = 0.3
    other = make_rubric(intent="Clockwise and counter-clockwise polygons have the same positive area.")
    diffs = sweep_diffs(SWEEP_N)
    jobs = [
        SweepJob(label=f"run-{i}", task=TASK, rubric=make_rubric() if i % 2 else other, diff_text=d)
        for i, d in enumerate(diffs)
    ]
    sweep = asyncio.run(
        judge_sweep(
            jobs,
            anthropic_backend(fake_server),
            cache=SqliteCache(tmp_path / "c"),
            settings=JudgeSettings(concurrency=6),
        )
    )
    assert sweep.failures == 0 and sweep.calls == SWEEP_N
    writes = [r.usage.cache_write_tokens for r in sweep.results]
    assert sum(1 for w in writes if w) == 2  # one writer per rubric
    assert all(r.usage.cache_read_tokens for r, w in zip(sweep.results, writes, strict=True) if not w)
    # Not serial, and never over the limit (how close to ideal it runs is benchmarks/judge_sweep.py's).
    assert 1 < fake_server.max_in_flight <= 6
    print("\n" + report("anthropic, 2 rubrics, concurrency 6", sweep, len(fake_server.model_calls())))


@pytest.mark.parametrize("make_backend", [anthropic_backend, openai_backend], ids=["anthropic", "openai"])
def test_a_sweep_reuses_its_connections(
    fake_server: FakeProviderServer, tmp_path: Path, make_backend: MakeBackend
) -> None:
    """The sweep's calls share one SDK client (its connection pool): at most one connection per call in
    flight, not one per call."""
    backend = make_backend(fake_server)
    sweep = run_sweep(backend, sweep_diffs(SWEEP_N), SqliteCache(tmp_path / "c"), concurrency=2)
    assert sweep.failures == 0 and sweep.calls == SWEEP_N > 2
    assert 1 <= fake_server.connections <= 2
    # Outside a sweep each call still has a client (and a connection) of its own.
    before = fake_server.connections
    asyncio.run(judge_diff(TASK, make_rubric(), sweep_diffs(1)[0], backend, config_edited=False))
    assert fake_server.connections == before + 1


def test_a_batch_sweep_goes_through_message_batches_at_half_price(
    fake_server: FakeProviderServer, tmp_path: Path
) -> None:
    diffs = sweep_diffs(SWEEP_N)
    # one call at a time writes the prompt cache once, as a batch worked through in order does
    single = run_sweep(
        anthropic_backend(fake_server), diffs, SqliteCache(tmp_path / "a.sqlite3"), concurrency=1
    )
    fake_server.clear_prompt_cache()
    batched_backend = anthropic_backend(fake_server, batch=True, batch_poll_interval=0.01)
    before = len(fake_server.requests)
    batched = run_sweep(batched_backend, diffs, SqliteCache(tmp_path / "b.sqlite3"), concurrency=SWEEP_N)
    traffic = fake_server.requests[before:]
    print("\n" + report("anthropic batch (Message Batches)", batched, len(traffic)))

    assert batched.failures == 0 and batched.calls == SWEEP_N
    created = [r for r in traffic if r.method == "POST"]
    assert [r.path for r in created] == ["/v1/messages/batches"]
    assert len(created[0].body["requests"]) == SWEEP_N  # one batch for the whole sweep
    assert batched.usage.cost_usd == pytest.approx(single.usage.cost_usd / 2)
    assert [[v.verdict for v in r.verdicts] for r in batched.results] == [
        [v.verdict for v in r.verdicts] for r in single.results
    ]


# --- the command -------------------------------------------------------------------------------------------


def write_task(tmp_path: Path, n: int) -> tuple[Path, list[Path]]:
    task_dir = tmp_path / "tasks" / TASK.id
    task_dir.mkdir(parents=True)
    (task_dir / "task.json").write_text(json.dumps({"id": TASK.id, "prompt": TASK.prompt}))
    (task_dir / "rubric.json").write_text(json.dumps(rubric_data()))
    runs = []
    for i, diff in enumerate(sweep_diffs(n)):
        run = tmp_path / "runs" / f"run-{i}"
        run.mkdir(parents=True)
        (run / "workspace.diff").write_text(diff)
        runs.append(run)
    return task_dir, runs


def test_rubric_judge_against_the_local_server(
    fake_server: FakeProviderServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    task_dir, runs = write_task(tmp_path, 3)
    args = ["judge", str(task_dir), *map(str, runs), "--judge", f"anthropic:{ANTHROPIC_MODEL}", "--json",
            "--cache", str(tmp_path / "cache.sqlite3")]  # fmt: skip

    assert main([*args[:-3], "--render-only"]) == 0
    rendered = json.loads(capsys.readouterr().out)["requests"]
    assert fake_server.requests == []  # --render-only calls nothing
    assert len(rendered) == 3 and rendered[0]["request"]["model"] == ANTHROPIC_MODEL

    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["calls"], first["cache_hits"], len(fake_server.model_calls())) == (3, 0, 3)
    sent = fake_server.model_calls()[0].body
    # what was rendered is what was sent, but for the nonce drawn per call
    assert sent["system"] == rendered[0]["request"]["system"]

    def nonce_free(body: dict[str, Any]) -> str:
        return re.sub(r"\b[0-9a-f]{32}\b", "NONCE", json.dumps(body["messages"]))

    sent_all = sorted(nonce_free(call.body) for call in fake_server.model_calls())
    assert sent_all == sorted(nonce_free(r["request"]) for r in rendered)
    assert fence_open("") not in json.dumps(sent)  # a real nonce was drawn
    assert first["runs"][0]["result"]["model_id"] == ANTHROPIC_MODEL

    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["calls"], again["cache_hits"], len(fake_server.model_calls())) == (0, 3, 3)
    print(f"\nrubric judge x3 runs: first {first['calls']} calls ${first['usage']['cost_usd']:.6f}, "
          f"second {again['calls']} calls ${again['usage']['cost_usd']:.6f}")  # fmt: skip


# --- secrets ------------------------------------------------------------------------------------------------

SECRET = "sk-secret-0123456789abcdef"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_api_key_reaches_no_output_no_metrics_and_no_cache(
    fake_server: FakeProviderServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    provider: str,
) -> None:
    """Not in --render-only, not in the cache, not in metrics.json: not even when a server echoes the key
    back in an error message (the judge failure's text is recorded)."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    spec = f"anthropic:{ANTHROPIC_MODEL}" if provider == "anthropic" else f"openai:{OPENAI_MODEL}"
    task_dir, runs = write_task(tmp_path, 2)
    cache = tmp_path / "cache.sqlite3"
    assert main(["judge", str(task_dir), *map(str, runs), "--judge", spec, "--render-only"]) == 0
    assert main(["judge", str(task_dir), str(runs[0]), "--judge", spec, "--json", "--cache", str(cache)]) == 0
    assert fake_server.model_calls()[-1].headers  # the key was sent, as it must be
    fake_server.script(error(401, message="invalid api key: {key}"))
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text("{}\n")
    (runs[1] / "grade.json").write_text('{"pass": true}')
    assert main(["grade", str(task_dir), str(runs[1]), "--manifest", str(manifest), "--judge", spec,
                 "--json", "--cache", str(cache)]) == 1  # fmt: skip
    out = capsys.readouterr()
    metrics = (runs[1] / "metrics.json").read_text()
    assert json.loads(metrics)["judge_failure"] is True
    assert "invalid api key" in metrics
    for where, text in (("stdout", out.out), ("stderr", out.err), ("metrics.json", metrics),
                        ("cache", cache.read_bytes().decode("utf-8", "replace"))):  # fmt: skip
        assert SECRET not in text, where
