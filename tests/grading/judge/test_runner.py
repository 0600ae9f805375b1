from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from grading.errors import InputError
from grading.judge.backend import BackendError, BackendReply, JudgeRequest
from grading.judge.cache import CachedVerdicts, MemoryCache, SqliteCache
from grading.judge.cost import Price, PriceTable
from grading.judge.models import Usage
from grading.judge.prompt import fenced_diff
from grading.judge.runner import JudgeSettings, judge_diff, judge_run
from grading.judge.sweep import BatchingBackend, SweepJob, judge_sweep
from grading.schema import CONFIG_BLOCKER_ID
from tests.grading.judge.judge_helpers import DIFF, TASK, FakeBackend, make_rubric, verdicts_json

ALL = ["B1", "B2", "N1", "N2", "N3"]


def run(backend: Any, diff: str = DIFF, **kw: Any) -> Any:
    kw.setdefault("config_edited", False)
    rubric = kw.pop("rubric", make_rubric())
    return asyncio.run(judge_diff(TASK, rubric, diff, backend, **kw))


def test_a_complete_reply_gives_one_verdict_per_item_with_the_reported_model_id() -> None:
    backend = FakeBackend()
    result = run(backend)
    assert result.failure is None
    assert [v.item_id for v in result.verdicts] == ALL
    assert [v.kind for v in result.verdicts] == [
        "blocker",
        "blocker",
        "non_blocker",
        "non_blocker",
        "non_blocker",
    ]
    assert result.model_id == "claude-sonnet-4-5-20250929-reported"
    assert {v.model_id for v in result.verdicts} == {"claude-sonnet-4-5-20250929-reported"}
    assert result.calls == 1 and result.retries == 0
    assert result.cache_key is not None and len(result.cache_key) == 64


def test_verdicts_come_back_in_rubric_order_whatever_the_reply_order() -> None:
    backend = FakeBackend([lambda r: FakeBackend().reply(verdicts_json(list(reversed(r.item_ids))))])
    assert [v.item_id for v in run(backend).verdicts] == ALL


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("not json at all", "malformed reply"),
        ('{"verdicts": [', "malformed reply"),
        (verdicts_json(["B1", "B2", "N1", "N2"]), "missing N3"),
        (verdicts_json([*ALL, "B9"]), "unknown B9"),
        (verdicts_json([*ALL, "B1"]), "more than one verdict for B1"),
        (
            json.dumps(
                {"verdicts": [{"id": i, "verdict": "maybe", "reason": "x", "locations": []} for i in ALL]}
            ),
            "malformed reply",
        ),
        (
            json.dumps(
                {"verdicts": [{"id": i, "verdict": "pass", "reason": "", "locations": []} for i in ALL]}
            ),
            "malformed reply",
        ),
        (
            json.dumps({"verdicts": [{"id": i, "verdict": "pass", "reason": "ok"} for i in ALL]}),
            "malformed reply",
        ),
        (json.dumps({"verdicts": [], "note": "all pass"}), "malformed reply"),
    ],
)
def test_a_reply_that_does_not_cover_every_id_is_retried_then_a_judge_failure(bad: str, why: str) -> None:
    backend = FakeBackend([FakeBackend().reply(bad) for _ in range(3)])
    result = run(backend)
    assert result.failure is not None and why in result.failure
    assert result.verdicts == []  # never a pass, never a fail
    assert result.calls == 3 and result.retries == 2
    assert len(result.attempt_errors) == 3


def test_a_bad_reply_followed_by_a_good_one_is_accepted() -> None:
    backend = FakeBackend([FakeBackend().reply("{oops")])
    result = run(backend)
    assert result.failure is None and len(result.verdicts) == 5
    assert result.calls == 2 and result.retries == 1
    assert "malformed" in result.attempt_errors[0]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"stop_reason": "max_tokens"}, "truncated"),
        ({"stop_reason": "length"}, "truncated"),
        ({"refused": True}, "refused"),
        ({"stop_reason": "refusal"}, "refused"),
    ],
)
def test_truncated_or_refused_replies_are_judge_failures(reply: dict[str, Any], why: str) -> None:
    backend = FakeBackend([FakeBackend().reply(verdicts_json(ALL), **reply) for _ in range(2)])
    result = run(backend, settings=JudgeSettings(attempts=2))
    assert result.failure is not None and why in result.failure
    assert result.verdicts == [] and result.calls == 2


