"""Run folders graded for ``rubric report`` (one per outcome) and the calls its tests share:
test_cli_report.py and test_label_weighting.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from grading.checks.outcome import grade_run
from grading.cli.rubric import main
from grading.judge.cache import MemoryCache
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

# Each outcome of §1, and the grade.json and verdicts that produce it.
BLOCKED = {"src/calc.py": "def add(a, b):\n    return b + a\n"}
FLAKY = {"src/calc.py": "def add(a, b):\n    return (a + b)\n"}


class Graded:
    """A task and one run directory per outcome, graded with a primary and a second judge."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.task = Task(root)
        self.second_file = root / "second.json"
        # The second judge fails B1 everywhere: it disagrees with the primary on the mergeable run.
        self.second_file.write_text(json.dumps({"default": answers(("B1",))}))
        self.runs: dict[str, Path] = {}
        self.add("good", FIXED, {"pass": True, "own_tests_fail_on_base": 1}, answers(("N1",)))
        self.add("blocked", BLOCKED, {"pass": True, "own_tests_fail_on_base": 0}, answers(("B1",)))
        self.add("red", FIXED, {"pass": False})
        self.add("grader", FIXED, {"pass": True, "merge_score": 1})
        self.add("judge", FLAKY, {"pass": True}, answers(nowhere=("N3",)))
        no_rubric = root / "no_rubric"
        shutil.copytree(self.task.dir, no_rubric)
        (no_rubric / "rubric.json").unlink()
        self.add("unmeasured", FIXED, {"pass": True}, task_dir=no_rubric)
        self.tasks = root / "tasks"
        (self.tasks / "fix_add").mkdir(parents=True)
        self.write_task({"base_date": "2025-03-01", "prompt_style": "issue"})

    def add(
        self,
        name: str,
        files: dict[str, str],
        grade: dict[str, Any],
        verdicts: dict[str, Any] | None = None,
        task_dir: Path | None = None,
    ) -> None:
        run = self.task.make_run(name, files, grade)
        if verdicts is not None:
            answer_run(self.task, run, verdicts)
        grade_run(task_dir or self.task.dir, run, self.task.manifest, self.task.backend(),
                  f"scripted:{self.second_file}", cache=MemoryCache())  # fmt: skip
        self.runs[name] = run

    def write_task(self, extra: dict[str, Any]) -> None:
        task = {"id": "fix_add", "prompt": "add() subtracts. Fix it.", "gate": ["pass", "mergeable"], **extra}
        (self.tasks / "fix_add" / "task.json").write_text(json.dumps(task))

    def args(self, *extra: str) -> list[str]:
        return ["report", *(str(r) for r in self.runs.values()), *extra]


def report_json(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict[str, Any]:
    assert main([*args, "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def expect_error(capsys: pytest.CaptureFixture[str], args: list[str], *fragments: str) -> str:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rubric: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]
