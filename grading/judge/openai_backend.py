"""The ``openai:<model>`` judge backend (§4): chat completions with a strict JSON-schema response format.

Meant for the second judge, from another model family, on any OpenAI-compatible server
(``OPENAI_BASE_URL``, read by the SDK when ``base_url`` is not given; ``OPENAI_API_KEY`` likewise).
The request has no tools: the system message is the static part (instructions, rubric and task), which
providers that cache prompt prefixes reuse across diffs; the fenced diff is the user message, last.
Retries on 429, 5xx and timeouts are the SDK's own; once exhausted, :class:`BackendError` is raised.

``batch=True`` sends a sweep's requests through the Batch API (:meth:`OpenAIBackend.complete_many`): the
same bodies as lines of an uploaded JSONL file, one batch for ``/v1/chat/completions``, polled until it
ends; the output and error files are read back per request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletion

from grading.judge.backend import (
    BackendError,
    BackendReply,
    JudgeRequest,
    ToolCall,
    ToolExchange,
    ToolSpec,
    TurnReply,
)
from grading.judge.limits import LimitedSendClient
from grading.judge.models import Usage
from grading.judge.sdk_common import SdkBackend, shared_ssl_context

SCHEMA_NAME = "judge_verdicts"
BATCH_ENDPOINT: Final = "/v1/chat/completions"
# A batch's output or error file is read whole: bounded (the API's own input limit is 200 MB).
MAX_BATCH_FILE_BYTES = 256 * 1024 * 1024
_BATCH_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})


class _HttpClient(LimitedSendClient, openai.DefaultAsyncHttpxClient):
    """The SDK's default client (keep-alive, proxies from the environment), limited per request."""


