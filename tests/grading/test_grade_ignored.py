"""What ``rubric grade`` and ``rubric judge`` make of the ignored files a run created (§3): a test config file
hidden in a self-ignoring directory brings the fixed TEST_CONFIG blocker, and the judge is told which
self-ignoring directories the run created (file names when there are at most 20)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grading.cli.rubric import main
from grading.schema import CONFIG_BLOCKER_ID
from grading.workspace.diff import capture, write_snapshot
from tests.gitrepo import GitRepo
from tests.grading.cli_helpers import own_stores
from tests.grading.task_helpers import ALL_IDS, FIXED, Task, answer_run, answers, captured_run
from tests.grading.workspace_helpers import CACHEDIR_TAG


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def grade(task: Task, run: Path) -> dict[str, Any]:
    task.backend()
    argv = ["grade", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"scripted:{task.judge}", "--json", "--no-cache"]  # fmt: skip
    main(argv)
    data: dict[str, Any] = json.loads((run / "metrics.json").read_text())
    return data


def rendered(task: Task, run: Path, capsys: pytest.CaptureFixture[str]) -> str:
    task.backend()
    argv = ["judge", str(task.dir), str(run), "--manifest", str(task.manifest), "--judge",
            f"scripted:{task.judge}", "--render-only"]  # fmt: skip
    assert main(argv) == 0
    request = json.loads(capsys.readouterr().out)["requests"][0]
    return json.dumps(request)


def test_a_conftest_hidden_in_a_self_ignoring_directory_brings_the_config_blocker(task: Task) -> None:
    run = captured_run(
        task,
        "hidden-conftest",
        {
            "cache/.gitignore": "*\n",
            "cache/CACHEDIR.TAG": CACHEDIR_TAG,
            "cache/conftest.py": "collect_ignore_glob = ['*']\n",
        },
    )
    assert (run / "workspace.diff").read_text().count("diff --git") == 1  # only src/calc.py
    answer_run(task, run, answers((CONFIG_BLOCKER_ID,), ids=(*ALL_IDS, CONFIG_BLOCKER_ID)))

    metrics = grade(task, run)

    assert metrics["details"]["integrity"]["config_edits"] == ["cache/conftest.py"]
    assert metrics["details"]["judge"]["config_blocker"] is True
    assert (
        metrics["mergeable"] is False
        and f"blocker {CONFIG_BLOCKER_ID} fails" in metrics["details"]["reasons"]
    )


def test_an_ignored_conftest_outside_self_ignoring_directories_counts_too(task: Task) -> None:
    task.repo.write(".gitignore", "out/\n")
    task.repo.commit("ignore out/")
    run = captured_run(task, "ignored-conftest", {"out/conftest.py": "collect_ignore_glob = ['*']\n"})
    answer_run(task, run, answers(ids=(*ALL_IDS, CONFIG_BLOCKER_ID)))

    metrics = grade(task, run)

    assert (run / "ignored_created.txt").read_text() == "out/conftest.py\n"
    assert metrics["details"]["integrity"]["config_edits"] == ["out/conftest.py"]
    assert metrics["mergeable"] is True


def test_the_judge_is_told_of_self_ignoring_directories(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = captured_run(task, "plain", {})
    without = rendered(task, plain, capsys)
    many = {f".venv/lib/m{i:02}.py": "x\n" for i in range(21)}
    run = captured_run(
        task,
        "caches",
        {
            ".pytest_cache/.gitignore": "*\n",
            ".pytest_cache/CACHEDIR.TAG": CACHEDIR_TAG,
            ".pytest_cache/v/nodeids": "[]\n",
            ".venv/.gitignore": "*\n",
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
            **many,
        },
    )
    assert (run / "workspace.diff").read_bytes() == (plain / "workspace.diff").read_bytes()

    text = rendered(task, run, capsys)

    assert "the run also created these self-ignoring directories, not shown" in text.lower()
    assert "- .pytest_cache/ (3 files)\\n    .gitignore\\n    CACHEDIR.TAG\\n    v/nodeids\\n" in text
    assert "- .venv/ (23 files)\\n<<<SELF-IGNORING-DIRECTORIES END" in text  # over 20: the count only
    assert "m00.py" not in text
    assert "self-ignoring" not in without.lower()
    # what the judge sees differs, so the cache key does too
    assert json.loads(text)["cache_key"] != json.loads(without)["cache_key"]


def test_grade_shows_the_judge_the_self_ignoring_directories(task: Task) -> None:
    plain = captured_run(task, "plain", {})
    run = captured_run(
        task, "cache", {".mypy_cache/.gitignore": "*\n", ".mypy_cache/CACHEDIR.TAG": CACHEDIR_TAG}
    )
    assert (run / "workspace.diff").read_bytes() == (plain / "workspace.diff").read_bytes()
    for r in (plain, run):
        answer_run(task, r, answers())

    keys = [grade(task, r)["details"]["judge"]["cache_key"] for r in (plain, run)]

    assert keys[0] != keys[1]  # the same diff, but the judge's input names .mypy_cache/


def _fixed_runs(task: Task, name: str, damage: Callable[[GitRepo], None]) -> tuple[Path, Path]:
    """Two captured runs that make the oracle's fix, with the judge's answers: ``plain``, and ``name``, which
    also does ``damage`` to the checkout (outside the diff: its diff is plain's)."""
    plain = captured_run(task, "plain", {})
    repo = task.repo
    before = task.dir.parent / f"{name}.before"
    write_snapshot(repo.path, before)
    for path, text in FIXED.items():
        repo.write(path, text)
    damage(repo)
    run = task.dir.parent / "runs" / name
    capture(repo.path, "HEAD", before, run)
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    assert (run / "workspace.diff").read_bytes() == (plain / "workspace.diff").read_bytes()
    answer_run(task, run, answers())
    return plain, run


def test_a_run_that_changed_git_dir_fails_integrity_and_the_judge_is_told(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    def damage(repo: GitRepo) -> None:
        repo.write(".git/hooks/post-checkout", "#!/bin/sh\necho owned\n", executable=True)
        (repo.path / ".git" / "index").write_bytes(b"garbage")  # and the index is beyond repair

    plain, run = _fixed_runs(task, "hook", damage)

    metrics = grade(task, run)

    violations = metrics["details"]["integrity"]["violations"]
    assert [(v["rule"], v["path"]) for v in violations] == [
        ("git_dir_modified", ".git/hooks/post-checkout"),
        ("git_dir_modified", ".git/index"),
    ]
    assert metrics["mergeable"] is False and metrics["details"]["status"] == "not_mergeable"
    capsys.readouterr()
    text = rendered(task, run, capsys)
    assert "GIT-DIR-CHANGES BEGIN" in text and "- .git/hooks/post-checkout\\n- .git/index\\n" in text
    assert "GIT-DIR-CHANGES" not in rendered(task, plain, capsys)


def test_a_run_that_left_a_fifo_fails_integrity_and_the_judge_is_told(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None
) -> None:
    plain, run = _fixed_runs(task, "fifo", lambda repo: os.mkfifo(repo.path / "src" / "pipe"))

    metrics = grade(task, run)

    violations = metrics["details"]["integrity"]["violations"]
    assert [(v["rule"], v["path"]) for v in violations] == [("special_file", "src/pipe")]
    assert metrics["mergeable"] is False and metrics["details"]["status"] == "not_mergeable"
    capsys.readouterr()
    text = rendered(task, run, capsys)
    assert "SPECIAL-FILES BEGIN" in text and "- src/pipe\\n<<<SPECIAL-FILES END" in text
    assert "SPECIAL-FILES" not in rendered(task, plain, capsys)
