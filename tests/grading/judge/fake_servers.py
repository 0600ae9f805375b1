"""A local HTTP server that speaks the providers' APIs, so the real SDKs run end to end in tests.

One server answers both the Anthropic Messages API (``POST /v1/messages`` and the Message Batches
endpoints) and the OpenAI chat completions API (``POST /v1/chat/completions``, ``/chat/completions``), with
OpenAI's Batch API (``POST /v1/files`` multipart upload, ``POST /v1/batches``, ``GET /v1/batches/ID``,
``GET /v1/files/ID/content``). In a batch of either provider, a scripted ``status`` behaviour makes that
request an errored item and ``expired`` an expired one (an OpenAI batch holding one ends ``expired``).
It records every request (headers and JSON body) and answers model calls from a scripted queue of
:class:`Behaviour` values; when the queue is empty it answers with a valid reply built from the request.

A valid reply covers the item ids found in the request (``FakeProviderServer.item_ids`` when set, else the
``enum`` of the ``id``/``item_id`` property in the request's JSON schema) and cites the first added line of
the diff in the user message (the first removed line when nothing was added).
``reply_builder`` may be replaced to speak another reply shape.

Claude Code (the ``claude-code`` judge) speaks the same Messages API with two differences the server
follows: its structured output is a tool, ``StructuredOutput``, whose ``input_schema`` is the reply schema
(the server then answers with a ``tool_use`` block, and with a short closing text once the tool result
comes back), and it asks for ``"stream": true`` (the server then answers with server-sent events).

Usage is simulated the way the providers bill it: Anthropic writes the static prefix (every system block
up to the one carrying ``cache_control``) to a prompt cache on first sight and reads it afterwards;
OpenAI reports the system message as ``cached_tokens`` when the same one was seen before. A prefix becomes
readable only once the request that wrote it has been answered (``latency`` delays every answer), so
requests sent together all pay the write, as they do with the real APIs.
Tokens are counted as ``ceil(len(text) / 4)``. By default any prefix is cached; ``cache_min_tokens`` (per
provider: the shortest prefix the provider caches at all) and ``openai_cache_increment`` (OpenAI caches the
prefix in steps of 128 tokens) make it bill as the real APIs do, for benchmarks/batch_billing.py.

Pytest fixtures: ``fake_server`` (import ``fake_server_fixture`` from this module into a test module).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

import pytest

from tests.local_server import LocalServer

BehaviourKind = Literal[
    "valid",  # verdicts for every id, citing a real diff line
    "text",  # the given text verbatim (malformed JSON, wrong shape...)
    "truncated",  # half of a valid reply, stop_reason max_tokens / finish_reason length
    "refusal",  # stop_reason refusal / message.refusal
    "missing_id",  # a valid reply without its last id
    "extra_id",  # a valid reply plus an id nobody asked for
    "bad_location",  # a valid reply citing a file and line that are not in the diff
    "status",  # an HTTP error (429, 529, 500...) with retry-after headers
    "slow",  # a valid reply after `delay` seconds (to exceed the client timeout)
    "expired",  # batches only: the request expired
    "tool_calls",  # calls of the given tools (the tree judge): tool_use blocks / message.tool_calls
]


@dataclass(frozen=True)
class Behaviour:
    kind: BehaviourKind
    status: int = 200
    text: str | None = None
    retry_after_ms: int | None = None
    retry_after: str | None = None
    delay: float = 0.0
    verdict: str = "pass"
    tool_calls: tuple[tuple[str, Any], ...] = ()  # (tool name, arguments) for "tool_calls"


def valid(verdict: str = "pass") -> Behaviour:
    return Behaviour("valid", verdict=verdict)


def malformed(text: str = '{"verdicts": [{"id": "B1", "verdict": "pa') -> Behaviour:
    return Behaviour("text", text=text)


def text(reply: str) -> Behaviour:
    return Behaviour("text", text=reply)


def truncated() -> Behaviour:
    return Behaviour("truncated")


def refusal() -> Behaviour:
    return Behaviour("refusal")


def missing_id() -> Behaviour:
    return Behaviour("missing_id")


def extra_id() -> Behaviour:
    return Behaviour("extra_id")


def bad_location() -> Behaviour:
    return Behaviour("bad_location")


def error(
    status: int, *, retry_after_ms: int | None = 1, retry_after: str | None = "0", message: str | None = None
) -> Behaviour:
    """An HTTP error; ``message`` replaces its text, with ``{key}`` replaced by the caller's API key."""
    # Real servers send retry-after in whole seconds; the SDKs prefer retry-after-ms, which keeps tests fast.
    return Behaviour(
        "status", status=status, retry_after_ms=retry_after_ms, retry_after=retry_after, text=message
    )


