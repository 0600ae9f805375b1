"""Real graded run directories for the report page and ``rubric report --json`` on them: shared by the
report view and report row tests."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.core.management import call_command

from rubrics_app.models import Repository, RunGrade, Task
from tests.app.runs_helpers import (
    DISAGREEING,
    PASSING,
    RUN_DIFF,
    grade,
    put_label,
    sha256_of,
    write_run,
    write_task_dir,
)

ROOT = Path(__file__).resolve().parents[2]


FAIL_DIFF = RUN_DIFF.replace(b'"fraction must be <= 1"', b'"bad fraction"')


FAILING = {**PASSING, "B1": {"verdict": "fail", "reason": "message not the one asked for"}}


# task id -> (base_date, prompt_style of its task.json)
TASKS = {
    "t_alpha": ("2025-01-10", "spec"),
    "t_beta": ("2025-06-01", "spec"),
    "t_gamma": ("2025-09-01", "issue"),
}


def build_runs(tmp_path: Path, repository: Repository) -> list[Path]:
    """24 runs (3 tasks x 2 arms x 4 repetitions) graded by the real grader with scripted judges: the
    primary fails B1 on one diff, the second judge disagrees on B1 and N2; task t_gamma's runs are graded
    with a rubric the grader did not admit (provisional); repetition 3 of arm 'plain' fails the tests."""
    checkout = tmp_path / "checkout"
    primary = tmp_path / "primary.json"
    primary.write_text(json.dumps({"default": PASSING, "by_diff_sha256": {sha256_of(FAIL_DIFF): FAILING}}))
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"default": DISAGREEING}))
    run_dirs = []
    for task_id, (base_date, style) in TASKS.items():
        task_dir = write_task_dir(checkout, task_id)
        spec = {
            "id": task_id,
            "prompt": "Fix it.",
            "prompt_style": style,
            "gate": ["pass"],
            "base_date": base_date,
        }
        (task_dir / "task.json").write_text(json.dumps(spec))
        Task.objects.create(
            repository=repository,
            task_id=task_id,
            base_date=base_date,
            gate=["pass"],
            **{"issue_prompt" if style == "issue" else "spec_prompt": "Fix it."},
        )
        for arm in ("guidance", "plain"):
            for rep in range(4):
                run_dir = write_run(
                    tmp_path / "runs", f"{task_id}-{arm}-{rep}", task_id=task_id, arm=arm, repetition=rep,
                    diff=FAIL_DIFF if rep == 2 else RUN_DIFF, passed=not (arm == "plain" and rep == 3),
                    metrics={"own_tests_fail_on_base": rep != 1, "tests_added": rep},
                )  # fmt: skip
                grade(task_dir, run_dir, f"scripted:{primary}", f"scripted:{second}",
                      provisional=task_id == "t_gamma")  # fmt: skip
                run_dirs.append(run_dir)
    call_command("import_runs", str(tmp_path / "runs"), "--repository", repository.name, stdout=io.StringIO())
    return run_dirs


def label_runs(repository: Repository) -> None:
    """Human verdicts on B1 from the review queue: the human agrees with the primary judge except on
    repetition 1 of t_beta (where the human fails B1)."""
    for g in RunGrade.objects.filter(status__in=["mergeable", "not_mergeable"]).select_related("run__task"):
        if g.metrics["details"].get("judge_skipped"):
            continue
        fails = g.run.repetition == 2 or (g.run.task.task_id == "t_beta" and g.run.repetition == 1)
        put_label(g, "B1", "fail" if fails else "pass")


def rubric_report_json(run_dirs: list[Path], *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "grading", "report", "--json", *extra, *map(str, run_dirs)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    # When and by which code it was made: compared apart (tests/app/test_report_downloads.py).
    assert data.pop("provenance")["report_format"] == data["format"]
    return data
