"""``rubric check``: one line per row, --json, the store, exit codes (0 admitted, 1 not, 2 bad input)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.build import JUDGE_SCRIPTED, MANIFEST, TASK_ID, TASKS
from grading.admission.check import inject_reviewer_comment
from grading.cli.rubric import main
from tests.grading.cli_helpers import ESCAPE_REPLY, check, own_stores
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
    text,
)
from tests.grading.task_helpers import Task, answers

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def test_one_line_per_row_and_exit_0_when_admitted(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(check(task)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"task fix_add, judge scripted:{task.judge} (scripted judge): 5 judge calls"
    assert [line.split()[:2] for line in out[1:6]] == [
        ["ok", "empty"], ["ok", "oracle"], ["ok", "lazy"], ["ok", "lazy_comment"], ["ok", "alt"]]  # fmt: skip
    assert "expected: not mergeable, fails B1  actual: not mergeable: fails B1" in out[3]
    assert out[-1] == "admitted"
    # The default store honours XDG_CACHE_HOME; the second run reads it and calls no judge.
    assert (task.dir.parent / "xdg" / "mergeability-grading" / "admission.sqlite3").is_file()
    assert main(check(task)) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("stored report, no judge call")


def test_exit_1_and_the_failing_row_when_not_admitted(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    commented = inject_reviewer_comment((task.dir / "calib/lazy.diff").read_bytes(), "calib/lazy.diff")
    task.script["by_diff_sha256"][hashlib.sha256(commented).hexdigest()] = answers()
    assert main(check(task, "--json", "--store", str(task.dir.parent / "s.sqlite3"))) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["admitted"] is False
    held = [(r["kind"], r["holds"]) for r in report["rows"]]
    assert held == [
        ("empty", True),
        ("oracle", True),
        ("lazy", True),
        ("lazy_comment", False),
        ("alt", True),
    ]
    assert report["rows"][3]["judge"]["verdicts"][0]["reason"] == "B1 is met by the change."

    assert main(check(task, "--store", str(task.dir.parent / "s.sqlite3"))) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[4].startswith("FAIL lazy_comment calib/lazy.diff + reviewer comment")
    assert out[-1] == "not admitted: 1 of 5 rows does not hold"


def test_refresh_recomputes_and_no_cache_calls_the_judge_again(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(task.dir.parent / "s.sqlite3")
    assert main(check(task, "--store", store)) == 0
    capsys.readouterr()
    # --refresh skips the stored report; the verdict cache still answers every row.
    assert main(check(task, "--store", store, "--refresh")) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": 0 judge calls")
    assert main(check(task, "--store", store, "--refresh", "--no-cache")) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(": 5 judge calls")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("alias", "alias"),
        ("no_oracle", "oracle.diff: file not found"),
        ("bad_rubric", "rubric.json"),
        ("missing_calibration", "calib/alt.diff"),
        ("bad_manifest", "manifest"),
    ],
)
def test_bad_input_is_exit_2(
    task: Task, capsys: pytest.CaptureFixture[str], change: str, message: str
) -> None:
    argv = check(task)
    if change == "alias":
        argv[argv.index("--judge") + 1] = "anthropic:claude-sonnet-4-5"
    elif change == "no_oracle":
        (task.dir / "oracle.diff").unlink()
    elif change == "bad_rubric":
        (task.dir / "rubric.json").write_text('{"schema": "repo_rubric.v1"')
    elif change == "missing_calibration":
        (task.dir / "calib/alt.diff").unlink()
    else:
        task.manifest.write_text("tests: [unclosed\n")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert all(line.startswith("rubric: error: ") for line in captured.err.strip().splitlines())
    assert message in captured.err


def test_the_example_task_is_admitted(tmp_path: Path) -> None:
    args = [
        "check",
        str(TASKS / TASK_ID),
        "--manifest",
        str(MANIFEST),
        "--judge",
        f"scripted:{JUDGE_SCRIPTED}",
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("RUBRIC_ADMISSION_STORE", None)
    env.pop("RUBRIC_JUDGE_CACHE", None)
    result = subprocess.run(
        [sys.executable, "-m", "grading", *args, "--json"], capture_output=True, text=True, check=False,
        cwd=REPO_ROOT, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["admitted"] and report["scripted"] and report["calls"] == 5
    rows = {r["kind"]: r for r in report["rows"]}
    assert rows["lazy"]["blockers_failed"] == ["B1"] and rows["lazy_comment"]["blockers_failed"] == ["B1"]
    assert rows["empty"]["blockers_failed"] == ["B2"]

    again = subprocess.run(
        [sys.executable, "-m", "grading", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
        env=env,
    )
    assert again.returncode == 0
    assert again.stdout.splitlines()[0].endswith("stored report, no judge call")


def test_prices_and_decoding_reach_the_judge(
    task: Task,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text("[]")
    assert main(check(task, "--prices", str(bad))) == 2  # a bad price table is bad input
    assert main(check(task, "--decoding", "temperature")) == 2
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    model = "claude-example-9-9-20990101"  # in no built-in table
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({model: {"input": 1.0, "output": 1.0}}))
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", f"anthropic:{model}",
            "--decoding", "temperature=0", "--prices", str(prices), "--json"]  # fmt: skip
    main(argv)
    report = json.loads(capsys.readouterr().out)
    calls = fake_server.model_calls()
    assert len(calls) == 5 and all(call.body["temperature"] == 0 for call in calls)
    assert report["usage"]["cost_known"] is True and report["usage"]["cost_usd"] > 0


def test_model_text_in_a_judge_failure_cannot_drive_the_terminal(
    task: Task,
    monkeypatch: pytest.MonkeyPatch,
    fake_server: FakeProviderServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    fake_server.script(*[text(ESCAPE_REPLY)] * 15)  # every attempt of every row
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge",
            "anthropic:claude-sonnet-4-5-20250929"]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "judge failure" in out and "\\x1b]0;owned\\x07" in out
    assert "\x1b" not in out and "\x07" not in out


def test_no_cache_judges_again_instead_of_reading_the_stored_report(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(check(task)) == 0
    capsys.readouterr()
    assert main(check(task, "--no-cache")) == 0  # asked to call the judge again: neither cache is read
    assert capsys.readouterr().out.splitlines()[0].endswith(": 5 judge calls")
