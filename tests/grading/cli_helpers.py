"""The command-line tests' shared set-up, run and reply: the caches kept under the test's own directory,
``rubric check`` and ``rubric grade`` on a task, and a judge reply that tries to escape its fence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import pytest

ESCAPE_REPLY = json.dumps(
    {
        "verdicts": [
            {
                "id": "\x1b]0;owned\x07\x1b[2J",
                "reason": "r",
                "finding": "satisfied",
                "verdict": "pass",
                "locations": [],
            }
        ]
    }
)


class CheckedTask(Protocol):
    """A task on disk with a scripted judge (tests.grading.task_helpers.Task, mutant_helpers.Task)."""

    dir: Path
    manifest: Path
    judge: Path

    def backend(self) -> Any: ...


def own_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict cache and the admission store under ``tmp_path``, whatever the environment says."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in ("RUBRIC_JUDGE_CACHE", "RUBRIC_ADMISSION_STORE"):
        monkeypatch.delenv(name, raising=False)


def check(task: CheckedTask, *extra: str) -> list[str]:
    """``rubric check``'s arguments for ``task`` with its scripted judge, its file written first."""
    task.backend()  # writes the scripted judge file
    return [
        "check",
        str(task.dir),
        "--manifest",
        str(task.manifest),
        "--judge",
        f"scripted:{task.judge}",
        *extra,
    ]


def grade_argv(task: CheckedTask, run: Path, *extra: str) -> list[str]:
    """``rubric grade``'s arguments for ``run`` of ``task`` with its scripted judge, its file written
    first."""
    task.backend()  # writes the scripted judge file
    return [
        "grade",
        str(task.dir),
        str(run),
        "--manifest",
        str(task.manifest),
        "--judge",
        f"scripted:{task.judge}",
        *extra,
    ]
