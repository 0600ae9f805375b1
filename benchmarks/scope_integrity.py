"""Scope, integrity and capture on a large change, against git itself (spec §9 of the issue tracker's
speed goals): 3,000 files and 300,000 changed lines (a diff of about 10 MB).

    .venv/bin/python benchmarks/scope_integrity.py [--files N] [--repeat N]

Goals: ``rubric scope`` + ``rubric integrity`` within 1.5x ``git diff --numstat``; ``rubric capture``
within 1.5x ``git diff --binary``. All are whole commands (process start-up included), as a framework runs
them, with the package's bytecode compiled first (as an installed package has it: with
PYTHONDONTWRITEBYTECODE set, every run would compile every module again). Beside the fastest wall times the
table gives each command's CPU time (the fastest, user + system), which a loaded machine moves less.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import REPO_ROOT, RUBRIC, Goal, Row, bench_rubric, git, load, machine, print_table, run

LINES_PER_FILE = 200
CHANGED_PER_FILE = 50  # replaced lines: 50 removed + 50 added = 100 changed lines per file


def build(root: Path, files: int) -> tuple[Path, str, Path, Path, Path, Path]:
    """A repository with ``files`` changed files, its base commit, a snapshot, a task dir, a run dir and a
    manifest."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for n in range(files):
        path = repo / "src" / f"d{n // 100}" / f"module_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"v{n}_{i} = f({i}, {n})  # base\n" for i in range(LINES_PER_FILE)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").decode().strip()
    snapshot = root / "snapshot.txt"
    run([*RUBRIC, "snapshot", repo, "-o", snapshot])
    for n in range(files):
        path = repo / "src" / f"d{n // 100}" / f"module_{n}.py"
        lines = path.read_text().splitlines(keepends=True)
        start = 60
        for i in range(start, start + CHANGED_PER_FILE):
            lines[i] = f"v{n}_{i} = g({i}, {n})  # new\n"
        path.write_text("".join(lines))
    task = root / "task"
    task.mkdir()
    rubric = bench_rubric(["src/**"], files + 1, 10 * files * CHANGED_PER_FILE)
    (task / "rubric.json").write_text(json.dumps(rubric))
    manifest = root / "repo_manifest.yaml"
    manifest.write_text(
        'tests:\n  globs: ["**/tests/**", "**/test_*.py"]\n  config_globs: ["**/conftest.py"]\n'
    )
    run_dir = root / "run"
    return repo, base, snapshot, task, run_dir, manifest


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_in_turns(
    commands: dict[str, Sequence[str | Path]], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """The fastest wall time and the fastest CPU time (the child's user + system) of ``repeat`` runs of each
    command, taken in turns (one run of each per round)."""
    wall = dict.fromkeys(commands, float("inf"))
    cpu = dict.fromkeys(commands, float("inf"))
    for _ in range(repeat):
        for name, cmd in commands.items():
            started, used = time.perf_counter(), children_cpu()
            run(cmd)
            wall[name] = min(wall[name], time.perf_counter() - started)
            cpu[name] = min(cpu[name], children_cpu() - used)
    return wall, cpu


def measure(files: int, repeat: int) -> list[Goal]:
    # The bytecode an installed package has (the environment may forbid writing it as modules load).
    run([sys.executable, "-m", "compileall", "-q", REPO_ROOT / "grading"])
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        repo, base, snapshot, task, run_dir, manifest = build(root, files)
        capture = [*RUBRIC, "capture", repo, "--base", base, "--before", snapshot, "--out", run_dir]
        run(capture)
        diff = (run_dir / "workspace.diff").read_bytes()
        numstat_out = git(repo, "diff", "--numstat", base).decode().splitlines()
        changed = sum(int(a) + int(r) for a, r, _ in (line.split("\t", 2) for line in numstat_out))
        scope_cmd = [*RUBRIC, "scope", task, run_dir]
        integrity_cmd = [*RUBRIC, "integrity", task, run_dir, "--manifest", manifest]
        times, cpu = time_in_turns(
            {
                "numstat": ["git", "-C", repo, "diff", "--numstat", base],
                "binary": ["git", "-C", repo, "diff", "--binary", base],
                "scope": scope_cmd,
                "integrity": integrity_cmd,
                "capture": capture,
            },
            repeat,
        )
    numstat, binary, captured = times["numstat"], times["binary"], times["capture"]
    scope, integrity = times["scope"], times["integrity"]
    both_cpu = cpu["scope"] + cpu["integrity"]
    rows = [
        Row("`rubric scope`", scope, "`git diff --numstat`", numstat, None),
        Row("`rubric integrity`", integrity, "`git diff --numstat`", numstat, None),
        Row("`rubric scope` + `rubric integrity`", scope + integrity, "`git diff --numstat`", numstat, 1.5),
        Row("`rubric capture`", captured, "`git diff --binary`", binary, 1.5),
        Row("CPU: `rubric scope` + `rubric integrity`", both_cpu, "CPU: `git diff --numstat`", cpu["numstat"],
            None),
        Row("CPU: `rubric capture`", cpu["capture"], "CPU: `git diff --binary`", cpu["binary"], None),
    ]  # fmt: skip
    print_table(
        f"Scope, integrity and capture: {len(numstat_out)} files, {changed} changed lines, "
        f"{len(diff) / 1e6:.1f} MB diff",
        rows,
        [
            f"Fastest of {repeat} runs each (wall and CPU apart), the commands in turns; {load()}; "
            f"{machine()}."
        ],
    )
    note = f"fastest of {repeat}, in turns; CPU %.2fx; {load()}"
    return [
        Goal(
            "issue 34 §3: scope + integrity",
            "`rubric scope` + `rubric integrity` against `git diff --numstat` (10.7 MB)",
            (scope + integrity) / numstat,
            1.5,
            note=note % (both_cpu / cpu["numstat"]),
        ),
        Goal(
            "issue 34 §3: capture",
            "`rubric capture` against `git diff --binary` (10.7 MB)",
            captured / binary,
            1.5,
            note=note % (cpu["capture"] / cpu["binary"]),
        ),
    ]


def goals(quick: bool = False) -> list[Goal]:
    """Issue 34 §3. Quick: the fastest of 5 rounds instead of 9."""
    return measure(3000, 5 if quick else 9)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    measure(args.files, args.repeat)


if __name__ == "__main__":
    main()
