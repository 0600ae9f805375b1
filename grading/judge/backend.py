"""What every judge backend (anthropic, openai-compatible, scripted) implements. CONTRACT.

The runner renders a :class:`JudgeRequest` once; a backend turns it into its provider's exact request
body (``render``, used by ``--render-only`` and for the cache key) and sends it (``complete``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, JsonValue

from grading.judge.models import Usage

# Per-model decoding parameters: a name to a JSON value (``temperature`` -> 0). Part of the cache key.
Decoding = dict[str, JsonValue]


class JudgeRequest(BaseModel):
    instructions: str  # static: how to judge, the fence rule (cacheable)
    rubric_text: str  # static: task prompt, intent, items, alt_valid_solution (cacheable)
    diff_block: str  # the fenced diff, last; contains the nonce
    nonce: str
    item_ids: list[str]
    output_schema: dict[str, Any]  # JSON schema of the reply
    diff_text: str  # the diff as the judge reads it (binary patches summarized), for the scripted judge
    ignored_note: str = ""  # the self-ignoring directories the run created, shown after the diff (§3)
    git_dir_note: str = ""  # the paths under .git the run changed, shown after the diff (§3)
    special_files_note: str = ""  # the FIFOs, sockets and devices left in the work tree, after the diff (§3)


class BackendReply(BaseModel):
    text: str | None  # the raw JSON text of the reply; None when refused or empty
    model_id: str  # the model id the API reported back
    stop_reason: str | None = None
    refused: bool = False
    usage: Usage = Usage()


class Backend(Protocol):
    spec: str
    model: str
    scripted: bool
    decoding: Decoding  # per-model decoding parameters, part of the cache key

    def render(self, request: JudgeRequest) -> dict[str, Any]: ...

    async def complete(self, request: JudgeRequest) -> BackendReply: ...


class BatchBackend(Backend, Protocol):
    """A backend that can also send many requests at once (Anthropic Message Batches). When its ``batch``
    attribute is true, ``judge_sweep`` collects concurrent calls and sends them through ``complete_many``."""

    batch: bool

    async def complete_many(self, requests: Sequence[JudgeRequest]) -> list[BackendReply | BackendError]: ...


# --- tool use (the tree judge, §9) ---------------------------------------------------------------------


class ToolSpec(BaseModel):
    """A tool offered to the judge: name, what it does, and the JSON schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] | str  # text when the model's arguments were not a JSON object


class ToolAnswer(BaseModel):
    call_id: str
    content: str
    is_error: bool = False


class ToolExchange(BaseModel):
    """One earlier turn of a tool conversation: what the model asked for, and what it was answered."""

    text: str | None = None  # any text the model wrote beside its calls
    calls: list[ToolCall]
    answers: list[ToolAnswer]


class TurnReply(BaseModel):
    """A reply in a tool conversation: tool calls to answer, or the final text."""

    text: str | None
    calls: list[ToolCall] = []
    model_id: str
    stop_reason: str | None = None
    refused: bool = False
    usage: Usage = Usage()

    def final(self) -> BackendReply:
        return BackendReply(
            text=self.text,
            model_id=self.model_id,
            stop_reason=self.stop_reason,
            refused=self.refused,
            usage=self.usage,
        )


class ToolBackend(Backend, Protocol):
    """A backend that can hold a tool conversation (anthropic, openai). The whole conversation so far is
    sent every turn: the request (instructions, rubric, fenced diff), the tools and the earlier turns."""

    def render_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> dict[str, Any]: ...

    async def complete_tools(
        self, request: JudgeRequest, tools: Sequence[ToolSpec], turns: Sequence[ToolExchange]
    ) -> TurnReply: ...


class BackendError(Exception):
    """A call that failed after the SDK's own retries (network, 4xx other than 429, exhausted 429/5xx)."""


def redact_secrets(text: str, *secrets: str | None, env: tuple[str, ...] = ()) -> str:
    """``text`` with every secret (and the value of every ``env`` variable) replaced by ``***``.

    Error messages end up in metrics.json and on the terminal, and some servers echo the caller's key.
    """
    values = [*secrets, *(os.environ.get(name) for name in env)]
    for value in sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True):
        text = text.replace(value, "***")
    return text
