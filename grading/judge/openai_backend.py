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

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletion

from grading.judge.backend import (
    BackendError,
    BackendReply,
    Decoding,
    JudgeRequest,
    ToolCall,
    ToolExchange,
    ToolSpec,
    TurnReply,
    redact_secrets,
)
from grading.judge.limits import LimitedSendClient
from grading.judge.models import Usage
from grading.judge.sdk_common import checked_decoding, describe_sdk_error, shared_ssl_context

SCHEMA_NAME = "judge_verdicts"
BATCH_ENDPOINT: Final = "/v1/chat/completions"
# A batch's output or error file is read whole: bounded (the API's own input limit is 200 MB).
MAX_BATCH_FILE_BYTES = 256 * 1024 * 1024
_BATCH_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})

RESERVED_KEYS = frozenset(
    {
        "model",
        "messages",
        "response_format",
        "tools",
        "tool_choice",
        "functions",
        "function_call",
        "stream",
        "n",
    }
)

# Passed to ``chat.completions.create`` by name; decoding keys go through ``extra_body`` unchanged, so that
# a parameter an OpenAI-compatible server knows and this SDK does not still reaches it.
_NAMED_KEYS = ("model", "messages", "response_format")


class _HttpClient(LimitedSendClient, openai.DefaultAsyncHttpxClient):
    """The SDK's default client (keep-alive, proxies from the environment), limited per request."""


class OpenAIBackend:
    """Judge through an OpenAI-compatible chat completions endpoint."""

    scripted = False
    limits_each_request = True  # its HTTP client takes the provider limit per request (retries too)

    def __init__(
        self,
        model: str,
        *,
        decoding: Decoding | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        batch: bool = False,
        batch_poll_interval: float = 30.0,
        batch_deadline: float = 24 * 3600.0,
    ) -> None:
        self.spec = f"openai:{model}"
        self.model = model
        self.decoding: Decoding = checked_decoding(decoding, RESERVED_KEYS)
        self.base_url = base_url
        self.api_key = api_key
        self.max_retries = max_retries
        self.timeout = timeout
        self.batch = batch
        self.batch_poll_interval = batch_poll_interval
        self.batch_deadline = batch_deadline

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

    async def complete(self, request: JudgeRequest) -> BackendReply:
        """Send one request; raise :class:`BackendError` when it fails after the SDK's retries."""
        return reply_from_completion(await self._send(self.render(request)))

    async def _send(self, body: dict[str, Any]) -> ChatCompletion:
        named = {k: body[k] for k in (*_NAMED_KEYS, "tools") if k in body}
        extra = {k: v for k, v in body.items() if k not in named}
        try:
            # Built per call and inside the try: a missing OPENAI_API_KEY is a failed call, not a crash,
            # and --render-only never needs a key.
            async with self._client() as client:
                completion: ChatCompletion = await client.chat.completions.create(
                    **named, extra_body=extra or None
                )
                return completion
        except openai.OpenAIError as err:
            raise BackendError(self._describe(err)) from err

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

    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]:
        """Send many requests as one Batch (a JSONL file of the rendered bodies); one reply or error per
        request, in request order. A request the batch did not answer (expired, failed, errored) is that
        request's error. Never raises: when the batch itself fails, every entry is that error."""
        if not requests:
            return []
        custom_ids = [f"judge-{i}" for i in range(len(requests))]
        lines = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": BATCH_ENDPOINT, "body": self.render(r)})
            + "\n"
            for cid, r in zip(custom_ids, requests, strict=True)
        )
        answered: dict[str, BackendReply | BackendError] = {}
        try:
            async with self._client() as client:
                upload = await client.files.create(
                    file=("judge-batch.jsonl", lines.encode(), "application/jsonl"), purpose="batch"
                )
                batch = await client.batches.create(
                    input_file_id=upload.id, endpoint=BATCH_ENDPOINT, completion_window="24h"
                )
                loop = asyncio.get_running_loop()
                deadline = loop.time() + self.batch_deadline
                while batch.status not in _BATCH_ENDED:
                    if loop.time() >= deadline:
                        await client.batches.cancel(batch.id)
                        raise BackendError(
                            f"openai: batch {batch.id} did not end within {self.batch_deadline:g}s"
                        )
                    await asyncio.sleep(self.batch_poll_interval)
                    batch = await client.batches.retrieve(batch.id)
                for file_id in (batch.output_file_id, batch.error_file_id):
                    if file_id:
                        content = await client.files.content(file_id)
                        data = content.content
                        if len(data) > MAX_BATCH_FILE_BYTES:
                            raise BackendError(
                                f"openai: batch file {file_id} is over {MAX_BATCH_FILE_BYTES} bytes"
                            )
                        for line in data.decode("utf-8", errors="replace").splitlines():
                            if line.strip():
                                cid, outcome = self._batch_line(line)
                                if cid is not None:
                                    answered[cid] = outcome
        except BackendError as err:
            return [err for _ in requests]
        except openai.OpenAIError as err:
            failure = BackendError(self._describe(err))
            failure.__cause__ = err
            return [failure for _ in requests]
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

    def _client(self) -> openai.AsyncOpenAI:
        kwargs: dict[str, Any] = {"max_retries": self.max_retries, "timeout": self.timeout}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        # A client of our own, sharing one SSL context: building the default one loads the CA bundle
        # again, which took about 0.1 s per call here.
        kwargs["http_client"] = _HttpClient(verify=shared_ssl_context())
        return openai.AsyncOpenAI(**kwargs)

    def _describe(self, err: openai.OpenAIError) -> str:
        return self._redact(self._describe_error(err))

    def _redact(self, text: str) -> str:
        return redact_secrets(text, self.api_key, env=("OPENAI_API_KEY",))

    def _describe_error(self, err: openai.OpenAIError) -> str:
        return describe_sdk_error(
            "openai",
            err,
            max_retries=self.max_retries,
            timeout=self.timeout,
            timeout_error=openai.APITimeoutError,
            status_error=openai.APIStatusError,
            connection_error=openai.APIConnectionError,
        )


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
