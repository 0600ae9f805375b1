"""``rubric grade``: metrics.json, --json, exit codes 0 (mergeable, not measured), 1, 2."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from examples.build import JUDGE_SCRIPTED, MANIFEST, RUNS, TASK_ID, TASKS
from grading.cli.rubric import main
from tests.grading.cli_helpers import ESCAPE_REPLY, grade_argv, own_stores
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    point_sdks_at,
    refusal,
    text,
    valid,
)
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    # Every default cache path lands in the test's own directory.
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def test_json_prints_what_metrics_json_holds_and_exit_0_when_mergeable(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.make_run("good", FIXED, {"pass": True, "tests_passed": 4})
    answer_run(task, run, answers(("N1",)))
    assert main(grade_argv(task, run, "--json")) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((run / "metrics.json").read_text())
    assert (printed["mergeable"], printed["tests_passed"]) == (True, 4)
    assert printed["merge_score"] == pytest.approx(2 / 3)
    # The default verdict cache honours XDG_CACHE_HOME.
    assert (task.dir.parent / "xdg" / "mergeability-grading" / "judge-cache.sqlite3").is_file()


def test_the_summary_labels_the_scripted_judge(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers(("B1",)))
    assert main(grade_argv(task, run, "--cache", str(task.dir.parent / "c.sqlite3"))) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "not_mergeable: mergeable false, merge_score 0.000, pass true"
    assert "  - blocker B1 fails" in out
    assert any(line.startswith(f"judge: scripted:{task.judge} (scripted): B1 fail, B2 pass") for line in out)
    assert out[-1] == f"wrote {run / 'metrics.json'}"


@pytest.mark.parametrize(
    ("setup", "code", "mergeable"),
    [
        ("pass_false", 1, False),
        ("judge_failure", 1, None),
        ("grader_failure", 1, None),
        ("no_rubric", 0, None),
    ],
)
def test_exit_codes(
    task: Task, capsys: pytest.CaptureFixture[str], setup: str, code: int, mergeable: Any
) -> None:
    run = task.make_run(
        "r",
        FIXED,
        {"pass": setup != "pass_false", **({"merge_score": 1} if setup == "grader_failure" else {})},
    )
    answer_run(task, run, answers(nowhere=("B1",)) if setup == "judge_failure" else answers())
    if setup == "no_rubric":
        (task.dir / "rubric.json").unlink()
    assert main(grade_argv(task, run, "--json")) == code
    assert json.loads(capsys.readouterr().out)["mergeable"] == mergeable


@pytest.mark.parametrize(
    ("argv_change", "message"),
    [
        (("--judge", "anthropic:sonnet"), "alias"),
        (("--judge", "nosuch:model-1-2"), "unknown provider"),
        (("--manifest", "/nonexistent/manifest.yaml"), "manifest.yaml: file not found"),
        (("grade.json", '{"pass": "yes"}'), "grade.json"),
        (("workspace.diff", None), "workspace.diff"),
        (("second", "openai:gpt-4o"), "alias"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    task: Task, capsys: pytest.CaptureFixture[str], argv_change: tuple[str, str | None], message: str
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    argv = grade_argv(task, run, "--json")
    flag, value = argv_change
    if flag in ("--judge", "--manifest"):
        argv[argv.index(flag) + 1] = str(value)
    elif flag == "second":
        argv += ["--second-judge", str(value)]
    elif value is None:
        (run / flag).unlink()
    else:
        (run / flag).write_text(value)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) >= 1 and all(line.startswith("rubric: error: ") for line in lines)
    assert message in captured.err
    assert not (run / "metrics.json").exists()


def test_a_changed_file_that_is_not_utf8_is_graded_with_those_bytes_escaped(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    # The agent wrote a Latin-1 byte: the run still gets its metrics.json (it used to exit 2), and the
    # judge reads the byte as \\xe9: the scripted answer keyed on that escaped text is the one used.
    fixed = {"src/calc.py": b"def add(a, b):\n    return a + b  # caf\xe9\n"}
    run = task.make_run("latin1", fixed, {"pass": True})
    raw = (run / "workspace.diff").read_bytes()
    assert b"caf\xe9" in raw
    escaped = raw.decode("utf-8", errors="backslashreplace")
    assert "caf\\xe9" in escaped
    task.script["by_diff_sha256"][hashlib.sha256(escaped.encode()).hexdigest()] = answers(("N3",))
    assert main(grade_argv(task, run, "--json")) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((run / "metrics.json").read_text())
    assert printed["mergeable"] is True
    assert printed["details"]["assessment"]["non_blockers_failed"] == ["N3"]


def run_rubric(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grading", *args], capture_output=True, text=True, check=False, cwd=REPO_ROOT,
        env={**os.environ, **env},
    )  # fmt: skip


@pytest.mark.parametrize(("run_name", "code", "mergeable"), [("good", 0, True), ("scope_creep", 1, False)])
def test_the_example_runs(tmp_path: Path, run_name: str, code: int, mergeable: bool) -> None:
    run = tmp_path / run_name
    shutil.copytree(RUNS / run_name, run)  # metrics.json is written into the copy, never into examples/
    judge = f"scripted:{JUDGE_SCRIPTED}"
    result = run_rubric(
        "grade", str(TASKS / TASK_ID), str(run), "--manifest", str(MANIFEST), "--judge", judge, "--json",
        env={"XDG_CACHE_HOME": str(tmp_path / "xdg")},
    )  # fmt: skip
    assert result.returncode == code, result.stderr
    metrics = json.loads(result.stdout)
    assert metrics == json.loads((run / "metrics.json").read_text())
    assert metrics["mergeable"] is mergeable and metrics["pass"] is True
    assert metrics["details"]["judge"]["scripted"] is True
    if run_name == "scope_creep":
        assert metrics["details"]["scope"]["in_scope"] is False
        assert "blocker B1 fails" in metrics["details"]["reasons"]
        assert metrics["merge_score"] == 0
    assert not (RUNS / run_name / "metrics.json").exists()


def test_real_sdks_against_a_local_server(
    task: Task,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
) -> None:
    """The primary (Anthropic SDK) and the second judge (OpenAI SDK) over HTTP; the second one's verdicts are
    recorded and never change the outcome; the verdict cache makes the second grade free."""
    point_sdks_at(fake_server, monkeypatch)
    run = task.make_run("good", FIXED, {"pass": True})
    fake_server.script(valid("pass"), valid("fail"))
    primary, second = "anthropic:claude-sonnet-4-5-20250929", "openai:gpt-4o-2024-08-06"
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", primary,
            "--second-judge", second, "--json"]  # fmt: skip
    assert main(argv) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert (metrics["mergeable"], metrics["merge_score"]) == (True, 1.0)
    judge, other = metrics["details"]["judge"], metrics["details"]["second_judge"]
    assert (judge["judge"], judge["model_id"], judge["scripted"]) == (
        primary,
        "claude-sonnet-4-5-20250929",
        False,
    )
    assert judge["usage"]["input_tokens"] > 0 and judge["calls"] == 1
    assert other["model_id"] == "gpt-4o-2024-08-06"
    assert {v["verdict"] for v in other["verdicts"]} == {"fail"}
    calls = fake_server.model_calls()
    assert [c.path.rstrip("/").rsplit("/", 1)[-1] for c in calls] == ["messages", "completions"]

    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["details"]["judge"]["cache_hit"] and again["details"]["second_judge"]["cache_hit"]
    assert len(fake_server.model_calls()) == 2


def test_a_refusing_model_is_a_judge_failure(
    task: Task,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    run = task.make_run("good", FIXED, {"pass": True})
    fake_server.script(refusal(), refusal(), refusal())
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            "anthropic:claude-sonnet-4-5-20250929", "--json"]  # fmt: skip
    assert main(argv) == 1
    metrics = json.loads(capsys.readouterr().out)
    assert (metrics["mergeable"], metrics["merge_score"], metrics["judge_failure"]) == (None, None, True)
    assert metrics["details"]["judge"]["calls"] == 3 and metrics["details"]["judge"]["verdicts"] == []


def test_price_table_and_decoding_reach_the_judge(
    task: Task,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
) -> None:
    """The cost in metrics.json comes from the configured price table ($RUBRIC_JUDGE_PRICES, or --prices),
    as README says for every judge command; --decoding is sent and is part of the cache key."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    model = "claude-example-9-9-20990101"  # in no built-in table
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({model: {"input": 1000.0, "output": 1000.0}}))
    monkeypatch.setenv("RUBRIC_JUDGE_PRICES", str(prices))
    run = task.make_run("good", FIXED, {"pass": True})
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"anthropic:{model}", "--json"]  # fmt: skip
    assert main(argv) == 0
    usage = json.loads(capsys.readouterr().out)["details"]["judge"]["usage"]
    assert usage["cost_known"] is True and usage["cost_usd"] > 0

    cheaper = tmp_path / "cheaper.json"
    cheaper.write_text(json.dumps({model: {"input": 1.0, "output": 1.0}}))
    assert main([*argv, "--prices", str(cheaper), "--no-cache"]) == 0
    again = json.loads(capsys.readouterr().out)["details"]["judge"]["usage"]
    assert 0 < again["cost_usd"] < usage["cost_usd"] / 100

    assert main([*argv, "--decoding", "temperature=0"]) == 0
    result = json.loads(capsys.readouterr().out)["details"]["judge"]
    assert result["cache_hit"] is False  # another decoding is another key
    assert fake_server.model_calls()[-1].body["temperature"] == 0


def test_model_text_in_a_judge_failure_cannot_drive_the_terminal(
    task: Task,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
) -> None:
    """A reply's unknown id is quoted in the judge failure; the summary escapes its control characters."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    run = task.make_run("good", FIXED, {"pass": True})
    fake_server.script(*[text(ESCAPE_REPLY)] * 3)
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            "anthropic:claude-sonnet-4-5-20250929"]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "judge failure" in out and "\\x1b]0;owned\\x07" in out
    assert "\x1b" not in out and "\x07" not in out


def test_the_second_judge_grades_only_its_sample(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers(("N1",)))
    second = task.dir.parent / "second.json"
    second.write_text(json.dumps({"default": {}}))  # never asked: outside the sample
    base = grade_argv(task, run, "--second-judge", f"scripted:{second}", "--no-cache", "--json")
    assert main([*base, "--second-judge-sample", "0"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["details"]["second_judge"] is None
    assert metrics["details"]["second_judge_skipped"] == "not in the second judge's sample (0 of runs)"
    assert main([*base, "--second-judge-sample", "1.5"]) == 2
    assert "--second-judge-sample: must be between 0 and 1" in capsys.readouterr().err
