"""The ``anthropic:<model>`` judge backend (§4): Messages API, structured outputs, prompt caching, batches.

The request has no tools. The static part (instructions, then rubric and task) is the system prompt, with
``cache_control`` on its last block so that every diff judged against one rubric reads it from the prompt
cache; the fenced diff is the only user message, last. The reply format is the runner's JSON schema,
sent as ``output_config.format`` (structured outputs).

Retries on 429, 529, 5xx and timeouts are the SDK's own (exponential backoff honouring ``retry-after``);
once they are exhausted, or on any other API error, :class:`BackendError` is raised.
``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL`` are read by the SDK when not given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import anthropic
from anthropic.types import Message
from anthropic.types.messages import batch_create_params

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

DEFAULT_MAX_TOKENS = 8192
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}


class _HttpClient(LimitedSendClient, anthropic.DefaultAsyncHttpxClient):
    """The SDK's default client (keep-alive, proxies from the environment), limited per request."""


class AnthropicBackend(SdkBackend[anthropic.AsyncAnthropic, Message]):
    """Judge through the Anthropic Messages API.

    ``batch=True`` tells the runner to send sweeps through :meth:`complete_many` (Message Batches).
    """

    PROVIDER = "anthropic"
    # What the judge sees and how it answers is fixed by the runner; decoding may not change it.
    RESERVED_KEYS = frozenset({"model", "system", "messages", "tools", "tool_choice", "stream"})
    # The body keys passed to ``messages.create`` by name; every other key (decoding) goes through
    # ``extra_body``, which the SDK merges into the JSON body as-is: this SDK no longer names ``temperature``.
    NAMED_KEYS = ("model", "max_tokens", "system", "messages", "output_config")
    SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    SDK_ERROR = anthropic.AnthropicError
    TIMEOUT_ERROR = anthropic.APITimeoutError
    STATUS_ERROR = anthropic.APIStatusError
    CONNECTION_ERROR = anthropic.APIConnectionError

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        """The exact JSON body sent to ``POST /v1/messages`` for this request."""
        static: list[dict[str, Any]] = [
            {"type": "text", "text": t} for t in (request.instructions, request.rubric_text) if t
        ]
        if static:
            static[-1]["cache_control"] = dict(CACHE_CONTROL)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": DEFAULT_MAX_TOKENS,
            "system": static,
            "messages": [{"role": "user", "content": [{"type": "text", "text": request.diff_block}]}],
            "output_config": {"format": {"type": "json_schema", "schema": request.output_schema}},
        }
        for key, value in self.decoding.items():
            if key == "output_config" and isinstance(value, dict):
                # e.g. {"effort": "low"}: merged so that it cannot drop the reply schema
                body["output_config"] = {**value, "format": body["output_config"]["format"]}
            else:
                body[key] = value
        return body

    async def _create(
        self, client: anthropic.AsyncAnthropic, named: dict[str, Any], extra: dict[str, Any] | None
    ) -> Message:
        message: Message = await client.messages.create(**named, extra_body=extra)
        return message

    def _reply(self, reply: Message) -> BackendReply:
        return reply_from_message(reply)

    def render_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> dict[str, Any]:
        """The body of one turn of a tool conversation (the tree judge): the request's body with the tools,
        and every earlier turn as an assistant ``tool_use`` message and a user ``tool_result`` message."""
        body = self.render(request)
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
        ]
        messages: list[dict[str, Any]] = list(body["messages"])
        for turn in turns:
            content: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name,
                 "input": c.arguments if isinstance(c.arguments, dict) else {}}
                for c in turn.calls
            ]  # fmt: skip
            messages.append({"role": "assistant", "content": content})
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": a.call_id,
                            "content": a.content,
                            "is_error": a.is_error,
                        }
                        for a in turn.answers
                    ],  # fmt: skip
                }
            )
        body["messages"] = messages
        return body

    async def complete_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> TurnReply:
        """Send one turn of a tool conversation; raise :class:`BackendError` when it fails."""
        message = await self._send(self.render_tools(request, tools, turns))
        reply = reply_from_message(message)
        calls = [
            ToolCall(id=block.id, name=block.name,
                     arguments=block.input if isinstance(block.input, dict) else str(block.input))
            for block in message.content
            if block.type == "tool_use"
        ]  # fmt: skip
        return TurnReply(
            text=reply.text,
            calls=calls,
            model_id=reply.model_id,
            stop_reason=reply.stop_reason,
            refused=reply.refused,
            usage=reply.usage,
        )

    async def _run_batch(
        self, client: anthropic.AsyncAnthropic, requests: Sequence[JudgeRequest], custom_ids: list[str]
    ) -> list[BackendReply | BackendError]:
        """The requests as one Message Batch, polled until it ends, its results read back per request."""
        entries = [
            cast(batch_create_params.Request, {"custom_id": cid, "params": self.render(r)})
            for cid, r in zip(custom_ids, requests, strict=True)
        ]
        batches = client.messages.batches
        batch = await batches.create(requests=entries)
        batch = await self._wait_for_batch(
            batch, batch.id, lambda b: b.processing_status == "ended", batches.retrieve, batches.cancel,
            "message batch",
        )  # fmt: skip
        results: dict[str, Any] = {}
        async for entry in await batches.results(batch.id):
            results[entry.custom_id] = entry.result
        out: list[BackendReply | BackendError] = []
        for cid in custom_ids:
            result = results.get(cid)
            if result is None:
                out.append(BackendError(f"anthropic: message batch {batch.id} has no result for {cid}"))
            elif result.type == "succeeded":
                out.append(reply_from_message(result.message))
            elif result.type == "errored":
                detail = result.error.error
                out.append(
                    BackendError(
                        self._redact(
                            f"anthropic: batch request {cid} errored: {detail.type}: {detail.message}"
                        )
                    )
                )
            else:
                out.append(BackendError(f"anthropic: batch request {cid} {result.type}"))
        return out

    def _make_client(self, kwargs: dict[str, Any]) -> anthropic.AsyncAnthropic:
        # A client of our own, sharing one SSL context: building the default one loads the CA bundle
        # again, which took about 0.1 s per call here.
        client = anthropic.AsyncAnthropic(**kwargs, http_client=_HttpClient(verify=shared_ssl_context()))
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            # The SDK would raise a bare TypeError at the first call; name the fix instead.
            raise BackendError("anthropic: no credentials: set ANTHROPIC_API_KEY (or pass api_key)")
        return client

    def _describe_error(self, err: Exception) -> str:
        if isinstance(err, anthropic.CredentialsError):
            return f"anthropic: no usable credentials: set ANTHROPIC_API_KEY (or pass api_key): {err}"
        return super()._describe_error(err)


def reply_from_message(message: Message) -> BackendReply:
    """Map a Messages API reply: text blocks joined, refusal flagged, usage in the runner's terms."""
    refused = message.stop_reason == "refusal"
    text = "".join(block.text for block in message.content if block.type == "text")
    usage = message.usage
    return BackendReply(
        text=None if refused or not text else text,
        model_id=message.model,
        stop_reason=message.stop_reason,
        refused=refused,
        usage=Usage(
            input_tokens=usage.input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            output_tokens=usage.output_tokens,
        ),
    )