class OpenAIBackend(SdkBackend[openai.AsyncOpenAI, ChatCompletion]):
    """Judge through an OpenAI-compatible chat completions endpoint."""

    PROVIDER = "openai"
    RESERVED_KEYS = frozenset(
        {"model", "messages", "response_format", "tools", "tool_choice", "functions", "function_call",
         "stream", "n"}
    )  # fmt: skip
    # Passed to ``chat.completions.create`` by name; decoding keys go through ``extra_body`` unchanged, so
    # that a parameter an OpenAI-compatible server knows and this SDK does not still reaches it.
    NAMED_KEYS = ("model", "messages", "response_format")
    SECRET_ENV = ("OPENAI_API_KEY",)
    SDK_ERROR = openai.OpenAIError
    TIMEOUT_ERROR = openai.APITimeoutError
    STATUS_ERROR = openai.APIStatusError
    CONNECTION_ERROR = openai.APIConnectionError

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        """The exact JSON body sent to ``POST {base_url}/chat/completions`` for this request."""
        system = "\n\n".join(t for t in (request.instructions, request.rubric_text) if t)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": request.diff_block},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": request.output_schema, "strict": True},
            },
        }
        body.update(self.decoding)
        return body

    async def _create(
        self, client: openai.AsyncOpenAI, named: dict[str, Any], extra: dict[str, Any] | None
    ) -> ChatCompletion:
        completion: ChatCompletion = await client.chat.completions.create(**named, extra_body=extra)
        return completion

    def _reply(self, reply: ChatCompletion) -> BackendReply:
        return reply_from_completion(reply)

    def render_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> dict[str, Any]:
        """The body of one turn of a tool conversation (the tree judge): the request's body with the tools
        as strict functions, and every earlier turn as an assistant ``tool_calls`` message followed by one
        ``tool`` message per answer (which has no error flag: the answer's text says so)."""
        body = self.render(request)
        body["tools"] = [
            {"type": "function",
             "function": {"name": t.name, "description": t.description, "parameters": t.input_schema,
                          "strict": True}}
            for t in tools
        ]  # fmt: skip
        messages: list[dict[str, Any]] = list(body["messages"])
        for turn in turns:
            messages.append(
                {
                    "role": "assistant",
                    "content": turn.text,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.arguments
                                if isinstance(c.arguments, str)
                                else json.dumps(c.arguments),
                            },
                        }
                        for c in turn.calls
                    ],  # fmt: skip
                }
            )
            messages += [
                {"role": "tool", "tool_call_id": a.call_id, "content": a.content} for a in turn.answers
            ]
        body["messages"] = messages
        return body

    async def complete_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> TurnReply:
        """Send one turn of a tool conversation; raise :class:`BackendError` when it fails."""
        completion = await self._send(self.render_tools(request, tools, turns))
        reply = reply_from_completion(completion)
        calls: list[ToolCall] = []
        if completion.choices:
            for call in completion.choices[0].message.tool_calls or []:
                function = getattr(call, "function", None)
                if function is None:
                    continue  # a custom (non-function) tool call: none is offered
                try:
                    arguments: dict[str, Any] | str = json.loads(function.arguments)
                except ValueError:
                    arguments = function.arguments
                if not isinstance(arguments, dict):
                    arguments = function.arguments
                calls.append(ToolCall(id=call.id, name=function.name, arguments=arguments))
        return TurnReply(
            text=reply.text if not calls else None,
            calls=calls,
            model_id=reply.model_id,
            stop_reason=reply.stop_reason,
            refused=reply.refused,
            usage=reply.usage,
        )

    async def _run_batch(
        self, client: openai.AsyncOpenAI, requests: Sequence[JudgeRequest], custom_ids: list[str]
    ) -> list[BackendReply | BackendError]:
        """The requests as one Batch (a JSONL file of the rendered bodies), polled until it ends; the output
        and error files are read back per request. A request the batch did not answer (expired, failed,
        errored) is that request's error."""
        lines = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": BATCH_ENDPOINT, "body": self.render(r)})
            + "\n"
            for cid, r in zip(custom_ids, requests, strict=True)
        )
        answered: dict[str, BackendReply | BackendError] = {}
        upload = await client.files.create(
            file=("judge-batch.jsonl", lines.encode(), "application/jsonl"), purpose="batch"
        )
        batches = client.batches
        batch = await batches.create(
            input_file_id=upload.id, endpoint=BATCH_ENDPOINT, completion_window="24h"
        )
        batch = await self._wait_for_batch(
            batch, batch.id, lambda b: b.status in _BATCH_ENDED, batches.retrieve, batches.cancel, "batch"
        )
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await client.files.content(file_id)
                data = content.content
                if len(data) > MAX_BATCH_FILE_BYTES:
                    raise BackendError(f"openai: batch file {file_id} is over {MAX_BATCH_FILE_BYTES} bytes")
                for line in data.decode("utf-8", errors="replace").splitlines():
                    if line.strip():
                        cid, outcome = self._batch_line(line)
                        if cid is not None:
                            answered[cid] = outcome
        missing = f"openai: batch {batch.id} ended {batch.status} without an answer for"
        return [answered.get(cid) or BackendError(f"{missing} {cid}") for cid in custom_ids]

    def _batch_line(self, line: str) -> tuple[str | None, BackendReply | BackendError]:
        """One line of a batch's output or error file: its custom id and the reply or the error."""
        try:
            entry = json.loads(line)
            cid = entry.get("custom_id")
            response = entry.get("response") or {}
            error = entry.get("error")
            if not isinstance(cid, str):
                return None, BackendError("openai: a batch result line has no custom_id")
            if error:
                return cid, BackendError(
                    self._redact(
                        f"openai: batch request {cid} failed: {error.get('code')}: {error.get('message')}"
                    )
                )
            status = response.get("status_code")
            body = response.get("body")
            if status != 200:
                detail = (body or {}).get("error") or {} if isinstance(body, dict) else {}
                return cid, BackendError(
                    self._redact(
                        f"openai: batch request {cid} answered {status}: {detail.get('message', '')}"
                    )
                )
            return cid, reply_from_completion(ChatCompletion.model_validate(body))
        except (ValueError, AttributeError, TypeError) as exc:
            return None, BackendError(f"openai: unreadable batch result line: {exc}")

    def _make_client(self, kwargs: dict[str, Any]) -> openai.AsyncOpenAI:
        # A client of our own, sharing one SSL context: building the default one loads the CA bundle
        # again, which took about 0.1 s per call here.
        return openai.AsyncOpenAI(**kwargs, http_client=_HttpClient(verify=shared_ssl_context()))


def reply_from_completion(completion: ChatCompletion) -> BackendReply:
    """Map a chat completion: refusal flagged, ``length`` as ``max_tokens``, usage in the runner's terms."""
    if not completion.choices:
        return BackendReply(text=None, model_id=completion.model, stop_reason=None, usage=_usage(completion))
    choice = completion.choices[0]
    refused = bool(choice.message.refusal)
    stop_reason: str | None = choice.finish_reason
    if stop_reason == "length":
        stop_reason = "max_tokens"  # the runner's word for a truncated reply, as Anthropic reports it
    elif refused:
        stop_reason = "refusal"
    return BackendReply(
        text=None if refused else (choice.message.content or None),
        model_id=completion.model,
        stop_reason=stop_reason,
        refused=refused,
        usage=_usage(completion),
    )


def _usage(completion: ChatCompletion) -> Usage:
    usage = completion.usage
    if usage is None:
        return Usage()
    cached = (usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else None) or 0
    # prompt_tokens counts cached tokens too; the runner's input_tokens are the uncached ones (as Anthropic's)
    return Usage(
        input_tokens=usage.prompt_tokens - cached,
        cache_read_tokens=cached,
        output_tokens=usage.completion_tokens,
    )