def test_an_empty_reply_is_a_judge_failure() -> None:
    backend = FakeBackend([FakeBackend().reply(None)])
    result = run(backend, settings=JudgeSettings(attempts=1))
    assert result.failure is not None and "empty reply" in result.failure


def test_a_backend_error_is_a_judge_failure_without_more_calls() -> None:
    backend = FakeBackend([BackendError("anthropic: HTTP 529 after 4 retries: overloaded")])
    result = run(backend)
    assert result.failure is not None and "HTTP 529" in result.failure
    assert result.calls == 0 and result.verdicts == []


def _cite(file: str, line: int, side: str = "new") -> list[dict[str, Any]]:
    return [{"file": file, "line": line, "side": side}]


@pytest.mark.parametrize(
    ("locations", "ok"),
    [
        (_cite("src/area.py", 5), True),  # the added line
        (_cite("src/area.py", 2), True),  # a context line, new side
        (_cite("src/area.py", 5, "old"), True),  # the removed line
        (_cite("b/src/area.py", 5), True),  # with the diff's prefix
        (_cite("src/area.py", 6), False),  # past the hunk
        (_cite("src/area.py", 1), False),  # before the hunk: not in the diff
        (_cite("src/other.py", 5), False),  # not a file of the diff
        (_cite("src/area.py", 6, "old"), False),
    ],
)
def test_cited_locations_must_exist_in_the_diff(locations: list[dict[str, Any]], ok: bool) -> None:
    reply = FakeBackend().reply(verdicts_json(ALL, locations=locations))
    backend = FakeBackend([reply, reply])
    result = run(backend, settings=JudgeSettings(attempts=2))
    if ok:
        assert result.failure is None and result.calls == 1
        assert result.verdicts[0].locations[0].line == locations[0]["line"]
    else:
        assert result.failure is not None and "not in the diff" in result.failure
        assert result.calls == 2 and result.verdicts == []


def test_a_reply_with_bad_locations_is_asked_again_and_the_next_one_counts() -> None:
    bad = FakeBackend().reply(verdicts_json(ALL, locations=_cite("src/area.py", 99)))
    good = FakeBackend().reply(verdicts_json(ALL, locations=_cite("src/area.py", 5)))
    result = run(FakeBackend([bad, good]))
    assert result.failure is None and result.retries == 1 and result.calls == 2


def test_every_call_has_its_own_nonce_and_the_diff_intact() -> None:
    backend = FakeBackend([FakeBackend().reply("x"), FakeBackend().reply("y")])
    run(backend)
    nonces = [r.nonce for r in backend.requests]
    assert len(set(nonces)) == 3
    for request in backend.requests:
        assert fenced_diff(request.diff_block, request.nonce) == DIFF


def _verdict(item_id: str, verdict: str, finding: str, reason: str) -> dict[str, Any]:
    return {"id": item_id, "reason": reason, "finding": finding, "verdict": verdict, "locations": []}


def _mixed(request: JudgeRequest) -> BackendReply:
    """B1 and N1 disagree with their own finding; the others do not, whatever their reasons sound like."""
    verdicts = []
    for item_id in request.item_ids:
        if item_id == "B1":
            verdicts.append(_verdict("B1", "pass", "violated", "It flips the sign convention."))
        elif item_id == "N1":
            verdicts.append(_verdict("N1", "fail", "satisfied", "It adds a regression test."))
        else:
            # The old keyword check flagged ordinary reasons like this one ("negative", "fails").
            reason = "It keeps a negative area for clockwise input, so nothing fails."
            verdicts.append(_verdict(item_id, "pass", "satisfied", reason))
    return FakeBackend().reply(json.dumps({"verdicts": verdicts}))


