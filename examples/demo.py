"""The command-line half of the README's run command: one agent run through the whole pipeline.

``python -m examples.demo WORKDIR`` builds the example repository, snapshots its ignored files, plays
the "good" and "scope_creep" runs into the workspace as an agent would (their diffs applied, files left
uncommitted or committed), captures each workspace diff with ``rubric capture``, grades it with
``rubric grade`` (scripted judge: a deterministic stand-in for a model, for demos), and admits the task
with ``rubric check``. Every step is the real ``rubric`` command; only the judge is scripted.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from examples.build import JUDGE_SCRIPTED, MANIFEST, RUNS, TASK_ID, TASKS, build_example_repo, git
from grading.cli import main as rubric

JUDGE = f"scripted:{JUDGE_SCRIPTED}"


def _run(argv: list[str]) -> int:
    print(f"$ rubric {' '.join(argv)}", flush=True)
    code = rubric(argv)
    print(f"(exit {code})\n", flush=True)
    return code


def play_run(work: Path, name: str, commit: bool) -> Path:
    """Build a fresh workspace, apply the stored run's diff like an agent, capture it into a run dir."""
    workspace = work / f"workspace-{name}"
    base = build_example_repo(workspace)
    snapshot = work / f"{name}.snapshot"
    _run(["snapshot", str(workspace), "-o", str(snapshot)])
    git(workspace, "apply", "--whitespace=nowarn", str(RUNS / name / "workspace.diff"))
    (workspace / "build").mkdir(exist_ok=True)
    (workspace / "build" / "out.log").write_text("build output under an ignored path\n", encoding="utf-8")
    if commit:
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "-m", "agent: fix")
    run_dir = work / "runs" / name
    run_dir.mkdir(parents=True)
    for keep in ("run.json", "grade.json", "tests_list.txt"):
        shutil.copy(RUNS / name / keep, run_dir / keep)
    _run(["capture", str(workspace), "--base", base, "--before", str(snapshot), "--out", str(run_dir)])
    return run_dir


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m examples.demo WORKDIR", file=sys.stderr)
        return 2
    work = Path(argv[0])
    work.mkdir(parents=True, exist_ok=True)
    task = TASKS / TASK_ID
    cache = ["--cache", str(work / "judge-cache.sqlite3")]

    _run(["validate", str(task / "rubric.json")])
    admitted = _run(
        ["check", str(task), "--manifest", str(MANIFEST), "--judge", JUDGE, "--store", str(work / "admission.sqlite3"),
         *cache]
    )
    summary: list[tuple[str, object, object]] = []
    for name, commit in (("good", True), ("scope_creep", False)):
        run_dir = play_run(work, name, commit)
        _run(["scope", str(task), str(run_dir)])
        _run(["integrity", str(task), str(run_dir), "--manifest", str(MANIFEST)])
        _run(["grade", str(task), str(run_dir), "--manifest", str(MANIFEST), "--judge", JUDGE, *cache])
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
        summary.append((name, metrics["pass"], metrics["mergeable"]))

    print("run            pass   mergeable   (judge: scripted, demo only)")
    for name, passed, mergeable in summary:
        print(f"{name:<14} {passed!s:<6} {mergeable!s}")
    print(f"task admitted: {admitted == 0}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
