"""The README's demo: the ``rubric`` command on the example task, end to end, in a scratch directory.

``python -m examples.demo WORK`` builds the example repository, validates the rubric, admits the task
(§5), then replays each shipped agent run the way a benchmark framework would: snapshot the ignored
files, apply the agent's change, capture ``workspace.diff`` and ``ignored_created.txt``, and grade the
run (scope, test integrity, the judge, mergeable and merge_score). The judge is the scripted one
(``examples/judge_scripted.json``), a deterministic stand-in that is labelled as scripted wherever it
shows. Everything is written under WORK; nothing under examples/ changes.

Exit code 0 when every step gave the result the example is built to show, 1 otherwise.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from examples.build import JUDGE_SCRIPTED, MANIFEST, RUNS, TASK_ID, TASKS, build_example_repo, git
from grading.cli import main as rubric

TASK_DIR = TASKS / TASK_ID
# What each run is built to show: exit codes of scope, integrity and grade.
EXPECTED = {"good": (0, 0, 0), "scope_creep": (1, 0, 1)}
RUN_FILES = ("run.json", "grade.json", "tests_list.txt")


def _step(title: str, argv: list[str | Path], expected: int) -> bool:
    print(f"\n$ rubric {' '.join(str(a) for a in argv)}    # {title}", flush=True)
    code = rubric([str(a) for a in argv])
    sys.stdout.flush()
    verdict = "as expected" if code == expected else f"UNEXPECTED (wanted exit {expected})"
    print(f"-> exit {code}, {verdict}", flush=True)
    return code == expected


def replay_run(name: str, work: Path) -> tuple[Path, bool]:
    """Replay a shipped run in a fresh workspace and capture it into WORK/runs/NAME; True if identical."""
    shipped = RUNS / name
    workspace = work / "workspaces" / name
    base = build_example_repo(workspace)
    before = work / f"{name}.before.txt"
    ok = _step("before the agent runs", ["snapshot", workspace, "-o", before], 0)
    # The agent's work: its change, and the ignored files its test run left behind.
    git(workspace, "apply", str(shipped / "workspace.diff"))
    for rel in (shipped / "ignored_created.txt").read_text(encoding="utf-8").splitlines():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text("left by the agent's test run\n", encoding="utf-8")
    run_dir = work / "runs" / name
    ok &= _step(
        "after the agent, before grade",
        ["capture", workspace, "--base", base, "--before", before, "--out", run_dir],
        0,
    )
    for file in RUN_FILES:  # written by the framework and the repository's grader
        shutil.copyfile(shipped / file, run_dir / file)
    same = all(
        (run_dir / f).read_bytes() == (shipped / f).read_bytes()
        for f in ("workspace.diff", "ignored_created.txt")
    )
    print(f"captured files {'match' if same else 'DIFFER from'} examples/runs/{name}/")
    return run_dir, ok and same


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m examples.demo WORK", file=sys.stderr)
        return 2
    work = Path(args[0])
    work.mkdir(parents=True, exist_ok=True)
    judge = f"scripted:{JUDGE_SCRIPTED}"
    cache: list[str | Path] = ["--cache", work / "verdicts.sqlite"]
    store: list[str | Path] = ["--store", work / "admission.sqlite"]
    ok = _step("the rubric's authoring rules", ["validate", TASK_DIR / "rubric.json"], 0)
    ok &= _step(
        "admission: empty, oracle, lazy, lazy + reviewer comment, alt",
        [
            "check",
            TASK_DIR,
            "--manifest",
            MANIFEST,
            "--judge",
            judge,
            *store,
            *cache,
        ],
        0,
    )
    for name, (scope_code, integrity_code, grade_code) in EXPECTED.items():
        print(f"\n== run {name}")
        run_dir, replayed = replay_run(name, work)
        ok &= replayed
        ok &= _step("scope", ["scope", TASK_DIR, run_dir], scope_code)
        ok &= _step(
            "test integrity", ["integrity", TASK_DIR, run_dir, "--manifest", MANIFEST], integrity_code
        )
        ok &= _step(
            "mergeable",
            # The same admission store as the check above, so the results are not provisional.
            ["grade", TASK_DIR, run_dir, "--manifest", MANIFEST, "--judge", judge, *cache, *store],
            grade_code,
        )
    print("\ndemo:", "every step as expected" if ok else "SOME STEP WAS NOT AS EXPECTED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