def test_a_verdict_disagreeing_with_its_finding_is_flagged_and_the_item_judged_again() -> None:
    rejudge = FakeBackend().reply(
        json.dumps(
            {
                "verdicts": [
                    _verdict("B1", "fail", "violated", "It breaks the sign convention."),
                    _verdict("N1", "pass", "satisfied", "It adds a regression test."),
                ]
            }
        ),
        model_id="rejudge-model",
    )
    backend = FakeBackend([_mixed, rejudge])
    result = run(backend)
    assert result.failure is None
    assert result.consistency_flags == 2 and result.rejudged == 2
    assert backend.requests[1].item_ids == ["B1", "N1"]  # only the flagged items, once more
    b1, n1 = result.verdict("B1"), result.verdict("N1")
    assert (
        b1 is not None and b1.verdict == "fail" and b1.flagged_inconsistent and b1.model_id == "rejudge-model"
    )
    assert b1.finding == "violated"
    assert n1 is not None and n1.verdict == "pass" and n1.flagged_inconsistent
    other = result.verdict("N2")
    assert other is not None and not other.flagged_inconsistent
    assert result.calls == 2


def test_a_second_disagreement_is_a_judge_failure_and_nothing_is_cached() -> None:
    cache = MemoryCache()
    backend = FakeBackend([_mixed, _mixed])
    result = run(backend, cache=cache)
    assert result.failure is not None and "B1, N1" in result.failure and "again" in result.failure
    assert result.verdicts == [] and result.consistency_flags == 4 and result.calls == 2
    assert cache.entries == {}


def test_a_reply_without_a_finding_is_rejected() -> None:
    no_finding = json.dumps({"verdicts": [{"id": i, "verdict": "pass", "reason": "r", "locations": []}
                                          for i in ("B1", "N1", "N2", "N3")]})  # fmt: skip
    backend = FakeBackend([FakeBackend().reply(no_finding)])
    result = run(backend)
    assert result.failure is None and result.retries == 1
    assert "finding" in result.attempt_errors[0]


def test_a_failed_rejudgement_is_a_judge_failure() -> None:
    backend = FakeBackend([_mixed, *[FakeBackend().reply("nope")] * 3])
    result = run(backend)
    assert result.failure is not None and "re-judging" in result.failure
    assert result.verdicts == [] and result.consistency_flags == 2 and result.calls == 4


def test_the_consistency_check_can_be_switched_off() -> None:
    result = run(FakeBackend([_mixed]), settings=JudgeSettings(consistency_check=False))
    assert result.consistency_flags == 0 and result.calls == 1
    b1 = result.verdict("B1")
    assert b1 is not None and b1.verdict == "pass"


def test_needs_tree_blockers_are_not_sent_and_listed_as_not_measured() -> None:
    backend = FakeBackend()
    result = run(backend, rubric=make_rubric(needs_tree=True))
    assert result.not_measured == ["B2"]
    assert backend.requests[0].item_ids == ["B1", "N1", "N2", "N3"]
    assert result.verdict("B2") is None


def test_a_test_config_edit_adds_the_fixed_blocker() -> None:
    backend = FakeBackend()
    result = run(backend, config_edited=True)
    assert backend.requests[0].item_ids == ["B1", "B2", CONFIG_BLOCKER_ID, "N1", "N2", "N3"]
    fixed = result.verdict(CONFIG_BLOCKER_ID)
    assert fixed is not None and fixed.kind == "blocker"
    assert result.config_blocker


def test_a_reply_without_the_fixed_blocker_is_incomplete() -> None:
    backend = FakeBackend([FakeBackend().reply(verdicts_json(ALL))] * 3)
    result = run(backend, config_edited=True)
    assert result.failure is not None and f"missing {CONFIG_BLOCKER_ID}" in result.failure


