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

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import anthropic
from anthropic.types import Message
from anthropic.types.messages import batch_create_params

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

DEFAULT_MAX_TOKENS = 8192
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}

# What the judge sees and how it answers is fixed by the runner; decoding may not change it.
RESERVED_KEYS = frozenset({"model", "system", "messages", "tools", "tool_choice", "stream"})

# The body keys passed to ``messages.create`` by name; every other key (decoding) goes through
# ``extra_body``, which the SDK merges into the JSON body as-is: this SDK no longer names ``temperature``.
_NAMED_KEYS = ("model", "max_tokens", "system", "messages", "output_config")


class _HttpClient(LimitedSendClient, anthropic.DefaultAsyncHttpxClient):
    """The SDK's default client (keep-alive, proxies from the environment), limited per request."""


class AnthropicBackend:
    """Judge through the Anthropic Messages API.

    ``batch=True`` tells the runner to send sweeps through :meth:`complete_many` (Message Batches).
    """

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
        self.spec = f"anthropic:{model}"
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

    async def complete(self, request: JudgeRequest) -> BackendReply:
        """Send one request; raise :class:`BackendError` when it fails after the SDK's retries."""
        return reply_from_message(await self._send(self.render(request)))

    async def _send(self, body: dict[str, Any]) -> Message:
        named = {k: body[k] for k in (*_NAMED_KEYS, "tools") if k in body}
        extra = {k: v for k, v in body.items() if k not in named}
        try:
            # The client is built inside the try: the SDK reports missing credentials as an error of its own.
            async with self._client() as client:
                message: Message = await client.messages.create(**named, extra_body=extra or None)
                return message
        except anthropic.AnthropicError as err:
            raise BackendError(self._describe(err)) from err

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

    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]:
        """Send many requests as one Message Batch; one reply or error per request, in request order.

        Never raises: when the batch itself fails (creation, polling, deadline), every entry is that error.
        """
        if not requests:
            return []
        custom_ids = [f"judge-{i}" for i in range(len(requests))]
        entries = [
            cast(batch_create_params.Request, {"custom_id": cid, "params": self.render(r)})
            for cid, r in zip(custom_ids, requests, strict=True)
        ]
        results: dict[str, Any] = {}
        try:
            async with self._client() as client:
                batch = await client.messages.batches.create(requests=entries)
                loop = asyncio.get_running_loop()
                deadline = loop.time() + self.batch_deadline
                while batch.processing_status != "ended":
                    if loop.time() >= deadline:
                        await client.messages.batches.cancel(batch.id)
                        raise BackendError(
                            f"anthropic: message batch {batch.id} did not end within {self.batch_deadline:g}s"
                        )
                    await asyncio.sleep(self.batch_poll_interval)
                    batch = await client.messages.batches.retrieve(batch.id)
                async for entry in await client.messages.batches.results(batch.id):
                    results[entry.custom_id] = entry.result
        except BackendError as err:
            return [err for _ in requests]
        except anthropic.AnthropicError as err:
            failure = BackendError(self._describe(err))
            failure.__cause__ = err
            return [failure for _ in requests]
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

    def _client(self) -> anthropic.AsyncAnthropic:
        # One client per call: the runner may drive calls from more than one event loop, and a client
        # closed with its call never leaves a socket behind.
        kwargs: dict[str, Any] = {"max_retries": self.max_retries, "timeout": self.timeout}
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        # A client of our own, sharing one SSL context: building the default one loads the CA bundle
        # again, which took about 0.1 s per call here.
        kwargs["http_client"] = _HttpClient(verify=shared_ssl_context())
        client = anthropic.AsyncAnthropic(**kwargs)
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            # The SDK would raise a bare TypeError at the first call; name the fix instead.
            raise BackendError("anthropic: no credentials: set ANTHROPIC_API_KEY (or pass api_key)")
        return client

    def _describe(self, err: anthropic.AnthropicError) -> str:
        return self._redact(self._describe_error(err))

    def _redact(self, text: str) -> str:
        return redact_secrets(text, self.api_key, env=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"))

    def _describe_error(self, err: anthropic.AnthropicError) -> str:
        if isinstance(err, anthropic.CredentialsError):
            return f"anthropic: no usable credentials: set ANTHROPIC_API_KEY (or pass api_key): {err}"
        return describe_sdk_error(
            "anthropic",
            err,
            max_retries=self.max_retries,
            timeout=self.timeout,
            timeout_error=anthropic.APITimeoutError,
            status_error=anthropic.APIStatusError,
            connection_error=anthropic.APIConnectionError,
        )


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
