from __future__ import annotations

from pathlib import Path

import pytest

from grading.errors import InputError
from grading.judge.openai_backend import OpenAIBackend
from grading.judge.scripted import ScriptedBackend
from grading.judge.specs import JudgeSpec, make_backend, model_id_error, parse_decoding, parse_judge_spec


@pytest.mark.parametrize(
    "model",
    [
        "sonnet",
        "opus",
        "haiku",
        "claude-sonnet-4-5",
        "claude-opus-4-1",
        "claude-3-5-sonnet-latest",
        "claude-sonnet-4",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-5",
        "o3",
        "chatgpt-4o-latest",
        "my-model",
        "Qwen/gpt-4o",
        "",
        "claude sonnet",
    ],
)
def test_aliases_and_unversioned_ids_are_refused(model: str) -> None:
    assert model_id_error(model) is not None
    with pytest.raises(InputError) as exc:
        parse_judge_spec(f"anthropic:{model}")
    assert "--judge" in str(exc.value)


@pytest.mark.parametrize(
    "model",
    [
        "claude-sonnet-4-5-20250929",
        "claude-3-5-sonnet-20241022",
        "claude-opus-4-6",
        "gpt-4o-2024-08-06",
        "gpt-5-2025-08-07",
        "Qwen/Qwen2.5-Coder-32B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
    ],
)
def test_full_model_ids_are_accepted(model: str) -> None:
    assert model_id_error(model) is None
    assert parse_judge_spec(f"openai:{model}") == ("openai", model)


def test_the_alias_error_says_what_to_give_instead() -> None:
    with pytest.raises(InputError, match="claude-sonnet-4-5-20250929"):
        parse_judge_spec("anthropic:sonnet")
    with pytest.raises(InputError, match="moves to new snapshots"):
        parse_judge_spec("anthropic:claude-sonnet-4-5-latest")


@pytest.mark.parametrize("spec", ["sonnet", "bedrock:claude-sonnet-4-5-20250929", "anthropic:", ":x"])
def test_malformed_specs_are_refused(spec: str) -> None:
    with pytest.raises(InputError):
        parse_judge_spec(spec)


def test_decoding_parameters_are_parsed_as_json_values() -> None:
    assert parse_decoding(None) == {}
    assert parse_decoding(["temperature=0", "top_p=0.9", "seed=7", "x=true", "effort=low"]) == {
        "temperature": 0,
        "top_p": 0.9,
        "seed": 7,
        "x": True,
        "effort": "low",
    }
    for bad in ["temperature", "=0", "1x=2"]:
        with pytest.raises(InputError):
            parse_decoding([bad])


def test_make_backend_builds_each_provider(tmp_path: Path) -> None:
    script = tmp_path / "j.json"
    script.write_text('{"default": {}}')
    scripted = make_backend(f"scripted:{script}")
    assert isinstance(scripted, ScriptedBackend) and scripted.scripted and scripted.model == "scripted"

    anthropic = make_backend("anthropic:claude-sonnet-4-5-20250929", decoding={"temperature": 0}, batch=True)
    assert type(anthropic).__name__ == "AnthropicBackend"
    assert anthropic.model == "claude-sonnet-4-5-20250929" and anthropic.decoding == {"temperature": 0}
    assert anthropic.spec == "anthropic:claude-sonnet-4-5-20250929" and not anthropic.scripted

    openai = make_backend("openai:gpt-4o-2024-08-06", base_url="http://127.0.0.1:9/v1")
    assert type(openai).__name__ == "OpenAIBackend" and openai.model == "gpt-4o-2024-08-06"
    batched = make_backend("openai:gpt-4o-2024-08-06", batch=True)
    assert isinstance(openai, OpenAIBackend) and isinstance(batched, OpenAIBackend)
    assert not openai.batch and batched.batch
    with pytest.raises(InputError, match="batch mode is available for anthropic and openai"):
        make_backend("claude-code:claude-sonnet-4-5-20250929", batch=True)


def test_a_judge_spec_is_read_once_into_a_typed_model() -> None:
    spec = JudgeSpec.parse("openai:Qwen/Qwen2.5-Coder-32B-Instruct")
    assert (spec.provider, spec.model, spec.family) == ("openai", "Qwen/Qwen2.5-Coder-32B-Instruct", "qwen")
    assert str(spec) == "openai:Qwen/Qwen2.5-Coder-32B-Instruct"
    assert JudgeSpec.parse(spec) is spec
    assert JudgeSpec.parse("scripted:judge.json") == JudgeSpec(provider="scripted", model="judge.json")
    with pytest.raises(InputError, match="is an alias"):
        JudgeSpec.parse("anthropic:sonnet")
    with pytest.raises(InputError, match="unknown provider 'bedrock'"):
        JudgeSpec.parse("bedrock:claude-opus-4-6")


def test_make_backend_takes_a_parsed_spec(tmp_path: Path) -> None:
    script = tmp_path / "judge.json"
    script.write_text('{"default": {}}')
    backend = make_backend(JudgeSpec(provider="scripted", model=str(script)))
    assert backend.spec == f"scripted:{script}"
