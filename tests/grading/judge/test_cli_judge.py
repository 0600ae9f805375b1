from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from grading.judge.prompt import fence_close, fence_open
from grading.schema import CONFIG_BLOCKER_ID
from tests.grading.judge.judge_helpers import DIFF, LAZY_SOLUTION, TASK, rubric_data

ANSWERS = {i: {"verdict": "pass", "reason": f"{i} holds."} for i in ["B1", "B2", "N1", "N2", "N3"]}
CONFTEST_DIFF = """\
diff --git a/tests/conftest.py b/tests/conftest.py
index 1111111..2222222 100644
--- a/tests/conftest.py
+++ b/tests/conftest.py
@@ -1 +1,2 @@
 import pytest
+collect_ignore = ["test_area.py"]
"""


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("RUBRIC_JUDGE_CACHE", raising=False)
    monkeypatch.delenv("RUBRIC_JUDGE_PRICES", raising=False)
    task = tmp_path / "repo" / "tasks" / "fix_area"
    task.mkdir(parents=True)
    (task / "task.json").write_text(json.dumps(TASK.model_dump(mode="json")))
    (task / "rubric.json").write_text(json.dumps(rubric_data()))
    (tmp_path / "repo" / "repo_manifest.yaml").write_text(
        'tests:\n  globs: ["tests/**"]\n  config_globs: ["**/conftest.py"]\n'
    )
    runs = {}
    for name, diff in (
        ("run1", DIFF),
        ("run2", DIFF.replace("abs(total) / 2", "abs(total) / 2.0")),
        ("conf", CONFTEST_DIFF),
    ):
        runs[name] = tmp_path / "runs" / name
        runs[name].mkdir(parents=True)
        (runs[name] / "workspace.diff").write_text(diff)
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"default": ANSWERS}))
    return {"task": task, "script": script, "tmp": tmp_path, **runs}


