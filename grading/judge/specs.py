"""Judge specs: ``anthropic:<full-model-id>``, ``openai:<full-model-id>``, ``claude-code:<full-model-id>``
(the Claude Code CLI, a Claude model: family anthropic), ``scripted:<file>``.

Judges are named by full model id, never by alias (§4: on Bedrock the ``sonnet`` alias hung with no error,
and an alias moves to a new snapshot without notice, which would silently change cached verdicts). The rule:

1. refused: anything containing ``latest``, and the bare aliases the providers publish (:data:`ALIASES`:
   ``sonnet``, ``opus``, ``haiku``, ``claude-sonnet-4-5``, ``gpt-4o``, ``gpt-4.1``, ``o3``, ...);
2. accepted: an id with a snapshot date segment, ``YYYYMMDD`` or ``YYYY-MM-DD``
   (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``);
3. accepted: an id with a version of at least two numbers (``claude-opus-4-6``, whose undated id is the
   full id; ``Qwen/Qwen2.5-Coder-32B-Instruct`` on an OpenAI-compatible server);
4. refused: anything else, such as ``claude-sonnet-4``, ``gpt-5`` or ``my-model``: no version pins it.

Two judges must come from different model families (§4, §9: a judge prefers its own family's work), so
``--second-judge`` of the primary's family is refused unless asked for (:func:`second_judge_problem`);
:func:`judge_family` names the family of a spec from its model id.

A spec is read into a :class:`JudgeSpec` (provider and model, validated once); its text form
``str(spec)`` is what results and the judge cache record.

Decoding parameters are per model and optional: ``parse_decoding(["temperature=0"])`` gives the
:data:`Decoding` ``{"temperature": 0}`` (names to JSON values); with none given, none is sent (some models
refuse a non-default temperature).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from grading.errors import InputError
from grading.judge.backend import Backend, Decoding
from grading.strict_json import JsonProblem, strict_json_loads

if TYPE_CHECKING:
    from grading.judge.sdk_common import SdkBackend

Provider = Literal["anthropic", "openai", "claude-code", "scripted"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "claude-code", "scripted")

# Undated ids that providers document as aliases of a dated snapshot (they move when a new one ships).
ALIASES = frozenset(
    {
        "sonnet",
        "opus",
        "haiku",
        "claude",
        "default",
        "best",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-sonnet-4-0",
        "claude-opus-4-0",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
        "claude-opus-4-5",
        "claude-haiku-4-5",
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "claude-3-7-sonnet",
        "claude-3-opus",
        "claude-3-haiku",
        "gpt-4",
        "gpt-4-turbo",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "gpt-4.5-preview",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "gpt-5.1",
        "gpt-5.2",
        "chatgpt-4o",
        "o1",
        "o1-mini",
        "o3",
        "o3-mini",
        "o3-pro",
        "o4-mini",
    }
)

_DATE = re.compile(r"(?:^|[-_@.:/v])(?:19|20)\d{2}-?(?:0[1-9]|1[0-2])-?(?:0[1-9]|[12]\d|3[01])(?:$|[-_@.:])")
_TWO_NUMBER_VERSION = re.compile(r"\d+[-.]\d+")


def model_id_error(model: str) -> str | None:
    """Why ``model`` is not a full model id, or None when it is."""
    if not model.strip():
        return "no model id given"
    if not model.isascii() or not model.isprintable():
        # Non-UTF-8 bytes on the command line come in as surrogate escapes: no provider has such an id.
        return f"model id {model!r} holds characters outside printable ASCII"
    if model != model.strip() or any(c.isspace() for c in model):
        return f"model id {model!r} contains whitespace"
    lowered = model.lower()
    if "latest" in lowered:
        return f"{model!r} is an alias that moves to new snapshots; give the full, dated model id"
    bare = lowered.rsplit("/", 1)[-1]
    if lowered in ALIASES or bare in ALIASES:
        return (
            f"{model!r} is an alias, not a full model id; give the dated snapshot id "
            "(for example claude-sonnet-4-5-20250929 or gpt-4o-2024-08-06)"
        )
    if _DATE.search(lowered) or _TWO_NUMBER_VERSION.search(lowered):
        return None
    return (
        f"{model!r} names no snapshot date or version, so it may be an alias; give the full model id "
        "(for example claude-sonnet-4-5-20250929 or gpt-4o-2024-08-06)"
    )


class JudgeSpec(BaseModel):
    """A judge: its provider and full model id (for ``scripted``, the script file). Build it with
    :meth:`parse`, which applies the module's rules; ``str()`` gives back ``provider:model``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    model: str

    @classmethod
    def parse(cls, spec: str | JudgeSpec, *, what: str = "judge spec", option: str = "--judge") -> JudgeSpec:
        """``provider:model`` read and checked; InputError for an unknown provider or an alias. ``what``
        names the spec in the message and ``option`` where it came from (the drafter's spec is read the same
        way, and its errors must not call it a judge)."""
        if isinstance(spec, JudgeSpec):
            return spec
        provider, sep, rest = spec.partition(":")
        if not sep or not rest:
            raise InputError(
                None,
                f"{what} {spec!r}: expected PROVIDER:MODEL with PROVIDER one of " + ", ".join(PROVIDERS),
                option,
            )
        if provider not in PROVIDERS:
            raise InputError(
                None,
                f"{what} {spec!r}: unknown provider {provider!r}; use one of " + ", ".join(PROVIDERS),
                option,
            )
        if provider != "scripted" and (problem := model_id_error(rest)):
            raise InputError(None, f"{what} {spec!r}: {problem}", option)
        return cls.model_validate({"provider": provider, "model": rest})

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def family(self) -> str:
        return judge_family(str(self))


