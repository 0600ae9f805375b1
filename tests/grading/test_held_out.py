"""Held-out rubrics (§7): ``--rubric PATH`` and ``--task-json PATH`` grade exactly as if the files sat in
TASK_DIR; calibration paths resolve against the rubric's own folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from tests.grading.cli_helpers import own_stores
from tests.grading.task_helpers import FIXED, Task, answer_run, answers


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def hold_out(task: Task) -> tuple[Path, Path]:
    """Move rubric.json, task.json and the calib diffs to a private folder; the public task keeps only
    oracle.diff. Returns (private rubric.json, private task.json)."""
    private = task.dir.parent / "private" / "fix_add"
    private.mkdir(parents=True)
    for name in ("rubric.json", "task.json"):
        shutil.move(task.dir / name, private / name)
    shutil.move(task.dir / "calib", private / "calib")
    return private / "rubric.json", private / "task.json"


def judge_spec(task: Task) -> str:
    task.backend()
    return f"scripted:{task.judge}"


def out_json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def test_check_with_a_held_out_rubric_reads_its_calibration_beside_it(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    public = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", judge_spec(task), "--json",
              "--store", str(tmp_path / "public.sqlite3")]  # fmt: skip
    assert main(public) == 0
    in_tree = out_json(capsys)
    rubric, task_json = hold_out(task)
    assert main(public) == 2  # the public tree holds neither task.json nor rubric.json any more
    assert "task/task.json: file not found" in capsys.readouterr().err
    held_out = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", judge_spec(task),
                "--rubric", str(rubric), "--task-json", str(task_json), "--json",
                "--store", str(tmp_path / "private.sqlite3")]  # fmt: skip
    assert main(held_out) == 0
    report = out_json(capsys)
    assert report["admitted"] is True
    # Exactly as if it sat in TASK_DIR: the same rows, verdicts and content hash.
    assert [(r["kind"], r["name"], r["holds"], r["actual"]) for r in report["rows"]] == [
        (r["kind"], r["name"], r["holds"], r["actual"]) for r in in_tree["rows"]
    ]
    assert report["key"] == in_tree["key"] and report["rubric_sha256"] == in_tree["rubric_sha256"]
    # A calib path resolves against the rubric's folder: without the private calib/ it is missing.
    shutil.rmtree(rubric.parent / "calib")
    assert main(held_out) == 2
    assert "calibration.lazy[0]" in capsys.readouterr().err


def test_scope_judge_and_grade_with_a_held_out_rubric(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = task.make_run("r", {**FIXED, "docs/notes.md": "notes\n"}, {"pass": True})
    answer_run(task, run, answers(("B2",)))
    spec = judge_spec(task)
    store = ["--store", str(tmp_path / "admission.sqlite3")]
    assert main(["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", spec,
                 "--json", *store]) == 1  # fmt: skip
    in_tree = out_json(capsys)

    rubric, task_json = hold_out(task)
    held = ["--rubric", str(rubric)]
    assert main(["scope", str(task.dir), str(run), "--json", *held]) == 1
    scope = out_json(capsys)
    assert scope["violations"] == [{"path": "docs/notes.md", "rule": "outside_allowed"}]

    assert main(["judge", str(task.dir), str(run), "--judge", spec, "--json", *held,
                 "--task-json", str(task_json)]) == 0  # fmt: skip
    verdicts = {v["item_id"]: v["verdict"] for v in out_json(capsys)["verdicts"]}
    assert verdicts["B2"] == "fail" and verdicts["B1"] == "pass"

    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", spec, "--json",
            *store, *held, "--task-json", str(task_json)]  # fmt: skip
    assert main(argv) == 1
    metrics = out_json(capsys)
    for key in ("mergeable", "merge_score", "rubric_sha256", "provisional"):
        assert metrics[key] == in_tree[key], key
    assert metrics["details"]["reasons"] == in_tree["details"]["reasons"]
    assert metrics["details"]["reasons"] == ["scope check failed", "blocker B2 fails"]


def test_a_held_out_task_json_reads_prompt_md_beside_it(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    answer_run(task, run, answers())
    rubric, task_json = hold_out(task)
    task_json.write_text(json.dumps({"id": "fix_add", "gate": ["pass"]}))
    (task_json.parent / "prompt.md").write_text("HELD-OUT PROMPT: add() subtracts.\n")
    argv = ["judge", str(task.dir), str(run), "--judge", judge_spec(task), "--render-only",
            "--rubric", str(rubric), "--task-json", str(task_json)]  # fmt: skip
    assert main(argv) == 0
    assert "HELD-OUT PROMPT" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["scope", "judge", "grade", "check"])
def test_a_missing_held_out_rubric_is_bad_input(
    task: Task, capsys: pytest.CaptureFixture[str], command: str, tmp_path: Path
) -> None:
    run = task.make_run("r", FIXED, {"pass": True})
    missing = str(tmp_path / "nowhere" / "rubric.json")
    spec = judge_spec(task)
    argv = {
        "scope": ["scope", str(task.dir), str(run)],
        "judge": ["judge", str(task.dir), str(run), "--judge", spec],
        "grade": ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge", spec],
        "check": ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", spec],
    }[command]
    # Even though TASK_DIR/rubric.json exists: the rubric asked for is the one used, never a fallback.
    assert main([*argv, "--rubric", missing]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rubric: error: ") and "nowhere/rubric.json: file not found" in err
    assert not (run / "metrics.json").exists()
