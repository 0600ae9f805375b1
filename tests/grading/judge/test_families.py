"""Two judges of different model families (§4, §9): the rule, the CLI refusal, and metrics.json's record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.errors import InputError
from grading.judge.specs import check_second_judge, judge_family, second_judge_problem
from tests.grading.cli_helpers import own_stores
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    point_sdks_at,
    valid,
)
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

CLAUDE = "anthropic:claude-sonnet-4-5-20250929"
CLAUDE_OPUS = "anthropic:claude-opus-4-1-20250805"
GPT = "openai:gpt-4o-2024-08-06"


@pytest.mark.parametrize(
    ("spec", "family"),
    [
        (CLAUDE, "anthropic"),
        (GPT, "openai"),
        ("openai:o3-2025-04-16", "openai"),
        # An OpenAI-compatible server serves any family: the model id decides, not the provider.
        ("openai:claude-opus-4-1-20250805", "anthropic"),
        ("openai:Qwen/Qwen2.5-Coder-32B-Instruct", "qwen"),
        ("openai:meta-llama/Llama-3.3-70B-Instruct", "meta"),
        ("openai:deepseek-ai/DeepSeek-V3.1", "deepseek"),
        ("openai:gemini-2.5-pro", "google"),
        ("openai:mistral-large-2411", "mistral"),
        ("openai:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),  # a Bedrock id via a proxy
        ("openai:acme/coder-1.2", "acme"),  # unknown: its organisation
        ("openai:house-model-1.2", "house"),  # unknown, no organisation: its leading word
        ("scripted:/tmp/judge.json", "scripted"),
    ],
)
def test_the_family_of_a_spec(spec: str, family: str) -> None:
    assert judge_family(spec) == family


def test_the_rule() -> None:
    assert second_judge_problem(CLAUDE, GPT) is None
    problem = second_judge_problem(CLAUDE, CLAUDE_OPUS)
    assert (
        problem is not None
        and "same model family (anthropic)" in problem
        and "--allow-same-family" in problem
    )
    assert second_judge_problem(CLAUDE, "openai:claude-opus-4-1-20250805") is not None  # via a proxy
    assert second_judge_problem(CLAUDE, CLAUDE_OPUS, allow_same_family=True) is None
    # scripted judges are test stand-ins: exempt on either side
    assert second_judge_problem("scripted:a.json", "scripted:b.json") is None
    assert second_judge_problem(CLAUDE, "scripted:b.json") is None
    with pytest.raises(InputError, match="--second-judge"):
        check_second_judge(GPT, "openai:gpt-4.1-2025-04-14")


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_server: FakeProviderServer) -> Task:
    own_stores(tmp_path, monkeypatch)
    point_sdks_at(fake_server, monkeypatch)
    return Task(tmp_path)


def grade(task: Task, run: Path, primary: str, second: str, *extra: str) -> list[str]:
    return ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", primary,
            "--second-judge", second, "--json", *extra]  # fmt: skip


def test_a_same_family_second_judge_is_refused_before_any_call(
    task: Task, capsys: pytest.CaptureFixture[str], fake_server: FakeProviderServer
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    assert main(grade(task, run, CLAUDE, CLAUDE_OPUS)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "same model family (anthropic)" in captured.err
    assert fake_server.model_calls() == [] and not (run / "metrics.json").exists()


def test_allow_same_family_grades_and_records_both_families(
    task: Task, capsys: pytest.CaptureFixture[str], fake_server: FakeProviderServer
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    fake_server.script(valid("pass"), valid("pass"))
    assert main(grade(task, run, CLAUDE, CLAUDE_OPUS, "--allow-same-family")) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["details"]["judge_families"] == {"primary": "anthropic", "second": "anthropic"}
    assert len(fake_server.model_calls()) == 2


def test_different_families_are_recorded(
    task: Task, capsys: pytest.CaptureFixture[str], fake_server: FakeProviderServer
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    fake_server.script(valid("pass"), valid("pass"))
    assert main(grade(task, run, CLAUDE, GPT)) == 0
    assert json.loads(capsys.readouterr().out)["details"]["judge_families"] == {
        "primary": "anthropic",
        "second": "openai",
    }


def test_scripted_judges_are_exempt_and_a_lone_judge_has_no_second_family(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    answer_run(task, run, answers())
    task.backend()
    scripted = f"scripted:{task.judge}"
    assert main(grade(task, run, scripted, scripted)) == 0
    assert json.loads(capsys.readouterr().out)["details"]["judge_families"] == {
        "primary": "scripted",
        "second": "scripted",
    }
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", scripted, "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["details"]["judge_families"] == {
        "primary": "scripted",
        "second": None,
    }