# --- cost --------------------------------------------------------------------------------------------------


def test_usage_and_cost_are_summed_over_every_call() -> None:
    prices = PriceTable(
        prices={"claude-sonnet-4-5-20250929": Price(input=3, cache_write=3.75, cache_read=0.3, output=15)}
    )
    usage = Usage(input_tokens=1000, cache_write_tokens=2000, cache_read_tokens=4000, output_tokens=100)
    backend = FakeBackend([BackendReply(text="bad", model_id="m", usage=usage)], usage=usage)
    result = run(backend, settings=JudgeSettings(prices=prices))
    one = (1000 * 3 + 2000 * 3.75 + 4000 * 0.3 + 100 * 15) / 1e6
    assert result.calls == 2
    assert result.usage.input_tokens == 2000 and result.usage.cache_read_tokens == 8000
    assert result.usage.cost_usd == pytest.approx(2 * one)
    assert result.usage.cost_known


def test_an_unknown_model_costs_nothing_and_says_so() -> None:
    result = run(FakeBackend(model="claude-opus-4-6"), settings=JudgeSettings(prices=PriceTable(prices={})))
    assert result.usage.cost_usd == 0 and result.usage.cost_known is False
    assert result.usage.input_tokens == 1000


def test_batch_calls_are_billed_at_half_price() -> None:
    prices = PriceTable(prices={"m-2025-01-01": Price(input=10, output=10)})
    backend = FakeBackend(model="m-2025-01-01", usage=Usage(input_tokens=1_000_000))
    plain = run(backend, settings=JudgeSettings(prices=prices)).usage.cost_usd
    backend.batch = True  # type: ignore[attr-defined]
    assert run(backend, settings=JudgeSettings(prices=prices)).usage.cost_usd == pytest.approx(plain / 2)
    assert plain == pytest.approx(10)


# --- cache -------------------------------------------------------------------------------------------------


def test_a_cache_hit_makes_no_call() -> None:
    cache = MemoryCache()
    backend = FakeBackend()
    first = run(backend, cache=cache)
    second = run(backend, cache=cache)
    assert len(backend.requests) == 1
    assert second.cache_hit and second.calls == 0 and second.usage.cost_usd == 0
    assert second.verdicts == first.verdicts and second.model_id == first.model_id
    assert second.cache_key == first.cache_key


@pytest.mark.parametrize(
    "change",
    ["diff", "rubric_intent", "rubric_item", "model", "decoding", "config_edited", "task_prompt"],
)
def test_any_change_to_what_the_judge_sees_or_how_it_decodes_misses(change: str) -> None:
    cache = MemoryCache()
    run(FakeBackend(decoding={"temperature": 0}), cache=cache)
    kw: dict[str, Any] = {}
    backend = FakeBackend(decoding={"temperature": 0})
    if change == "diff":
        kw["diff"] = DIFF.replace("abs(total)", "abs(total) ")
    elif change == "rubric_intent":
        kw["rubric"] = make_rubric(intent="Another intent.")
    elif change == "rubric_item":
        rubric = make_rubric()
        kw["rubric"] = rubric.model_copy(
            update={
                "blockers": [
                    rubric.blockers[0].model_copy(update={"criterion": "changed"}),
                    rubric.blockers[1],
                ]
            }
        )
    elif change == "model":
        backend = FakeBackend(model="claude-sonnet-4-5-20250930", decoding={"temperature": 0})
    elif change == "decoding":
        backend = FakeBackend(decoding={"temperature": 0.5})
    elif change == "config_edited":
        kw["config_edited"] = True
    result = asyncio.run(
        judge_diff(
            TASK.model_copy(update={"prompt": "Another prompt."}) if change == "task_prompt" else TASK,
            kw.pop("rubric", make_rubric()),
            kw.pop("diff", DIFF),
            backend,
            config_edited=kw.pop("config_edited", False),
            cache=cache,
        )
    )
    assert not result.cache_hit and len(backend.requests) == 1


