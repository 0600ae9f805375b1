from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from grading.errors import InputError
from grading.judge.cache import CachedVerdicts, SqliteCache, default_cache_path
from grading.judge.cost import DEFAULT_PRICES, PriceTable, load_price_table
from grading.judge.models import ItemVerdict, Usage
from grading.judge.runner import JudgeSettings, judge_diff
from tests.grading.judge.judge_helpers import DIFF, TASK, FakeBackend, make_rubric


def test_a_price_file_extends_and_overrides_the_built_in_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(
        json.dumps(
            {
                "claude-opus-4-6": {"input": 5, "output": 25},
                "claude-sonnet-4-5-20250929": {"input": 1, "output": 2, "cache_read": 0.1},
            }
        )
    )
    table = load_price_table(path)
    opus = table.prices["claude-opus-4-6"]
    assert opus.cache_write == 5 and opus.cache_read == 5  # default to the input price
    assert table.prices["claude-sonnet-4-5-20250929"].input == 1
    assert "claude-haiku-4-5-20251001" in table.prices
    cost = table.cost(Usage(input_tokens=2_000_000, output_tokens=1_000_000), "claude-opus-4-6")
    assert cost.cost_usd == pytest.approx(35) and cost.cost_known


def test_the_price_file_can_come_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"x-2025-01-01": {"input": 1, "output": 1}}))
    assert "x-2025-01-01" in load_price_table(env={"RUBRIC_JUDGE_PRICES": str(path)}).prices
    assert set(load_price_table(env={}).prices) == set(DEFAULT_PRICES)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "JSON object"),
        ('{"m": {"input": -1, "output": 1}}', "m.input"),
        ('{"m": {"input": 1}}', "m.output"),
        ('{"m": {"input": 1, "output": 1, "extra": 2}}', "m.extra"),
        ("{", "malformed JSON"),
    ],
)
def test_a_bad_price_file_is_an_input_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(InputError) as exc:
        load_price_table(path)
    assert message in str(exc.value)


def test_the_reported_model_id_is_used_when_the_requested_one_has_no_price() -> None:
    table = PriceTable()
    cost = table.cost(Usage(output_tokens=1_000_000), "some-deployment-2025-01-01", "gpt-4o-2024-08-06")
    assert cost.cost_usd == pytest.approx(10) and cost.cost_known


def test_the_default_cache_path_honours_the_environment(tmp_path: Path) -> None:
    assert default_cache_path({"RUBRIC_JUDGE_CACHE": "/x/c.db", "XDG_CACHE_HOME": "/y"}) == Path("/x/c.db")
    assert default_cache_path({"XDG_CACHE_HOME": "/y"}) == Path("/y/mergeability-grading/judge-cache.sqlite3")
    assert default_cache_path({"XDG_CACHE_HOME": "relative"}) == (
        Path.home() / ".cache/mergeability-grading/judge-cache.sqlite3"
    )
    assert default_cache_path({}) == Path.home() / ".cache/mergeability-grading/judge-cache.sqlite3"


def _entry(verdict: str = "pass") -> CachedVerdicts:
    return CachedVerdicts(
        judge="fake",
        model_id="m",
        verdicts=[ItemVerdict(item_id="B1", kind="blocker", verdict=verdict, reason="r")],
    )


def test_the_sqlite_cache_stores_the_first_result_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite3"
    cache = SqliteCache(path)
    assert cache.get("k") is None
    cache.put("k", _entry("pass"))
    cache.put("k", _entry("fail"))  # a concurrent second writer does not replace the first
    again = SqliteCache(path).get("k")
    assert again is not None and again.verdicts[0].verdict == "pass" and again.created
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_sqlite_cache_measures_repeat_agreement(tmp_path: Path) -> None:
    cache = SqliteCache(tmp_path / "c.sqlite3")
    cache.put("k1", _entry("pass"))
    cache.put("k2", _entry("pass"))
    cache.record_regrade("k1", _entry("pass"))
    cache.record_regrade("k2", _entry("fail"))
    agreement = cache.repeat_agreement()
    assert (agreement.pairs, agreement.items, agreement.agreeing) == (2, 2, 1) and agreement.rate == 0.5


def test_a_file_that_is_not_a_cache_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_text("this is not sqlite, just text that is long enough to have a header" * 20)
    with pytest.raises(InputError, match="judge cache"):
        SqliteCache(path)


def test_an_unreadable_entry_is_a_miss(tmp_path: Path) -> None:
    cache = SqliteCache(tmp_path / "c.sqlite3")
    cache.put("k", _entry())
    with closing(sqlite3.connect(tmp_path / "c.sqlite3", isolation_level=None)) as conn:
        conn.execute("UPDATE verdicts SET entry = '{\"old\": 1}'")
    assert cache.get("k") is None
    cache.put("k", _entry("fail"))
    got = cache.get("k")
    assert got is not None and got.verdicts[0].verdict == "fail"


def test_concurrent_processes_share_the_sqlite_cache(tmp_path: Path) -> None:
    # threads with their own connections stand in for processes: every write must land, none may fail
    path = tmp_path / "c.sqlite3"
    SqliteCache(path)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            cache = SqliteCache(path)
            for i in range(20):
                cache.put(f"k{n}-{i}", _entry())
                cache.record_regrade(f"k{n}-{i}", _entry())
        except BaseException as exc:  # collected for the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert SqliteCache(path).count() == 160
    assert SqliteCache(path).repeat_agreement().pairs == 160


def test_the_runner_hits_the_sqlite_cache_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    first = FakeBackend()
    asyncio.run(judge_diff(TASK, make_rubric(), DIFF, first, config_edited=False, cache=SqliteCache(path)))
    second = FakeBackend()
    result = asyncio.run(
        judge_diff(TASK, make_rubric(), DIFF, second, config_edited=False, cache=SqliteCache(path))
    )
    assert result.cache_hit and second.requests == [] and len(result.verdicts) == 5
    third = FakeBackend()
    again = asyncio.run(
        judge_diff(
            TASK,
            make_rubric(),
            DIFF,
            third,
            config_edited=False,
            cache=SqliteCache(path),
            settings=JudgeSettings(no_cache=True),
        )
    )
    assert not again.cache_hit and len(third.requests) == 1
    assert SqliteCache(path).repeat_agreement().agreeing == 5


WRITER = """
import sys
from grading.judge.cache import CachedVerdicts, SqliteCache
from grading.judge.models import ItemVerdict
cache = SqliteCache(__import__("pathlib").Path(sys.argv[1]))
n = sys.argv[2]
for i in range(25):
    entry = CachedVerdicts(judge=n, model_id="m", verdicts=[
        ItemVerdict(item_id="B1", kind="blocker", verdict="pass", reason="r")])
    cache.put(f"shared-{i}", entry)  # every process writes the same keys: the first one stays
    cache.put(f"{n}-{i}", entry)
    cache.record_regrade(f"shared-{i}", entry)
"""


def test_processes_writing_the_same_cache_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"p{n}"], stderr=subprocess.PIPE)
        for n in range(6)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    cache = SqliteCache(path)
    assert cache.count() == 25 + 6 * 25
    assert cache.repeat_agreement().pairs == 6 * 25
    shared = cache.get("shared-0")
    assert shared is not None and shared.judge.startswith("p")