def parse_judge_spec(spec: str, *, what: str = "judge spec", option: str = "--judge") -> tuple[Provider, str]:
    """Split ``provider:model`` (``scripted:<file>``); InputError for an unknown provider or an alias, naming
    the spec ``what`` (and its ``option``)."""
    parsed = JudgeSpec.parse(spec, what=what, option=option)
    return parsed.provider, parsed.model


def parse_decoding(pairs: list[str] | None, flag: str = "--decoding") -> Decoding:
    """``["temperature=0", "top_p=0.9"]`` -> ``{"temperature": 0, "top_p": 0.9}``; values are read as JSON
    when they parse (numbers, booleans, null), else kept as text. JSON the framework refuses anywhere
    (NaN, Infinity, a number beyond a double, nesting too deep) is an InputError, never sent."""
    out: Decoding = {}
    for pair in pairs or []:
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(None, f"decoding parameter {_short(pair)}: expected NAME=VALUE", flag)
        try:
            value: JsonValue = strict_json_loads(raw)
        except json.JSONDecodeError:
            value = raw
        except JsonProblem as exc:
            raise InputError(None, f"decoding parameter {name}: {exc}", flag) from None
        if raw.strip() in ("NaN", "Infinity", "-Infinity", "inf", "-inf", "nan"):
            raise InputError(None, f"decoding parameter {name}: {raw.strip()} is not a finite number", flag)
        out[name] = value
    return out