def test_the_key_ignores_the_nonce_and_what_is_not_sent() -> None:
    cache = MemoryCache()
    run(FakeBackend(), cache=cache)
    # lazy_solution and evidence are never shown to the judge, so changing them must not miss
    rubric = make_rubric(
        hack_report={
            "lazy_solution": "something else",
            "alt_valid_solution": "Reverse clockwise vertices in polygon_area.",
        }
    )
    backend = FakeBackend()
    result = run(backend, cache=cache, rubric=rubric)
    assert result.cache_hit and backend.requests == []


def test_a_judge_failure_is_not_cached() -> None:
    cache = MemoryCache()
    run(FakeBackend([FakeBackend().reply("x")] * 3), cache=cache)
    assert cache.entries == {}
    backend = FakeBackend()
    assert not run(backend, cache=cache).cache_hit and len(backend.requests) == 1


def test_no_cache_judges_again_and_records_the_repeat() -> None:
    cache = MemoryCache()
    first = run(FakeBackend(), cache=cache)
    backend = FakeBackend(
        [FakeBackend().reply(verdicts_json(ALL, verdict="fail", reason="It breaks the convention."))]
    )
    again = run(backend, cache=cache, settings=JudgeSettings(no_cache=True))
    assert not again.cache_hit and len(backend.requests) == 1
    assert again.cache_bypass == "no_cache"
    assert again.previous_verdicts == {v.item_id: "pass" for v in first.verdicts}
    assert [k for k, _ in cache.regrades] == [first.cache_key]
    assert cache.entries[first.cache_key].verdicts == first.verdicts  # the first result stays


def test_the_regrade_sample_is_seeded_per_key() -> None:
    cache = MemoryCache()
    run(FakeBackend(), cache=cache)
    always = FakeBackend()
    result = run(always, cache=cache, settings=JudgeSettings(regrade_sample=1.0))
    assert result.cache_bypass == "regrade_sample" and len(always.requests) == 1
    never = FakeBackend()
    assert run(never, cache=cache, settings=JudgeSettings(regrade_sample=0.0)).cache_hit
    # a rate in between picks some keys, the same ones every time for one seed
    picks = []
    for seed in range(40):
        backend = FakeBackend()
        r = run(backend, cache=cache, settings=JudgeSettings(regrade_sample=0.5, regrade_seed=seed))
        r2 = run(FakeBackend(), cache=cache, settings=JudgeSettings(regrade_sample=0.5, regrade_seed=seed))
        assert r.cache_hit == r2.cache_hit
        picks.append(not r.cache_hit)
    assert 5 < sum(picks) < 35


# --- sync wrapper and sweeps -------------------------------------------------------------------------------


def test_judge_run_is_the_synchronous_entry_point() -> None:
    result = judge_run(TASK, make_rubric(), DIFF, FakeBackend(), config_edited=False)
    assert len(result.verdicts) == 5


def test_a_sweep_respects_the_concurrency_limit_and_reports_progress() -> None:
    backend = FakeBackend(delay=0.02)
    jobs = [
        SweepJob(label=f"run{i}", task=TASK, rubric=make_rubric(), diff_text=DIFF + f"+# {i}\n")
        for i in range(10)
    ]
    seen: list[tuple[int, int, str]] = []
    sweep = asyncio.run(
        judge_sweep(
            jobs,
            backend,
            settings=JudgeSettings(concurrency=3),
            progress=lambda d, t, label, r: seen.append((d, t, label)),
        )
    )
    assert backend.max_in_flight == 3
    assert [d for d, _, _ in seen] == list(range(1, 11)) and {t for _, t, _ in seen} == {10}
    assert sorted(label for _, _, label in seen) == sorted(job.label for job in jobs)
    assert sweep.calls == 10 and sweep.failures == 0 and sweep.labels == [j.label for j in jobs]
    assert sweep.usage.input_tokens == 10 * 1000


