"""metrics.json provenance (§6), a failing run over the judge's limit (§1) and the regrade figure (§4, §9)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from grading.admission.store import AdmissionStore, is_admitted
from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.judge.cache import MemoryCache, describe_repeat_agreement
from grading.judge.runner import JudgeSettings
from tests.grading.cli_helpers import check, own_stores
from tests.grading.task_helpers import FIXED, Task, answer_run, answers


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def grade(task: Task, run: Path, *extra: str) -> list[str]:
    task.backend()
    return ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"scripted:{task.judge}", "--json", *extra]  # fmt: skip


def metrics_of(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


# --- provenance -------------------------------------------------------------------------------------------


def test_metrics_are_provisional_until_the_rubric_content_is_admitted_with_this_judge(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    store = ["--store", str(tmp_path / "admission.sqlite3")]
    assert main(grade(task, run, *store)) == 0
    metrics = metrics_of(capsys)
    content = hashlib.sha256((task.dir / "rubric.json").read_bytes()).hexdigest()
    assert (metrics["format"], metrics["rubric_sha256"], metrics["provisional"]) == (1, content, True)
    assert json.loads((run / "metrics.json").read_text())["provisional"] is True

    assert main(check(task, *store)) == 0  # admitted with this judge
    capsys.readouterr()
    assert main(grade(task, run, *store)) == 0
    assert metrics_of(capsys)["provisional"] is False
    assert is_admitted(content, f"scripted:{task.judge}", tmp_path / "admission.sqlite3")
    assert not is_admitted(content, f"scripted:{task.judge}", tmp_path / "absent.sqlite3")
    assert not (tmp_path / "absent.sqlite3").exists()

    # Another judge: provisional again. The admission was for the scripted one.
    other = tmp_path / "other-judge.json"
    other.write_text(task.judge.read_text())
    argv = grade(task, run, *store)
    argv[argv.index("--judge") + 1] = f"scripted:{other}"
    assert main(argv) == 0
    assert metrics_of(capsys)["provisional"] is True

    # Another rubric content (one more non-blocker): provisional again, with the new hash.
    task.rubric["non_blockers"].append({"id": "N4", "criterion": "quality 4"})
    task.write_rubric()
    task.script["by_diff_sha256"][hashlib.sha256((run / "workspace.diff").read_bytes()).hexdigest()]["N4"] = {
        "verdict": "pass",
        "reason": "N4 is met by the change.",
    }
    assert main(grade(task, run, *store)) == 0
    changed = metrics_of(capsys)
    assert changed["provisional"] is True and changed["rubric_sha256"] != content


def test_a_check_that_does_not_admit_leaves_results_provisional(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    task.answer("oracle.diff", answers(("B1",)))  # the oracle row fails: not admitted
    store = ["--store", str(tmp_path / "admission.sqlite3")]
    assert main(check(task, *store)) == 1
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    capsys.readouterr()
    assert main(grade(task, run, *store)) == 0
    assert metrics_of(capsys)["provisional"] is True


def test_without_a_rubric_there_is_no_hash_and_the_result_is_provisional(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    (task.dir / "rubric.json").unlink()
    assert main(grade(task, run)) == 0
    metrics = metrics_of(capsys)
    assert (metrics["format"], metrics["rubric_sha256"], metrics["provisional"]) == (1, None, True)
    assert metrics["mergeable"] is None


@pytest.mark.parametrize("key", ["format", "rubric_sha256", "provisional"])
def test_a_grade_json_holding_a_provenance_key_is_a_grader_failure(
    task: Task, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    run = task.make_run("r", FIXED, {"pass": True, key: 1})
    answer_run(task, run, answers())
    assert main(grade(task, run)) == 1
    metrics = metrics_of(capsys)
    assert metrics["grader_failure"] is True and metrics["format"] == 1
    assert any(key in reason for reason in metrics["details"]["reasons"])


def test_a_store_made_before_the_hash_was_kept_gains_the_column(task: Task, tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE admissions (key TEXT PRIMARY KEY, task TEXT NOT NULL, judge TEXT NOT NULL, "
            "admitted INTEGER NOT NULL, report TEXT NOT NULL, created TEXT NOT NULL)"
        )
        conn.execute("INSERT INTO admissions VALUES ('k', 't', 'j', 1, '{}', 'now')")
    store = AdmissionStore(path)
    assert not store.admits("anything", "j")  # an old row has no hash: it admits nothing
    report = task.check(store=store)
    assert report.admitted and report.rubric_sha256
    assert store.admits(report.rubric_sha256, report.judge)
    assert not store.admits(report.rubric_sha256, "anthropic:claude-sonnet-4-5-20250929")


# --- a diff over the judge's limit (the rest: test_judge_size.py) ----------------------------------------

BIG_LINE = "x = 1  # padding the change past the judge's limit\n"


def test_a_diff_over_the_limit_of_a_failing_run_stays_not_mergeable(task: Task) -> None:
    run = task.make_run("big", {**FIXED, "src/big.py": BIG_LINE * 100}, {"pass": False})
    metrics = grade_run(
        task.dir, run, task.manifest, task.backend(), settings=JudgeSettings(max_diff_chars=1000)
    )
    assert (metrics.mergeable, metrics.details.reasons) == (False, ["pass is false"])


# --- the repeat-agreement figure ---------------------------------------------------------------------------


def test_grade_regrades_a_sample_and_prints_the_repeat_agreement(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    cache = ["--cache", str(tmp_path / "verdicts.sqlite3")]
    assert main(grade(task, run, *cache)) == 0
    assert "repeat agreement" not in capsys.readouterr().err  # nothing regraded
    # Every cached diff judged again; the scripted judge answers the same (a changed answer: the next test).
    assert main(grade(task, run, *cache, "--regrade-sample", "1")) == 0
    captured = capsys.readouterr()
    metrics = json.loads(captured.out)
    assert metrics["details"]["judge"]["cache_bypass"] == "regrade_sample"
    assert "judge: repeat agreement: 5/5 item verdicts the same (100.0%) over 1 diff judged again" in (
        captured.err
    )
    argv = grade(task, run, *cache, "--regrade-sample", "1")
    argv.remove("--json")
    assert main(argv) == 0
    assert "judge: repeat agreement: 5/5" in capsys.readouterr().out
    assert main(grade(task, run, "--regrade-sample", "1.5")) == 2
    assert "--regrade-sample" in capsys.readouterr().err


def test_the_figure_counts_changed_verdicts(task: Task) -> None:
    run = task.make_run("good", FIXED, {"pass": True})
    answer_run(task, run, answers())
    cache = MemoryCache()
    grade_run(task.dir, run, task.manifest, task.backend(), cache=cache)
    key = next(iter(cache.entries))
    stored = cache.entries[key]
    flipped = [v.model_copy(update={"verdict": "fail"}) if v.item_id == "N1" else v for v in stored.verdicts]
    cache.entries[key] = stored.model_copy(update={"verdicts": flipped})
    metrics = grade_run(task.dir, run, task.manifest, task.backend(), cache=cache,
                        settings=JudgeSettings(regrade_sample=1.0))  # fmt: skip
    assert metrics.details.judge is not None
    line = describe_repeat_agreement([metrics.details.judge])
    assert line == "repeat agreement: 4/5 item verdicts the same (80.0%) over 1 diff judged again"


def test_the_judge_command_prints_the_figure(
    task: Task, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = [task.make_run(name, FIXED, {"pass": True}) for name in ("a", "b")]
    for run in runs:
        answer_run(task, run, answers())
    task.backend()
    argv = ["judge", str(task.dir), *map(str, runs), "--judge", f"scripted:{task.judge}",
            "--cache", str(tmp_path / "v.sqlite3")]  # fmt: skip
    assert main(argv) == 0
    assert "repeat agreement" not in capsys.readouterr().out
    assert main([*argv, "--no-cache"]) == 0
    out = capsys.readouterr().out
    # both runs have the same diff, so one cache key: both regrades compare with the one stored entry
    assert "repeat agreement: 10/10 item verdicts the same (100.0%) over 2 diffs judged again" in out