def _short(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def make_backend(
    spec: str | JudgeSpec,
    *,
    decoding: Decoding | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_retries: int = 4,
    timeout: float = 120.0,
    batch: bool = False,
) -> Backend:
    """The backend a spec names. Provider SDK modules are imported only when used."""
    judge = JudgeSpec.parse(spec)
    provider, model = judge.provider, judge.model
    if provider == "scripted":
        from grading.judge.scripted import ScriptedBackend

        if batch:
            raise InputError(None, "batch mode is available for anthropic and openai judges only", "--batch")
        return ScriptedBackend(Path(model))
    if provider == "claude-code":
        from grading.judge.claude_code_backend import ClaudeCodeBackend

        if batch:
            raise InputError(None, "batch mode is available for anthropic and openai judges only", "--batch")
        # The CLI has its own retries and credentials (ANTHROPIC_* in the environment); ``timeout`` bounds
        # one whole CLI run, so it gets the SDK backends' time for every attempt.
        return ClaudeCodeBackend(
            model, decoding=decoding, base_url=base_url, api_key=api_key, timeout=timeout * (max_retries + 1)
        )
    # The SDKs are imported only for the provider asked for.
    sdk_backend: type[SdkBackend[Any, Any]]
    if provider == "anthropic":
        from grading.judge.anthropic_backend import AnthropicBackend

        sdk_backend = AnthropicBackend
    else:
        from grading.judge.openai_backend import OpenAIBackend

        sdk_backend = OpenAIBackend
    return sdk_backend(
        model,
        decoding=decoding,
        base_url=base_url,
        api_key=api_key,
        max_retries=max_retries,
        timeout=timeout,
        batch=batch,
    )


# --- model families (§4 "Two judges", §9 "Self-preference") ------------------------------------------------

SCRIPTED_FAMILY = "scripted"

# Model-id patterns of the families we know, searched at the start of the id or after "/", ":" or ".", so
# "meta-llama/Llama-3.3-70B" and Bedrock's "us.anthropic.claude-..." are found. An OpenAI-compatible server
# may serve any family, so the id decides, not the provider; the anthropic provider is Claude.
_FAMILY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (family, re.compile(r"(?:^|[/:.])(?:" + pattern + ")"))
    for family, pattern in (
        ("anthropic", r"claude|anthropic"),
        ("openai", r"gpt|chatgpt|o\d|text-davinci|davinci|codex|openai"),
        ("google", r"gemini|gemma|palm|google"),
        ("meta", r"llama|meta-llama|codellama|meta"),
        ("mistral", r"mistral|mixtral|codestral|devstral|magistral|ministral|pixtral|mistralai"),
        ("qwen", r"qwen|qwq"),
        ("deepseek", r"deepseek"),
        ("xai", r"grok|xai"),
        ("microsoft", r"phi|microsoft"),
        ("zhipu", r"glm|chatglm|thudm|zai"),
        ("moonshot", r"kimi|moonshot"),
        ("cohere", r"command|cohere"),
    )
)


def model_family(model: str) -> str | None:
    """The family a model id names (``claude-opus-4-6`` -> anthropic, ``us.anthropic.claude-...`` ->
    anthropic, ``o3-2025-04-16`` -> openai, ``Qwen/Qwen2.5-Coder`` -> qwen), or None when it names none we
    know. One table for the second-judge rule and the report's self-preference check (§9)."""
    lowered = model.strip().lower()
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.search(lowered):
            return family
    return None


def judge_family(spec: str) -> str:
    """The model family of a judge spec: ``"scripted"`` for scripted judges; for the others the family its
    model id names (``anthropic``, ``openai``, ``google``, ``meta``, ``mistral``, ``qwen``, ``deepseek``,
    ...), whatever server speaks for it; an id of no known family is its own family, named by the id's
    organisation (``org/model``) or its leading word. The spec is not validated here."""
    provider, _, model = spec.partition(":")
    if provider == SCRIPTED_FAMILY:
        return SCRIPTED_FAMILY
    lowered = model.strip().lower()
    family = model_family(lowered)
    if family is not None:
        return family
    if provider in ("anthropic", "claude-code"):
        return "anthropic"
    org, _, name = lowered.rpartition("/")
    if org:
        return org.rsplit("/", 1)[-1]
    word = re.match(r"[a-z]+", name)
    return word.group(0) if word else lowered or provider


def second_judge_problem(primary: str, second: str, *, allow_same_family: bool = False) -> str | None:
    """Why ``second`` may not be the second judge beside ``primary``, or None when it may.

    The second judge's agreement (κ) is only informative from another model family, so one of the same
    family is refused unless ``allow_same_family``. Scripted judges are test stand-ins and exempt.
    """
    first_family, second_family = judge_family(primary), judge_family(second)
    if allow_same_family or SCRIPTED_FAMILY in (first_family, second_family):
        return None
    if first_family == second_family:
        return (
            f"the second judge {second!r} is of the same model family ({first_family}) as the primary "
            f"judge {primary!r}; agreement between them says little (§4: a second judge of another "
            "family); pass --allow-same-family to grade with it anyway"
        )
    return None


def check_second_judge(primary: str, second: str, *, allow_same_family: bool = False) -> None:
    """:func:`second_judge_problem` as an InputError (the CLI's exit 2)."""
    problem = second_judge_problem(primary, second, allow_same_family=allow_same_family)
    if problem is not None:
        raise InputError(None, problem, "--second-judge")
