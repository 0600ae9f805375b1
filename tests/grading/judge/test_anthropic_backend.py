"""The anthropic backend, with the real SDK talking HTTP to a local server that speaks the Messages API."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from grading.errors import InputError
from grading.judge.anthropic_backend import AnthropicBackend
from grading.judge.backend import BackendError, BackendReply
from tests.grading.judge.backend_helpers import (
    ANTHROPIC_MODEL,
    HOSTILE,
    NONCE,
    anthropic_backend,
    complete,
    request,
)
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    bad_location,
    error,
    expired,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    malformed,
    missing_id,
    refusal,
    tokens,
    truncated,
    valid,
)

MODEL = ANTHROPIC_MODEL
backend = anthropic_backend


def test_it_sends_the_rendered_body_with_schema_no_tools_and_the_diff_last(
    fake_server: FakeProviderServer,
) -> None:
    b = backend(fake_server)
    req = request(HOSTILE)
    reply = complete(b, req)

    assert reply.text is not None and json.loads(reply.text)["verdicts"][0]["id"] == "B1"
    [call] = fake_server.model_calls()
    body = call.body
    assert body == b.render(req)  # --render-only prints exactly what goes over the wire
    assert body["model"] == MODEL
    assert "tools" not in body and "tool_choice" not in body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": req.output_schema}}
    assert call.headers["authorization"] == "Bearer sk-test"  # this SDK sends the API key as a bearer token
    assert "anthropic-version" in call.headers
    assert b.spec == f"anthropic:{MODEL}" and b.scripted is False


def test_it_marks_the_static_part_for_caching_and_not_the_diff(fake_server: FakeProviderServer) -> None:
    req = request(HOSTILE)
    complete(backend(fake_server), req)
    body = fake_server.model_calls()[0].body

    system = body["system"]
    assert [block["text"] for block in system] == [req.instructions, req.rubric_text]
    assert "cache_control" not in system[0]
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    [message] = body["messages"]
    assert message["role"] == "user"
    assert message["content"] == [{"type": "text", "text": req.diff_block}]  # fence intact, byte for byte
    assert "cache_control" not in json.dumps(body["messages"])
    assert message["content"][-1]["text"].endswith(f"<<<END DIFF {NONCE}>>>")
    assert req.diff_text not in json.dumps(system)


def test_decoding_parameters_are_absent_by_default_and_sent_when_given(
    fake_server: FakeProviderServer,
) -> None:
    complete(backend(fake_server))
    plain = fake_server.model_calls()[0].body
    assert set(plain) == {"model", "max_tokens", "system", "messages", "output_config"}

    tuned = backend(
        fake_server, decoding={"temperature": 0.0, "top_p": 0.9, "output_config": {"effort": "low"}}
    )
    complete(tuned)
    body = fake_server.model_calls()[1].body
    assert body["temperature"] == 0.0 and body["top_p"] == 0.9
    # effort merges into output_config without dropping the reply schema
    assert body["output_config"]["effort"] == "low"
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert tuned.decoding == {"temperature": 0.0, "top_p": 0.9, "output_config": {"effort": "low"}}


def test_max_tokens_is_a_decoding_parameter(fake_server: FakeProviderServer) -> None:
    complete(backend(fake_server, decoding={"max_tokens": 1234}))
    assert fake_server.model_calls()[0].body["max_tokens"] == 1234


@pytest.mark.parametrize("key", ["tools", "system", "messages", "model", "stream"])
def test_decoding_cannot_change_what_the_judge_sees(key: str) -> None:
    with pytest.raises(InputError, match=f"decoding.{key}"):
        AnthropicBackend(MODEL, decoding={key: []})


def test_the_model_id_reported_back_and_the_usage_are_mapped(fake_server: FakeProviderServer) -> None:
    fake_server.reported_model = lambda model: f"{model}-served"
    b = backend(fake_server)
    req = request()
    first = complete(b, req)
    second = complete(b, req)

    assert first.model_id == second.model_id == f"{MODEL}-served"
    static = tokens(req.instructions + req.rubric_text)
    assert first.usage.cache_write_tokens == static and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == static and second.usage.cache_write_tokens == 0
    assert first.usage.input_tokens == second.usage.input_tokens == tokens(req.diff_block)
    assert first.usage.output_tokens == tokens(first.text or "")
    assert first.stop_reason == "end_turn" and not first.refused


def test_replies_that_are_malformed_truncated_or_incomplete_are_passed_to_the_runner_as_sent(
    fake_server: FakeProviderServer,
) -> None:
    fake_server.script(malformed('{"verdicts": [oops'), truncated(), missing_id(), bad_location())
    b = backend(fake_server)

    bad_json = complete(b)
    assert bad_json.text == '{"verdicts": [oops' and bad_json.stop_reason == "end_turn"

    cut = complete(b)
    assert cut.stop_reason == "max_tokens" and cut.text is not None
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.text)

    missing = complete(b)
    assert [v["id"] for v in json.loads(missing.text or "")["verdicts"]] == ["B1"]

    elsewhere = complete(b)
    locations = [v["locations"] for v in json.loads(elsewhere.text or "")["verdicts"]]
    assert locations[0] == [{"file": "not/in/the/diff.py", "line": 99999, "side": "new"}]


def test_key_and_base_url_come_from_the_environment(
    fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    reply = asyncio.run(AnthropicBackend(MODEL, timeout=5.0).complete(request()))
    assert reply.text is not None
    assert fake_server.model_calls()[0].headers["authorization"] == "Bearer sk-from-env"


def test_render_needs_no_key_and_a_call_without_one_is_a_backend_error(
    fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_IDENTITY_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path))  # no profile on disk either
    b = AnthropicBackend(MODEL, base_url=fake_server.anthropic_base_url)
    assert b.render(request())["model"] == MODEL
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY"):
        asyncio.run(b.complete(request()))
    [failed] = asyncio.run(b.complete_many([request()]))
    assert isinstance(failed, BackendError) and "ANTHROPIC_API_KEY" in str(failed)
    assert fake_server.requests == []


def test_batches_create_poll_and_map_results_by_custom_id(fake_server: FakeProviderServer) -> None:
    fake_server.batch_polls_in_progress = 2
    fake_server.script(valid("fail"), error(500), refusal(), expired(), valid())
    b = backend(fake_server, batch=True, batch_poll_interval=0.01)
    reqs = [request(ids=(f"B{i}",)) for i in range(5)]

    out = asyncio.run(b.complete_many(reqs))

    assert len(out) == 5
    first, errored, refused, gone, last = out
    assert isinstance(first, BackendReply) and json.loads(first.text or "")["verdicts"][0] == {
        "id": "B0",
        "reason": "Misses B0.",
        "finding": "violated",
        "verdict": "fail",
        "locations": [{"file": "src/calc.py", "line": 2, "side": "new"}],
    }
    assert isinstance(errored, BackendError) and "errored: api_error" in str(errored)
    assert isinstance(refused, BackendReply) and refused.refused and refused.text is None
    assert isinstance(gone, BackendError) and "expired" in str(gone)
    assert isinstance(last, BackendReply) and json.loads(last.text or "")["verdicts"][0]["id"] == "B4"
    assert last.model_id == MODEL and last.usage.input_tokens > 0

    created = [r for r in fake_server.requests if r.method == "POST"]
    assert [r.path for r in created] == ["/v1/messages/batches"]
    entries = created[0].body["requests"]
    assert [e["params"] for e in entries] == [b.render(r) for r in reqs]
    assert len({e["custom_id"] for e in entries}) == 5
    polls = [r for r in fake_server.requests if r.method == "GET" and not r.path.endswith("/results")]
    assert len(polls) >= 3  # two in progress, then ended
    assert fake_server.model_calls() == []  # nothing went through the one-at-a-time endpoint


def test_a_batch_that_outlives_its_deadline_is_cancelled_and_every_entry_fails(
    fake_server: FakeProviderServer,
) -> None:
    fake_server.batch_polls_in_progress = 10_000
    b = backend(fake_server, batch=True, batch_poll_interval=0.01, batch_deadline=0.1)
    out = asyncio.run(b.complete_many([request(), request()]))
    assert all(isinstance(o, BackendError) and "did not end" in str(o) for o in out)
    assert any(r.path.endswith("/cancel") for r in fake_server.requests)


def test_an_empty_batch_calls_nothing(fake_server: FakeProviderServer) -> None:
    assert asyncio.run(backend(fake_server).complete_many([])) == []
    assert fake_server.requests == []


def test_without_rubric_text_the_instructions_carry_the_cache_mark() -> None:
    req = request().model_copy(update={"rubric_text": ""})
    system = AnthropicBackend(MODEL).render(req)["system"]
    assert system == [{"type": "text", "text": req.instructions, "cache_control": {"type": "ephemeral"}}]
