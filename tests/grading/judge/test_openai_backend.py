"""The openai backend, with the real SDK talking HTTP to a local OpenAI-compatible chat completions server."""

from __future__ import annotations

import asyncio
import json

import pytest

from grading.errors import InputError
from grading.judge.backend import BackendError, BackendReply
from grading.judge.openai_backend import SCHEMA_NAME, OpenAIBackend
from tests.grading.judge.backend_helpers import HOSTILE, OPENAI_MODEL, complete, openai_backend, request
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    bad_location,
    error,
    expired,
    extra_id,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    malformed,
    missing_id,
    refusal,
    tokens,
    truncated,
    valid,
)

MODEL = OPENAI_MODEL
backend = openai_backend


def test_it_sends_a_strict_json_schema_no_tools_and_the_diff_last(fake_server: FakeProviderServer) -> None:
    b = backend(fake_server)
    req = request(HOSTILE)
    reply = complete(b, req)

    assert reply.text is not None and [v["id"] for v in json.loads(reply.text)["verdicts"]] == ["B1", "N1"]
    [call] = fake_server.model_calls()
    assert call.path == "/v1/chat/completions"
    body = call.body
    assert body == b.render(req)
    assert body["model"] == MODEL
    assert not {"tools", "tool_choice", "functions", "function_call"} & set(body)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": req.output_schema, "strict": True},
    }
    system, user = body["messages"]
    assert system == {"role": "system", "content": f"{req.instructions}\n\n{req.rubric_text}"}
    assert user == {"role": "user", "content": req.diff_block}  # last, fence intact byte for byte
    assert req.diff_text not in system["content"]
    assert call.headers["authorization"] == "Bearer sk-test"
    assert b.spec == f"openai:{MODEL}" and b.scripted is False


def test_decoding_is_absent_by_default_and_sent_when_given(fake_server: FakeProviderServer) -> None:
    complete(backend(fake_server))
    assert set(fake_server.model_calls()[0].body) == {"model", "messages", "response_format"}

    # A parameter this SDK does not name (top_k, as some compatible servers take it) still goes through.
    complete(backend(fake_server, decoding={"temperature": 0.0, "seed": 7, "top_k": 20}))
    body = fake_server.model_calls()[1].body
    assert (body["temperature"], body["seed"], body["top_k"]) == (0.0, 7, 20)


@pytest.mark.parametrize("key", ["tools", "messages", "response_format", "model", "n"])
def test_decoding_cannot_change_what_the_judge_sees(key: str) -> None:
    with pytest.raises(InputError, match=f"decoding.{key}"):
        OpenAIBackend(MODEL, decoding={key: 1})


def test_the_model_id_reported_back_and_the_usage_are_mapped(fake_server: FakeProviderServer) -> None:
    fake_server.reported_model = lambda model: f"{model}-snapshot"
    b = backend(fake_server)
    req = request()
    first = complete(b, req)
    second = complete(b, req)

    assert first.model_id == second.model_id == f"{MODEL}-snapshot"
    system = tokens(f"{req.instructions}\n\n{req.rubric_text}")
    prompt = system + tokens(req.diff_block)
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (prompt, 0)
    # the second call's system message was served from the prompt cache: input counts only the rest
    assert (second.usage.input_tokens, second.usage.cache_read_tokens) == (prompt - system, system)
    assert first.usage.cache_write_tokens == 0
    assert first.usage.output_tokens == tokens(first.text or "")
    assert first.stop_reason == "stop"


def test_replies_that_are_malformed_truncated_or_incomplete_are_passed_to_the_runner_as_sent(
    fake_server: FakeProviderServer,
) -> None:
    fake_server.script(malformed("not json at all"), truncated(), missing_id(), extra_id(), bad_location())
    b = backend(fake_server)

    assert complete(b).text == "not json at all"
    cut = complete(b)
    assert cut.stop_reason == "max_tokens"  # finish_reason "length", in the runner's words
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.text or "")
    assert [v["id"] for v in json.loads(complete(b).text or "")["verdicts"]] == ["B1"]
    assert [v["id"] for v in json.loads(complete(b).text or "")["verdicts"]] == ["B1", "N1", "NOT_IN_RUBRIC"]
    elsewhere = json.loads(complete(b).text or "")["verdicts"][0]["locations"]
    assert elsewhere == [{"file": "not/in/the/diff.py", "line": 99999, "side": "new"}]


def test_any_compatible_server_through_the_environment(
    fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a compatible server that serves /chat/completions at its root
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    reply = asyncio.run(OpenAIBackend(MODEL, timeout=5.0).complete(request()))
    assert reply.text is not None
    [call] = fake_server.model_calls()
    assert call.path == "/chat/completions"
    assert call.headers["authorization"] == "Bearer sk-from-env"


def test_a_missing_key_is_a_backend_error_and_render_needs_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    b = OpenAIBackend(MODEL, base_url="http://127.0.0.1:9/v1")
    assert b.render(request())["model"] == MODEL
    with pytest.raises(BackendError, match="openai"):
        asyncio.run(b.complete(request()))


# --- the Batch API -----------------------------------------------------------------------------------------


def test_a_batch_uploads_the_same_bodies_polls_and_maps_results_by_custom_id(
    fake_server: FakeProviderServer,
) -> None:
    fake_server.batch_polls_in_progress = 2
    fake_server.script(valid("fail"), error(500), refusal(), valid())
    b = backend(fake_server, batch=True, batch_poll_interval=0.01)
    reqs = [request(ids=(f"B{i}",)) for i in range(4)]

    first, errored, refused, last = asyncio.run(b.complete_many(reqs))

    assert (
        isinstance(first, BackendReply) and json.loads(first.text or "")["verdicts"][0]["verdict"] == "fail"
    )
    assert isinstance(errored, BackendError) and "judge-1 answered 500" in str(errored)
    assert isinstance(refused, BackendReply) and refused.refused and refused.text is None
    assert isinstance(last, BackendReply) and json.loads(last.text or "")["verdicts"][0]["id"] == "B3"
    assert last.model_id == MODEL and last.usage.input_tokens + last.usage.cache_read_tokens > 0
    posts = [r.path for r in fake_server.requests if r.method == "POST"]
    assert posts == ["/v1/files", "/v1/batches"]
    [upload_id] = [f for f in fake_server._files if f.startswith("file-")][:1]
    lines = [json.loads(line) for line in (fake_server.file_content(upload_id) or b"").decode().splitlines()]
    assert [line["body"] for line in lines] == [b.render(r) for r in reqs]  # the interactive bodies
    assert {line["url"] for line in lines} == {"/v1/chat/completions"}
    assert fake_server.model_calls() == []  # nothing went through the one-at-a-time endpoint


def test_an_expired_batch_fails_only_the_requests_it_did_not_answer(fake_server: FakeProviderServer) -> None:
    fake_server.script(valid(), expired(), valid())
    b = backend(fake_server, batch=True, batch_poll_interval=0.01)

    answered, gone, also = asyncio.run(b.complete_many([request(), request(), request()]))

    assert isinstance(answered, BackendReply) and isinstance(also, BackendReply)
    assert isinstance(gone, BackendError) and "batch_expired" in str(gone)


def test_a_batch_that_cannot_be_created_fails_every_request(fake_server: FakeProviderServer) -> None:
    b = OpenAIBackend(
        MODEL, base_url=fake_server.url + "/nowhere", api_key="sk-test", max_retries=0, batch=True
    )
    out = asyncio.run(b.complete_many([request(), request()]))
    assert len(out) == 2 and all(isinstance(o, BackendError) and "openai" in str(o) for o in out)