class HeldCache(SqliteCache):
    """The command line's cache, whose writes wait until ``release`` is set (a disk that is slow)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.release = threading.Event()

    def put(self, key: str, entry: CachedVerdicts) -> None:
        assert self.release.wait(timeout=60), "the writes were never released"
        super().put(key, entry)


class CountingBackend(FakeBackend):
    """Sets ``all_sent`` once it has been asked ``expected`` times."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.all_sent = threading.Event()

    async def complete(self, request: JudgeRequest) -> BackendReply:
        reply = await super().complete(request)
        if len(self.requests) == self.expected:
            self.all_sent.set()
        return reply


def test_a_sweep_does_not_wait_for_the_cache_writes_between_calls(tmp_path: Path) -> None:
    """With one slot, every call is made while no verdict is written yet (a write holding the slot would
    make the second call wait for the first write: the writes are released only once all calls are made);
    the sweep still returns with every verdict stored, and a diff judged twice is one call."""
    jobs = [
        SweepJob(label=f"run{i}", task=TASK, rubric=make_rubric(), diff_text=DIFF + f"+# {i % 4}\n")
        for i in range(6)
    ]
    cache = HeldCache(tmp_path / "cache.sqlite3")
    backend = CountingBackend(expected=4)
    threading.Thread(target=lambda: cache.release.set() if backend.all_sent.wait(60) else None).start()
    sweep = asyncio.run(judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(concurrency=1)))
    assert sweep.calls == 4 and sweep.cache_hits == 2 and sweep.failures == 0
    warm = asyncio.run(judge_sweep(jobs, FakeBackend(), cache=SqliteCache(cache.path)))
    assert warm.calls == 0 and warm.cache_hits == 6


class QueueingCache(MemoryCache):
    """A cache that only queues its writes (as the sweep's write-behind does): records where they are made."""

    queues_writes = True

    def __init__(self) -> None:
        super().__init__()
        self.writers: list[int] = []

    def put(self, key: str, entry: CachedVerdicts) -> None:
        self.writers.append(threading.get_ident())
        super().put(key, entry)


def test_a_cache_that_queues_its_writes_is_written_on_the_event_loop() -> None:
    """No trip through a worker thread for a write that cannot block: the slot is free once answered."""
    cache = QueueingCache()

    async def judge() -> int:
        await judge_diff(TASK, make_rubric(), DIFF, FakeBackend(), config_edited=False, cache=cache)
        return threading.get_ident()

    loop_thread = asyncio.run(judge())
    assert cache.writers == [loop_thread]


def test_a_sweep_counts_cache_hits_and_turns_bad_input_into_that_runs_failure() -> None:
    cache = MemoryCache()
    jobs = [
        SweepJob(label="a", task=TASK, rubric=make_rubric(), diff_text=DIFF),
        SweepJob(label="b", task=TASK, rubric=make_rubric(), diff_text=DIFF),
        SweepJob(label="nul", task=TASK, rubric=make_rubric(), diff_text=DIFF + "\x00"),
    ]
    sweep = asyncio.run(
        judge_sweep(jobs, FakeBackend(delay=0.01), cache=cache, settings=JudgeSettings(concurrency=1))
    )
    assert sweep.calls == 1 and sweep.cache_hits == 1 and sweep.failures == 1
    assert sweep.results[2].failure is not None and "NUL" in sweep.results[2].failure
    with pytest.raises(InputError):
        run(FakeBackend(), diff=DIFF + "\x00")


class FakeBatchBackend(FakeBackend):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.batch = True
        self.batches: list[int] = []

    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]:
        self.batches.append(len(requests))
        out: list[BackendReply | BackendError] = []
        for r in requests:
            if "FAIL" in r.diff_text:
                out.append(BackendError("errored"))
            elif "RETRY" in r.diff_text and len(self.batches) == 1:
                out.append(self.reply("not json"))
            else:
                out.append(self.reply(verdicts_json(r.item_ids)))
        return out