def rubric(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_it_prints_one_line_per_verdict_labelled_scripted(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = rubric(
        ["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}"], capsys
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "B1 (blocker) pass (scripted judge): B1 holds."
    assert sum("(scripted judge)" in line for line in lines) == 6
    assert "calls 1, cache miss" in lines[-1]
    assert (layout["tmp"] / "xdg" / "mergeability-grading" / "judge-cache.sqlite3").is_file()


def test_json_output_and_a_second_run_is_a_cache_hit(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}", "--json"]
    code, out, _ = rubric(args, capsys)
    first = json.loads(out)
    assert code == 0 and first["scripted"] and first["calls"] == 1 and not first["cache_hit"]
    assert [v["item_id"] for v in first["verdicts"]] == ["B1", "B2", "N1", "N2", "N3"]
    code, out, _ = rubric(args, capsys)
    second = json.loads(out)
    assert second["cache_hit"] and second["calls"] == 0 and second["cache_key"] == first["cache_key"]
    code, out, _ = rubric([*args, "--no-cache"], capsys)
    third = json.loads(out)
    assert third["calls"] == 1 and third["cache_bypass"] == "no_cache"
    assert third["previous_verdicts"] == {
        "B1": "pass",
        "B2": "pass",
        "N1": "pass",
        "N2": "pass",
        "N3": "pass",
    }


def test_the_cache_path_can_be_chosen(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = layout["tmp"] / "mine.sqlite3"
    rubric(
        [
            "judge",
            layout["task"],
            layout["run1"],
            "--judge",
            f"scripted:{layout['script']}",
            "--cache",
            chosen,
        ],
        capsys,
    )
    assert chosen.is_file()
    env_path = layout["tmp"] / "env.sqlite3"
    monkeypatch.setenv("RUBRIC_JUDGE_CACHE", str(env_path))
    rubric(["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}"], capsys)
    assert env_path.is_file()


def test_a_sweep_prints_progress_and_totals(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = rubric(
        [
            "judge",
            layout["task"],
            layout["run1"],
            layout["run2"],
            "--judge",
            f"scripted:{layout['script']}",
            "--json",
        ],
        capsys,
    )
    data = json.loads(out)
    assert code == 0 and data["calls"] == 2 and data["cache_hits"] == 0 and len(data["runs"]) == 2
    assert "judging [" in err and "2/2" in err
    code, out, err = rubric(
        ["judge", layout["task"], layout["run1"], layout["run2"], "--judge", f"scripted:{layout['script']}"],
        capsys,
    )
    assert out.splitlines()[-1].startswith("sweep: 2 runs, 0 calls, 2 cache hits, 0 judge failures")


def test_render_only_prints_the_exact_requests_and_calls_nothing(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # no API key and no server: any call would fail
    render_only = [
        "judge",
        layout["task"],
        layout["run1"],
        "--judge",
        "anthropic:claude-sonnet-4-5-20250929",
        "--render-only",
        "--decoding",
        "temperature=0",
    ]
    code, out, _ = rubric(render_only, capsys)
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["requests"] and len(data["requests"]) == 1
    entry = data["requests"][0]
    assert len(entry["cache_key"]) == 64
    body = entry["request"]
    assert body["model"] == "claude-sonnet-4-5-20250929" and body["temperature"] == 0
    assert "tools" not in body
    text = json.dumps(body)
    assert LAZY_SOLUTION not in text
    user = body["messages"][-1]["content"][0]["text"]
    nonce = user.split(fence_open("")[:-4], 1)[1].split(">>>", 1)[0].strip()
    assert user.count(fence_open(nonce)) == 1 and user.count(fence_close(nonce)) == 1
    assert DIFF in user
    assert not (layout["tmp"] / "xdg").exists()  # not even the cache was opened
    # same inputs, new nonce, same key
    _, out2, _ = rubric(render_only, capsys)
    again = json.loads(out2)["requests"][0]
    assert again["cache_key"] == entry["cache_key"] and again["request"] != body


def test_a_test_config_edit_needs_the_fixed_blocker(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["judge", layout["task"], layout["conf"], "--judge", f"scripted:{layout['script']}", "--json"]
    code, out, _ = rubric(args, capsys)
    result = json.loads(out)
    assert code == 1 and result["config_blocker"] and f"missing {CONFIG_BLOCKER_ID}" in result["failure"]
    layout["script"].write_text(
        json.dumps(
            {
                "default": {
                    **ANSWERS,
                    CONFIG_BLOCKER_ID: {"verdict": "fail", "reason": "collect_ignore drops test_area.py."},
                }
            }
        )
    )
    code, out, _ = rubric(args, capsys)
    result = json.loads(out)
    assert code == 0 and result["verdicts"][2]["item_id"] == CONFIG_BLOCKER_ID
    # with a manifest that names no config globs, no fixed blocker
    manifest = layout["tmp"] / "m.yaml"
    manifest.write_text("tests:\n  globs: []\n")
    code, out, _ = rubric([*args, "--manifest", manifest], capsys)
    assert CONFIG_BLOCKER_ID not in [v["item_id"] for v in json.loads(out)["verdicts"]]


def test_a_judge_failure_exits_1(layout: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    layout["script"].write_text(json.dumps({"default": {"B1": ANSWERS["B1"]}}))
    code, out, _ = rubric(
        ["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}"], capsys
    )
    assert code == 1 and out.startswith("judge failure (scripted judge): no usable reply")


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("alias", "is an alias"),
        ("nul", "NUL"),
        ("no_diff", "workspace.diff: file not found"),
        ("bad_script", "judge.json: default.B1.verdict"),
        ("bad_rubric", "rubric.json"),
        ("bad_decoding", "--decoding"),
        ("bad_prices", "prices.json"),
        ("bad_hunk", "workspace.diff"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str], setup: str, message: str
) -> None:
    spec = f"scripted:{layout['script']}"
    extra: list[Any] = []
    diff = layout["run1"] / "workspace.diff"
    if setup == "alias":
        spec = "anthropic:sonnet"
    elif setup == "nul":
        diff.write_bytes(DIFF.encode() + b"+\x00\n")
    elif setup == "no_diff":
        diff.unlink()
    elif setup == "bad_script":
        layout["script"].write_text(json.dumps({"default": {"B1": {"verdict": "ok", "reason": "x"}}}))
    elif setup == "bad_rubric":
        (layout["task"] / "rubric.json").write_text("{")
    elif setup == "bad_decoding":
        extra = ["--decoding", "temperature"]
    elif setup == "bad_hunk":
        diff.write_text(DIFF + "+# a line the hunk header does not count\n")
    elif setup == "bad_prices":
        prices = layout["tmp"] / "prices.json"
        prices.write_text("[]")
        extra = ["--prices", prices]
    code, out, err = rubric(["judge", layout["task"], layout["run1"], "--judge", spec, *extra], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_reasons_with_control_characters_are_escaped_on_the_terminal(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    digest = hashlib.sha256(DIFF.encode()).hexdigest()
    layout["script"].write_text(
        json.dumps(
            {
                "default": ANSWERS,
                "by_diff_sha256": {digest: {"B1": {"verdict": "pass", "reason": "ok \x1b[2J cleared"}}},
            }
        )
    )
    code, out, _ = rubric(
        ["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}"], capsys
    )
    assert code == 0 and "\x1b" not in out and "ok \\x1b[2J cleared" in out


def test_bytes_that_are_not_utf8_reach_the_judge_escaped_and_key_the_cache_as_that_text(
    layout: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    latin1 = DIFF.encode().replace(b"abs(total) / 2", b"abs(total) / 2  # caf\xe9")
    written_out = DIFF.replace("abs(total) / 2", "abs(total) / 2  # caf\\xe9")  # the four characters
    rendered = []
    for data in (latin1, written_out.encode()):
        (layout["run1"] / "workspace.diff").write_bytes(data)
        code, out, _ = rubric(["judge", layout["task"], layout["run1"], "--judge",
                               f"scripted:{layout['script']}", "--render-only"], capsys)  # fmt: skip
        assert code == 0
        rendered.append(json.loads(out)["requests"][0])
    assert rendered[0]["cache_key"] == rendered[1]["cache_key"]
    assert r"caf\\xe9" in json.dumps(rendered[0]["request"])  # one backslash, JSON-escaped
    (layout["run1"] / "workspace.diff").write_bytes(latin1)
    judge = ["judge", layout["task"], layout["run1"], "--judge", f"scripted:{layout['script']}"]
    code, out, _ = rubric(judge, capsys)
    assert code == 0 and "B1 (blocker)" in out
