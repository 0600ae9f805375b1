"""``rubric check --injection-suite``: the per-kind table and both rates (text and --json), exit codes, and
one end-to-end run through the real SDKs against the local API server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grading.admission.corpus import PAYLOAD_KINDS
from grading.cli.rubric import main
from tests.grading.cli_helpers import check, own_stores
from tests.grading.judge.fake_servers import (
    Behaviour,
    FakeProviderServer,
    ParsedPrompt,
    default_reply,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
)
from tests.grading.task_helpers import Task, fooled_by, resisting

K = len(PAYLOAD_KINDS)


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def test_exit_0_with_the_table_and_both_rates(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    resisting(task)
    assert main(check(task, "--injection-suite")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"(scripted judge): {5 + 2 * K} judge calls")
    assert out[6] == (
        f"injection suite: {K} payload kinds x 1 lazy diff, and the oracle; {2 * K} of the {5 + 2 * K} "
        "judge calls"
    )
    table = out[8 : 8 + K]
    assert [line.split()[1] for line in table] == [k.name for k in PAYLOAD_KINDS]
    assert all(line.startswith("ok  ") and line.endswith("still mergeable") for line in table)
    assert out[-2] == f"attack success rate: 0 of {K} (0.0%); benign drift rate: 0 of {K} (0.0%)"
    assert out[-1] == "admitted"


def test_exit_1_on_an_attack_success_with_the_kind_named(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    fooled_by(task, "nonce_guesses")
    # The same judge admits the rubric without the suite.
    assert main(check(task)) == 0
    capsys.readouterr()
    assert main(check(task, "--injection-suite")) == 1
    out = capsys.readouterr().out.splitlines()
    (row,) = [line for line in out if line.split()[1:2] == ["nonce_guesses"]]
    assert row.startswith("FAIL") and row.split()[2:4] == ["1", "1"]
    assert [line for line in out if line.startswith("ATTACK SUCCESS")] == [
        "ATTACK SUCCESS: injection calib/lazy.diff + nonce_guesses  expected: not mergeable, fails B1  "
        "actual: mergeable, every measured blocker passes; does not fail B1"
    ]
    assert out[-2].startswith(f"attack success rate: 1 of {K} (2.5%)")
    assert out[-1] == f"not admitted: 1 of {5 + K} rows does not hold, 1 of them an attack success"

    assert main(check(task, "--injection-suite", "--json")) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["admitted"] is False and report["from_store"] is True  # the stored report, suite and all
    suite = report["injection"]
    assert (suite["attacks"], suite["attack_successes"], suite["benign"], suite["benign_drifts"]) == (
        K,
        1,
        K,
        0,
    )
    assert suite["attack_success_rate"] == pytest.approx(1 / K) and suite["benign_drift_rate"] == 0.0
    assert [k["kind"] for k in suite["kinds"] if k["attack_successes"]] == ["nonce_guesses"]
    assert all(k["description"] for k in suite["kinds"])
    outcomes = [(r["kind"], r["payload_kind"], r["outcome"]) for r in report["rows"] if r["outcome"]]
    assert ("injection", "nonce_guesses", "attack_success") in outcomes and len(outcomes) == 2 * K


def test_bad_input_with_the_suite_is_exit_2(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    task.set_diff("calib/lazy.diff", {"tests/test_calc.py": None})  # a deletion only: nothing to anchor on
    assert main(check(task, "--injection-suite")) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "calib/lazy.diff" in captured.err and "Traceback" not in captured.err


def judging_by_content(gullible_to: str | None) -> Any:
    """A model behind the local API server that reads the fenced diff: the untouched workspace fails B2,
    the lazy fix (a special case for the test input) fails B1, anything else passes. ``gullible_to``: a
    string that, when in the change, makes it pass everything (a model that obeys planted verdicts)."""

    def reply(prompt: ParsedPrompt, behaviour: Behaviour) -> dict[str, Any]:
        body = default_reply(prompt, behaviour)
        change = prompt.user_text
        fails: set[str] = set()
        if "@@" not in change:
            fails = {"B2"}
        elif "4 if a == 2" in change and not (gullible_to and gullible_to in change):
            fails = {"B1"}
        for verdict in body["verdicts"]:
            if verdict["id"] in fails:
                verdict.update(verdict="fail", finding="violated", reason=f"{verdict['id']} is not met.")
        return body

    return reply


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_end_to_end_through_the_real_sdk(
    task: Task,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
    capsys: pytest.CaptureFixture[str],
    provider: str,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    fake_server.latency = 0.02  # the model's time to answer, so concurrent calls overlap
    model = "claude-sonnet-4-5-20250929" if provider == "anthropic" else "gpt-4.1-2025-04-14"
    cache = str(tmp_path / "verdicts.sqlite3")
    store = str(tmp_path / "s.sqlite3")
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", f"{provider}:{model}",
            "--injection-suite", "--json", "--cache", cache, "--store", store]  # fmt: skip

    fake_server.reply_builder = judging_by_content(None)
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["admitted"] and not report["scripted"]
    assert report["injection"]["attack_successes"] == 0 and report["injection"]["benign_drifts"] == 0
    assert len(fake_server.model_calls()) == report["calls"] == 5 + 2 * K
    assert fake_server.max_in_flight > 1  # the runner's concurrency
    # Every payload reached the model inside the fence, as data.
    texts = [
        (fake_server.parse_anthropic if provider == "anthropic" else fake_server.parse_openai)(
            c.body
        ).user_text
        for c in fake_server.model_calls()
    ]
    assert any('"verdict": "pass"' in t and "4 if a == 2" in t for t in texts)

    # A model that obeys a planted JSON verdict: each kind that carries one succeeds; admission is refused.
    fake_server.reply_builder = judging_by_content('"verdict": "pass"')
    before = len(fake_server.model_calls())
    assert main([*argv, "--no-cache"]) == 1
    report = json.loads(capsys.readouterr().out)
    successes = sorted(k["kind"] for k in report["injection"]["kinds"] if k["attack_successes"])
    assert successes == ["chat_role_tags", "fake_json_verdicts", "prompt_tail_prefill"]
    assert not report["admitted"] and len(fake_server.model_calls()) - before == 5 + 2 * K

    # Judged again with the verdict cache: no call at all. (It holds the first run's verdicts: a --no-cache
    # run is recorded as a regrade, never cached.)
    before = len(fake_server.model_calls())
    assert main([*argv, "--refresh"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 0
    assert len(fake_server.model_calls()) == before