def storm(status: int, count: int) -> list[Behaviour]:
    return [error(status) for _ in range(count)]


def slow(delay: float) -> Behaviour:
    return Behaviour("slow", delay=delay)


def expired() -> Behaviour:
    return Behaviour("expired")


def tool_use(*calls: tuple[str, Any]) -> Behaviour:
    """A turn that calls tools: ``tool_use(("read_file", {"path": "a.py"}), ...)``. Arguments that are a
    string are sent as they are (OpenAI: not JSON; Anthropic: wrapped as ``{"raw": ...}``)."""
    return Behaviour("tool_calls", tool_calls=tuple(calls))


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or None


@dataclass(frozen=True)
class ParsedPrompt:
    """What a model would see, taken out of a request body of either provider."""

    provider: Literal["anthropic", "openai"]
    model: str
    static_text: str  # system part
    cached_prefix: str  # the part marked for prompt caching (Anthropic); the system message (OpenAI)
    user_text: str  # the user message: the fenced diff
    ids: list[str]
    schema: dict[str, Any]


@dataclass
class DiffLine:
    file: str
    line: int
    side: Literal["new", "old"]


def diff_lines(diff: str) -> list[DiffLine]:
    """Every added (new side) and removed (old side) line of the unified diff inside ``diff``."""
    out: list[DiffLine] = []
    path: str | None = None
    old_path: str | None = None
    old_no = new_no = 0
    in_hunk = False
    for raw in diff.splitlines():
        if raw.startswith("--- "):
            name = raw[4:].split("\t")[0]
            old_path = None if name == "/dev/null" else name.removeprefix("a/")
            in_hunk = False
            continue
        if raw.startswith("+++ "):
            name = raw[4:].split("\t")[0]
            path = None if name == "/dev/null" else name.removeprefix("b/")
            in_hunk = False
            continue
        match = re.match(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", raw)
        if match:
            old_no, new_no = int(match.group(1)), int(match.group(2))
            in_hunk = True
            continue
        if not in_hunk:
            continue
        if raw.startswith("+") and path is not None:
            out.append(DiffLine(path, new_no, "new"))
            new_no += 1
        elif raw.startswith("-") and old_path is not None:
            out.append(DiffLine(old_path, old_no, "old"))
            old_no += 1
        elif raw.startswith(" "):
            old_no += 1
            new_no += 1
        elif raw.startswith("\\"):
            continue
        else:
            in_hunk = False
    return out


def ids_in_schema(schema: Any) -> list[str] | None:
    """The ``enum`` of an ``id`` / ``item_id`` property anywhere in a JSON schema."""
    if isinstance(schema, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for name in ("id", "item_id"):
                prop = props.get(name)
                if isinstance(prop, dict) and isinstance(prop.get("enum"), list):
                    return [str(v) for v in prop["enum"]]
        for value in schema.values():
            found = ids_in_schema(value)
            if found is not None:
                return found
    elif isinstance(schema, list):
        for value in schema:
            found = ids_in_schema(value)
            if found is not None:
                return found
    return None


def default_reply(prompt: ParsedPrompt, behaviour: Behaviour) -> dict[str, Any]:
    """``{"verdicts": [{"id", "reason", "finding", "verdict", "locations": [{"file", "line", "side"}]}]}``."""
    lines = sorted(diff_lines(prompt.user_text), key=lambda d: d.side != "new")  # an added line first
    locations = [{"file": lines[0].file, "line": lines[0].line, "side": lines[0].side}] if lines else []
    return {
        "verdicts": [
            {
                "id": item_id,
                "reason": f"The change meets {item_id}."
                if behaviour.verdict == "pass"
                else f"Misses {item_id}.",
                "finding": "satisfied" if behaviour.verdict == "pass" else "violated",
                "verdict": behaviour.verdict,
                "locations": locations,
            }
            for item_id in prompt.ids
        ]
    }


ReplyBuilder = Callable[[ParsedPrompt, Behaviour], dict[str, Any]]


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class FakeProviderServer(LocalServer):
    """Anthropic Messages (+ batches) and OpenAI chat completions on 127.0.0.1, answering from a script."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.queue: deque[Behaviour] = deque()
        self.item_ids: list[str] | None = None
        self.reply_builder: ReplyBuilder = default_reply
        self.reported_model: Callable[[str], str] = lambda model: model
        self.batch_polls_in_progress = 1  # retrieves answered "in_progress" before a batch ends
        self._lock = threading.Lock()
        self.latency = 0.0  # seconds before every model reply is sent (the model's time to answer)
        self.in_flight = 0  # model calls being answered now, and the most at once
        self.max_in_flight = 0
        self.arrivals: list[float] = []  # time.monotonic() of every model call's arrival
        self.connections = 0  # TCP connections accepted (HTTP/1.1 keeps one open for many requests)
        self._prompt_cache: set[str] = set()  # prefixes readable from the prompt cache
        self.cache_min_tokens: dict[str, int] = {}  # provider -> shortest prefix cached (absent: any)
        self.openai_cache_increment = 1  # OpenAI's cached tokens are a multiple of this
        self._unpublished = threading.local()  # the prefix this handler thread wrote, readable once answered
        self._batches: dict[str, dict[str, Any]] = {}
        self._files: dict[str, bytes] = {}  # OpenAI files: batch input, output and error files
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        # A slow reply must not hold up the test's teardown.
        self.serve(self._handler_class(), name="fake-provider", block_on_close=False)

    # -- lifecycle ---------------------------------------------------------------------------------------

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the SDK appends /v1/messages

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"  # the SDK appends /chat/completions

    def stop(self) -> None:
        self._stopping.set()
        super().stop()

    # -- scripting and inspection -----------------------------------------------------------------------

    def script(self, *behaviours: Behaviour | list[Behaviour]) -> None:
        with self._lock:
            for b in behaviours:
                self.queue.extend(b if isinstance(b, list) else [b])

    def model_calls(self) -> list[RecordedRequest]:
        """POSTs to the Messages or chat completions endpoint (batch traffic excluded)."""
        return [
            r
            for r in self.requests
            if r.method == "POST"
            and r.path.split("?")[0].rstrip("/").endswith(("/v1/messages", "/chat/completions"))
        ]

    def _publish_prompt_cache(self) -> None:
        key = getattr(self._unpublished, "key", None)
        self._unpublished.key = None
        if key is not None:
            with self._lock:
                self._prompt_cache.add(key)

    def clear_prompt_cache(self) -> None:
        with self._lock:
            self._prompt_cache.clear()

    def _next_behaviour(self) -> Behaviour:
        with self._lock:
            return self.queue.popleft() if self.queue else valid()

    # -- parsing ----------------------------------------------------------------------------------------

    def parse_anthropic(self, body: dict[str, Any]) -> ParsedPrompt:
        system = body.get("system", [])
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        static_text = "".join(b.get("text", "") for b in blocks)
        cached_prefix = ""
        for i, block in enumerate(blocks):
            if "cache_control" in block:
                cached_prefix = "".join(b.get("text", "") for b in blocks[: i + 1])
        user_text = "".join(
            _block_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"
        )
        schema = ((body.get("output_config") or {}).get("format") or {}).get("schema") or {}
        tool = structured_output_tool(body)
        if tool is not None:
            schema = tool.get("input_schema") or {}
        model = str(body.get("model"))
        return ParsedPrompt(
            "anthropic", model, static_text, cached_prefix, user_text, self._ids_for(schema), schema
        )

    def parse_openai(self, body: dict[str, Any]) -> ParsedPrompt:
        messages = body.get("messages", [])
        static_text = "".join(
            _block_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        )
        user_text = "".join(_block_text(m.get("content")) for m in messages if m.get("role") == "user")
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        return ParsedPrompt(
            "openai",
            str(body.get("model")),
            static_text,
            static_text,
            user_text,
            self._ids_for(schema),
            schema,
        )

    def _ids_for(self, schema: dict[str, Any]) -> list[str]:
        if self.item_ids is not None:
            return list(self.item_ids)
        return ids_in_schema(schema) or []

    # -- replies ----------------------------------------------------------------------------------------

    def reply_text(self, prompt: ParsedPrompt, behaviour: Behaviour) -> str:
        """The model's text for a behaviour that produces one."""
        if behaviour.kind == "text":
            return behaviour.text or ""
        reply = self.reply_builder(prompt, behaviour)
        items = _verdict_list(reply)
        if behaviour.kind == "missing_id" and items:
            items.pop()
        elif behaviour.kind == "extra_id" and items:
            items.append({**items[0], "id": "NOT_IN_RUBRIC", "item_id": "NOT_IN_RUBRIC"})
        elif behaviour.kind == "bad_location":
            for item in items:
                item["locations"] = [{"file": "not/in/the/diff.py", "line": 99999, "side": "new"}]
        full = json.dumps(reply)
        if behaviour.kind == "truncated":
            return full[: len(full) // 2]
        return full

    def _prompt_usage(self, prompt: ParsedPrompt) -> tuple[int, int, int]:
        """(uncached input, cache write, cache read) tokens, updating the simulated prompt cache.

        As with the real API, a prefix written by one request is readable only once that request has been
        answered: requests sent at the same time all pay the write.
        """
        total = tokens(prompt.static_text) + tokens(prompt.user_text)
        prefix = tokens(prompt.cached_prefix)
        if prompt.provider == "openai":
            prefix -= prefix % self.openai_cache_increment
        if not prompt.cached_prefix or prefix < self.cache_min_tokens.get(prompt.provider, 1):
            return total, 0, 0
        key = hashlib.sha256(f"{prompt.model}\0{prompt.cached_prefix}".encode()).hexdigest()
        with self._lock:
            hit = key in self._prompt_cache
        if not hit:
            self._unpublished.key = key
        if hit:
            return total - prefix, 0, prefix
        if prompt.provider == "openai":
            return total, 0, 0  # OpenAI caches without a write charge
        return total - prefix, prefix, 0

    def anthropic_message(self, body: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        prompt = self.parse_anthropic(body)
        uncached, write, read = self._prompt_usage(prompt)
        stop_reason = "end_turn"
        content: list[dict[str, Any]] = []
        tool = structured_output_tool(body)
        if behaviour.kind == "tool_calls":
            content = [
                {"type": "tool_use", "id": f"toolu_{next(self._ids):06d}", "name": name,
                 "input": arguments if isinstance(arguments, dict) else {"raw": arguments}}
                for name, arguments in behaviour.tool_calls
            ]  # fmt: skip
            stop_reason = "tool_use"
        elif behaviour.kind == "refusal":
            stop_reason = "refusal"
        elif tool is not None and answered_tool(body, tool["name"]):
            content = [{"type": "text", "text": "Done."}]  # the turn after the tool result closes the session
        else:
            reply = self.reply_text(prompt, behaviour)
            content = [{"type": "text", "text": reply}]
            if behaviour.kind == "truncated":
                stop_reason = "max_tokens"
            elif tool is not None and behaviour.kind != "text":
                # tool-style structured output: the reply is the tool call's input
                content = [
                    {"type": "tool_use", "id": f"toolu_{next(self._ids):06d}", "name": tool["name"],
                     "input": json.loads(reply)}
                ]  # fmt: skip
                stop_reason = "tool_use"
        return {
            "id": f"msg_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": self.reported_model(prompt.model),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": uncached,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
                "output_tokens": sum(tokens(c.get("text") or json.dumps(c.get("input"))) for c in content)
                or 1,
            },
        }

    def openai_completion(self, body: dict[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        prompt = self.parse_openai(body)
        uncached, _, read = self._prompt_usage(prompt)
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish = "stop"
        if behaviour.kind == "tool_calls":
            message["tool_calls"] = [
                {"id": f"call_{next(self._ids):06d}", "type": "function",
                 "function": {"name": name, "arguments": a if isinstance(a, str) else json.dumps(a)}}
                for name, a in behaviour.tool_calls
            ]  # fmt: skip
            finish = "tool_calls"
        elif behaviour.kind == "refusal":
            message["refusal"] = "I can't help with that."
        else:
            message["content"] = self.reply_text(prompt, behaviour)
            if behaviour.kind == "truncated":
                finish = "length"
        completion = tokens(message["content"] or message["refusal"] or json.dumps(message.get("tool_calls")))
        return {
            "id": f"chatcmpl-{next(self._ids):06d}",
            "object": "chat.completion",
            "created": int(datetime.now(UTC).timestamp()),
            "model": self.reported_model(prompt.model),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {
                "prompt_tokens": uncached + read,
                "completion_tokens": completion,
                "total_tokens": uncached + read + completion,
                "prompt_tokens_details": {"cached_tokens": read},
            },
        }

    # -- batches ----------------------------------------------------------------------------------------

    def create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        batch_id = f"msgbatch_{next(self._ids):06d}"
        results = []
        for entry in body.get("requests", []):
            behaviour = self._next_behaviour()
            result: dict[str, Any]
            if behaviour.kind == "status":
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "api_error", "message": "Internal server error"},
                    },
                }
            elif behaviour.kind == "expired":
                result = {"type": "expired"}
            else:
                result = {"type": "succeeded", "message": self.anthropic_message(entry["params"], behaviour)}
                self._publish_prompt_cache()  # a batch is worked through one request after another
            results.append({"custom_id": entry["custom_id"], "result": result})
        now = datetime.now(UTC)
        batch = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "created_at": now.isoformat(),
            "expires_at": (now + timedelta(hours=24)).isoformat(),
            "ended_at": None,
            "results_url": None,
            "request_counts": {
                "processing": len(results),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "_results": results,
            "_polls_left": self.batch_polls_in_progress,
        }
        return self._kept_batch(batch_id, batch)

    def _kept_batch(self, batch_id: str, batch: dict[str, Any]) -> dict[str, Any]:
        """``batch`` kept under ``batch_id`` for the polls to come; its public fields, as created."""
        with self._lock:
            self._batches[batch_id] = batch
        return _public(batch)

    def retrieve_batch(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            if batch["_polls_left"] > 0:
                batch["_polls_left"] -= 1
            elif batch["processing_status"] != "ended":
                counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
                for r in batch["_results"]:
                    counts[r["result"]["type"]] += 1
                batch.update(
                    processing_status="ended",
                    ended_at=datetime.now(UTC).isoformat(),
                    results_url=f"{self.url}/v1/messages/batches/{batch_id}/results",
                    request_counts=counts,
                )
            return _public(batch)

    def cancel_batch(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._batches[batch_id]
            batch["processing_status"] = "canceling"
            batch["cancel_initiated_at"] = datetime.now(UTC).isoformat()
            return _public(batch)

    def batch_results(self, batch_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None or batch["processing_status"] != "ended":
                return None
            return list(reversed(batch["_results"]))  # the API does not keep request order

    # -- OpenAI batches ---------------------------------------------------------------------------------

    def upload_file(self, content: bytes) -> dict[str, Any]:
        file_id = f"file-{next(self._ids):06d}"
        with self._lock:
            self._files[file_id] = content
        return _file_object(file_id, len(content))

    def file_content(self, file_id: str) -> bytes | None:
        with self._lock:
            return self._files.get(file_id)

    def create_openai_batch(self, body: dict[str, Any]) -> dict[str, Any] | None:
        content = self.file_content(str(body.get("input_file_id")))
        if content is None:
            return None
        batch_id = f"batch_{next(self._ids):06d}"
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        expired = False
        for line in content.decode().splitlines():
            entry = json.loads(line)
            cid = entry["custom_id"]
            behaviour = self._next_behaviour()
            if behaviour.kind == "status":
                errors.append(
                    {"id": f"batch_req_{next(self._ids):06d}", "custom_id": cid, "error": None,
                     "response": {"status_code": behaviour.status, "request_id": "req",
                                  "body": {"error": {"message": "scripted error", "type": "server_error"}}}}
                )  # fmt: skip
            elif behaviour.kind == "expired":
                expired = True
                errors.append(
                    {"id": f"batch_req_{next(self._ids):06d}", "custom_id": cid, "response": None,
                     "error": {"code": "batch_expired", "message": "This request could not be executed "
                               "before the completion window expired."}}
                )  # fmt: skip
            else:
                completion = self.openai_completion(entry["body"], behaviour)
                self._publish_prompt_cache()  # a batch is worked through one request after another
                output.append(
                    {"id": f"batch_req_{next(self._ids):06d}", "custom_id": cid, "error": None,
                     "response": {"status_code": 200, "request_id": "req", "body": completion}}
                )  # fmt: skip
        now = int(datetime.now(UTC).timestamp())
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body.get("endpoint"),
            "input_file_id": body.get("input_file_id"),
            "completion_window": body.get("completion_window"),
            "status": "validating",
            "created_at": now,
            "output_file_id": None,
            "error_file_id": None,
            "request_counts": {"total": len(output) + len(errors), "completed": 0, "failed": 0},
            "_output": output,
            "_errors": errors,
            "_end": "expired" if expired else "completed",
            "_polls_left": self.batch_polls_in_progress,
        }
        return self._kept_batch(batch_id, batch)

    def retrieve_openai_batch(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return None
            if batch["_polls_left"] > 0:
                batch["_polls_left"] -= 1
                batch["status"] = "in_progress"
                return _public(batch)
        if batch["status"] in ("validating", "in_progress"):
            files = {}
            for name, lines in (("output_file_id", batch["_output"]), ("error_file_id", batch["_errors"])):
                if lines:
                    data = "".join(json.dumps(line) + "\n" for line in reversed(lines)).encode()
                    files[name] = self.upload_file(data)["id"]
            with self._lock:
                batch.update(
                    status=batch["_end"],
                    request_counts={
                        "total": len(batch["_output"]) + len(batch["_errors"]),
                        "completed": len(batch["_output"]),
                        "failed": len(batch["_errors"]),
                    },
                    **files,
                )
        return _public(batch)

    # -- HTTP -------------------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server.connections += 1

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._record(self, None)
                path = self.path.split("?")[0].rstrip("/")
                if file_match := re.fullmatch(r"/v1/files/([^/]+)/content", path):
                    content = server.file_content(file_match.group(1))
                    if content is None:
                        self._json(
                            404, {"error": {"message": "no such file", "type": "invalid_request_error"}}
                        )
                    else:
                        self._send(200, content, "application/octet-stream")
                    return
                if batch_match := re.fullmatch(r"/v1/batches/([^/]+)", path):
                    found = server.retrieve_openai_batch(batch_match.group(1))
                    if found is None:
                        self._json(
                            404, {"error": {"message": "no such batch", "type": "invalid_request_error"}}
                        )
                    else:
                        self._json(200, found)
                    return
                match = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?", path)
                if match is None:
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                if match.group(2):
                    lines = server.batch_results(match.group(1))
                    if lines is None:
                        self._json(
                            404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}
                        )
                        return
                    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
                    self._send(200, data, "application/x-jsonl")
                    return
                batch = server.retrieve_batch(match.group(1))
                if batch is None:
                    self._json(
                        404, {"type": "error", "error": {"type": "not_found_error", "message": "no batch"}}
                    )
                    return
                self._json(200, batch)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0].rstrip("/")
                if path == "/v1/files":
                    server._record(self, None)
                    self._json(
                        200, server.upload_file(multipart_file(raw, self.headers.get("content-type", "")))
                    )
                    return
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                server._record(self, body)
                path = self.path.split("?")[0].rstrip("/")
                if not isinstance(body, dict) and not path.endswith("/cancel"):
                    self._json(
                        400, {"type": "error", "error": {"type": "invalid_request_error", "message": "json"}}
                    )
                elif path == "/v1/batches" and isinstance(body, dict):
                    created = server.create_openai_batch(body)
                    if created is None:
                        self._json(
                            404, {"error": {"message": "no such file", "type": "invalid_request_error"}}
                        )
                    else:
                        self._json(200, created)
                elif path == "/v1/messages/batches" and isinstance(body, dict):
                    self._json(200, server.create_batch(body))
                elif cancel := re.fullmatch(r"/v1/messages/batches/([^/]+)/cancel", path):
                    self._json(200, server.cancel_batch(cancel.group(1)))
                elif path == "/v1/messages" and isinstance(body, dict):
                    self._model_call(body, "anthropic")
                elif path in ("/v1/chat/completions", "/chat/completions") and isinstance(body, dict):
                    self._model_call(body, "openai")
                else:
                    self._json(404, {"error": {"message": f"unknown path {path}", "type": "not_found"}})

            def _model_call(self, body: dict[str, Any], provider: Literal["anthropic", "openai"]) -> None:
                with server._lock:
                    server.arrivals.append(time.monotonic())
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer_model_call(body, provider)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer_model_call(
                self, body: dict[str, Any], provider: Literal["anthropic", "openai"]
            ) -> None:
                behaviour = server._next_behaviour()
                if behaviour.kind == "status":
                    headers = {}
                    if behaviour.retry_after_ms is not None:
                        headers["retry-after-ms"] = str(behaviour.retry_after_ms)
                    if behaviour.retry_after is not None:
                        headers["retry-after"] = behaviour.retry_after
                    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(
                        behaviour.status, "api_error"
                    )
                    message = f"scripted {behaviour.status}"
                    if behaviour.text is not None:
                        # "{key}" stands for the caller's API key, as some servers echo it back
                        sent = self.headers.get("x-api-key") or self.headers.get("authorization") or ""
                        message = behaviour.text.replace("{key}", sent.removeprefix("Bearer "))
                    payload: dict[str, Any] = (
                        {"type": "error", "error": {"type": kind, "message": message}}
                        if provider == "anthropic"
                        else {"error": {"message": message, "type": kind, "code": None}}
                    )
                    self._json(behaviour.status, payload, headers)
                    return
                if behaviour.kind == "slow" and server._stopping.wait(behaviour.delay):
                    return
                if provider == "anthropic":
                    reply = server.anthropic_message(body, behaviour)
                else:
                    reply = server.openai_completion(body, behaviour)
                if server.latency and server._stopping.wait(server.latency):
                    return
                if provider == "anthropic" and body.get("stream") is True:
                    data = "".join(
                        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in message_events(reply)
                    )
                    self._send(200, data.encode(), "text/event-stream")
                else:
                    self._json(200, reply)
                server._publish_prompt_cache()

            def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json", headers)

            def _send(
                self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", ctype)
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", f"req_{next(server._ids):06d}")
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

        return Handler

    def _record(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(handler.command, handler.path, headers, body))


STRUCTURED_OUTPUT_TOOL = "StructuredOutput"


def structured_output_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    """The tool Claude Code declares for ``--json-schema`` (its reply schema is the tool's input schema)."""
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == STRUCTURED_OUTPUT_TOOL:
            return tool
    return None


def answered_tool(body: dict[str, Any], name: str) -> bool:
    """True when the last user message carries the result of a call to tool ``name``."""
    messages = body.get("messages") or []
    called = {
        block.get("id")
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == name
    }
    last = messages[-1] if messages else {}
    content = last.get("content") if last.get("role") == "user" else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in called
        for b in content
    )


def message_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages API reply as the server-sent events of ``"stream": true``."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            delta = {"type": "text_delta", "text": block["text"]}
        events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _verdict_list(reply: dict[str, Any]) -> list[dict[str, Any]]:
    for value in reply.values():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            return value
    return []


def _file_object(file_id: str, size: int) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(datetime.now(UTC).timestamp()),
        "filename": "batch.jsonl",
        "purpose": "batch",
        "status": "processed",
    }


def multipart_file(raw: bytes, content_type: str) -> bytes:
    """The ``file`` part of a multipart/form-data body (the SDK's file upload)."""
    boundary = content_type.partition("boundary=")[2].strip('"').encode()
    for part in raw.split(b"--" + boundary):
        head, _, content = part.partition(b"\r\n\r\n")
        if b'name="file"' in head:
            return content.removesuffix(b"\r\n")
    return b""


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


@contextmanager
def provider_server() -> Iterator[FakeProviderServer]:
    """A started FakeProviderServer, stopped on the way out."""
    server = FakeProviderServer().start()
    try:
        yield server
    finally:
        server.stop()


def provider_environment(provider: FakeProviderServer) -> dict[str, str]:
    """The variables that send both providers' SDKs to the fake server (which stands in for both), with
    test keys."""
    return {
        "ANTHROPIC_BASE_URL": provider.anthropic_base_url,
        "ANTHROPIC_API_KEY": "test-anthropic-key",
        "OPENAI_BASE_URL": provider.openai_base_url,
        "OPENAI_API_KEY": "test-openai-key",
    }


def point_sdks_at(provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both providers' SDKs sent to the fake server for the test (:func:`provider_environment`)."""
    for name, value in provider_environment(provider).items():
        monkeypatch.setenv(name, value)


@pytest.fixture(name="fake_server")
def fake_server_fixture() -> Iterator[FakeProviderServer]:
    with provider_server() as server:
        yield server


__all__ = [
    "Behaviour",
    "FakeProviderServer",
    "ParsedPrompt",
    "RecordedRequest",
    "bad_location",
    "default_reply",
    "diff_lines",
    "error",
    "expired",
    "extra_id",
    "fake_server_fixture",
    "malformed",
    "message_events",
    "missing_id",
    "point_sdks_at",
    "provider_environment",
    "provider_server",
    "refusal",
    "slow",
    "storm",
    "text",
    "tool_use",
    "truncated",
    "valid",
]