def test_a_batch_backend_sends_the_sweep_as_batches() -> None:
    backend = FakeBatchBackend()
    jobs = [
        SweepJob(label=str(i), task=TASK, rubric=make_rubric(), diff_text=DIFF + f"+# {i}\n")
        for i in range(5)
    ]
    jobs.append(SweepJob(label="retry", task=TASK, rubric=make_rubric(), diff_text=DIFF + "+# RETRY\n"))
    jobs.append(SweepJob(label="fail", task=TASK, rubric=make_rubric(), diff_text=DIFF + "+# FAIL\n"))
    sweep = asyncio.run(judge_sweep(jobs, backend, settings=JudgeSettings(concurrency=50)))
    assert backend.batches == [7, 1]  # everything at once, then the one retry
    assert backend.requests == []  # never one call at a time
    assert sweep.failures == 1 and sweep.results[6].failure is not None
    assert sweep.results[5].retries == 1 and len(sweep.results[5].verdicts) == 5


def test_the_batching_wrapper_keeps_the_cache_key() -> None:
    inner = FakeBatchBackend()
    wrapped = BatchingBackend(inner)
    cache = MemoryCache()
    run(inner, cache=cache)
    assert asyncio.run(
        judge_diff(TASK, make_rubric(), DIFF, wrapped, config_edited=False, cache=cache)
    ).cache_hit


class BrokenBatchBackend(FakeBatchBackend):
    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]:
        self.batches.append(len(requests))
        if len(self.batches) == 1:
            raise RuntimeError("connection reset")
        return []  # a batch that answers nothing


def test_a_broken_batch_fails_its_runs_instead_of_hanging() -> None:
    backend = BrokenBatchBackend()
    jobs = [
        SweepJob(label=str(i), task=TASK, rubric=make_rubric(), diff_text=DIFF.replace("/ 2", f"/ {i + 2}"))
        for i in range(3)
    ]
    sweep = asyncio.run(asyncio.wait_for(judge_sweep(jobs, backend), timeout=10))
    assert sweep.failures == 3
    assert all(r.failure is not None and "connection reset" in r.failure for r in sweep.results)


class RecordingBackend(FakeBackend):
    """Records when each call starts and ends, with its static prefix."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.events: list[tuple[str, str]] = []

    async def complete(self, request: JudgeRequest) -> BackendReply:
        self.events.append(("start", request.rubric_text))
        try:
            return await super().complete(request)
        finally:
            self.events.append(("end", request.rubric_text))


def test_a_sweep_sends_the_first_call_of_each_static_prefix_alone() -> None:
    cache = MemoryCache()
    backend = RecordingBackend(delay=0.02)
    cached = SweepJob(label="cached", task=TASK, rubric=make_rubric(), diff_text=DIFF)
    asyncio.run(judge_sweep([cached], backend, cache=cache))
    backend.events.clear()
    jobs = [cached] + [
        SweepJob(label=f"run{i}", task=TASK, rubric=make_rubric(), diff_text=DIFF + f"+# {i}\n",
                 config_edited=i % 2 == 1)  # the fixed blocker makes another prefix
        for i in range(8)
    ]  # fmt: skip
    sweep = asyncio.run(judge_sweep(jobs, backend, cache=cache, settings=JudgeSettings(concurrency=8)))
    assert sweep.calls == 8 and sweep.cache_hits == 1
    prefixes = {prefix for _, prefix in backend.events}
    assert len(prefixes) == 2
    for prefix in prefixes:
        mine = [event for event, p in backend.events if p == prefix]
        # the first call (after the cache hit, which is no call) ends before the next one starts
        assert mine[:3] == ["start", "end", "start"], mine
    # the two leaders overlap, and the jobs after them run together
    assert [event for event, _ in backend.events[:2]] == ["start", "start"]
    assert backend.max_in_flight >= 4
