"""Judge specs: ``anthropic:<full-model-id>``, ``openai:<full-model-id>``, ``scripted:<file>``.

Judges are named by full model id, never by alias (§4: on Bedrock the ``sonnet`` alias hung with no error,
and an alias moves to a new snapshot without notice, which would silently change cached verdicts). The rule:

1. refused: anything containing ``latest``, and the bare aliases the providers publish (:data:`ALIASES`:
   ``sonnet``, ``opus``, ``haiku``, ``claude-sonnet-4-5``, ``gpt-4o``, ``gpt-4.1``, ``o3``, ...);
2. accepted: an id with a snapshot date segment, ``YYYYMMDD`` or ``YYYY-MM-DD``
   (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``);
3. accepted: an id with a version of at least two numbers (``claude-opus-4-6``, whose undated id is the
   full id; ``Qwen/Qwen2.5-Coder-32B-Instruct`` on an OpenAI-compatible server);
4. refused: anything else, such as ``claude-sonnet-4``, ``gpt-5`` or ``my-model``: no version pins it.

Decoding parameters are per model and optional: ``parse_decoding(["temperature=0"])`` gives
``{"temperature": 0}``; with none given, none is sent (some models refuse a non-default temperature).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from grading.errors import InputError
from grading.judge.backend import Backend

Provider = Literal["anthropic", "openai", "scripted"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "scripted")

# Undated ids that providers document as aliases of a dated snapshot (they move when a new one ships).
ALIASES = frozenset({
    "sonnet", "opus", "haiku", "claude", "default", "best",
    "claude-sonnet-4", "claude-opus-4", "claude-sonnet-4-0", "claude-opus-4-0", "claude-opus-4-1",
    "claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-3-5-sonnet", "claude-3-5-haiku",
    "claude-3-7-sonnet", "claude-3-opus", "claude-3-haiku",
    "gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano",
    "gpt-4.5-preview", "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.1", "gpt-5.2", "chatgpt-4o",
    "o1", "o1-mini", "o3", "o3-mini", "o3-pro", "o4-mini",
})

_DATE = re.compile(r"(?:^|[-_@.:/v])(?:19|20)\d{2}-?(?:0[1-9]|1[0-2])-?(?:0[1-9]|[12]\d|3[01])(?:$|[-_@.:])")
_TWO_NUMBER_VERSION = re.compile(r"\d+[-.]\d+")


def model_id_error(model: str) -> str | None:
    """Why ``model`` is not a full model id, or None when it is."""
    if not model.strip():
        return "no model id given"
    if model != model.strip() or any(c.isspace() for c in model):
        return f"model id {model!r} contains whitespace"
    lowered = model.lower()
    if "latest" in lowered:
        return f"{model!r} is an alias that moves to new snapshots; give the full, dated model id"
    bare = lowered.rsplit("/", 1)[-1]
    if lowered in ALIASES or bare in ALIASES:
        return (f"{model!r} is an alias, not a full model id; give the dated snapshot id "
                "(for example claude-sonnet-4-5-20250929 or gpt-4o-2024-08-06)")
    if _DATE.search(lowered) or _TWO_NUMBER_VERSION.search(lowered):
        return None
    return (f"{model!r} names no snapshot date or version, so it may be an alias; give the full model id "
            "(for example claude-sonnet-4-5-20250929 or gpt-4o-2024-08-06)")


def parse_judge_spec(spec: str) -> tuple[Provider, str]:
    """Split ``provider:model`` (``scripted:<file>``); InputError for an unknown provider or an alias."""
    provider, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise InputError(None, f"judge spec {spec!r}: expected PROVIDER:MODEL with PROVIDER one of "
                         + ", ".join(PROVIDERS), "--judge")
    if provider not in PROVIDERS:
        raise InputError(None, f"judge spec {spec!r}: unknown provider {provider!r}; use one of "
                         + ", ".join(PROVIDERS), "--judge")
    if provider == "scripted":
        return "scripted", rest
    problem = model_id_error(rest)
    if problem:
        raise InputError(None, f"judge spec {spec!r}: {problem}", "--judge")
    return provider, rest


def parse_decoding(pairs: list[str] | None) -> dict[str, Any]:
    """``["temperature=0", "top_p=0.9"]`` -> ``{"temperature": 0, "top_p": 0.9}``; values are read as JSON
    when they parse (numbers, booleans, null), else kept as text."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(None, f"decoding parameter {pair!r}: expected NAME=VALUE", "--decoding")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[name] = value
    return out


def make_backend(spec: str, *, decoding: dict[str, Any] | None = None, base_url: str | None = None,
                 api_key: str | None = None, max_retries: int = 4, timeout: float = 120.0,
                 batch: bool = False) -> Backend:
    """The backend a spec names. Provider SDK modules are imported only when used."""
    provider, model = parse_judge_spec(spec)
    if provider == "scripted":
        from grading.judge.scripted import ScriptedBackend

        return ScriptedBackend(Path(model))
    if provider == "anthropic":
        from grading.judge.anthropic_backend import AnthropicBackend

        return AnthropicBackend(model, decoding=decoding, base_url=base_url, api_key=api_key,
                                max_retries=max_retries, timeout=timeout, batch=batch)
    from grading.judge.openai_backend import OpenAIBackend

    if batch:
        raise InputError(None, "batch mode is available for anthropic judges only", "--batch")
    return OpenAIBackend(model, decoding=decoding, base_url=base_url, api_key=api_key,
                         max_retries=max_retries, timeout=timeout)
