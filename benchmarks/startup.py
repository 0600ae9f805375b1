"""Start-up of the ``rubric`` command: what each subcommand costs before it does any work, and a whole
``rubric capture`` process against git doing the same diff.

    .venv/bin/python benchmarks/startup.py [--repeat N]

Each subcommand imports only its own module (grading/cli/rubric.py), and ``rubric --help`` none: scope,
integrity, validate and capture load no part of the judge (asyncio, the SQLite verdict cache), and no
subcommand loads a provider SDK unless a judge of that provider runs. The references, measured in turns
with the commands (one run of each per round; medians): the interpreter importing what a command line
tool needs anyway (``python -c "import argparse, json, pathlib, subprocess"``), and for ``rubric capture``
of a 5-file change in a 300-file repository, ``git add -N . && git diff --binary HEAD`` in a copy of the
same work tree (a shell runs both git commands, as a harness would).

Every command runs twice per round: with the bytecode cache in place (compiled once into a temporary
``PYTHONPYCACHEPREFIX``, as an installed package has it: the goal's figure), and with
``PYTHONDONTWRITEBYTECODE=1`` and no cache, so that every module of grading is compiled from source on
every start (what a checkout run with that variable set, like this project's development shell, pays).
Beside the wall-clock medians, the CPU time (user and system of the child) is reported, which a loaded
machine moves less.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import REPO_ROOT, RUBRIC, Goal, Row, bench_rubric, env, git, load, machine, print_table, run

BARE = [sys.executable, "-c", "import argparse, json, pathlib, subprocess"]
BARE_LABEL = '`python -c "import argparse, json, pathlib, subprocess"`'

SDKS = ("anthropic", "openai", "asyncio", "sqlite3")
PROBE = """
import json, sys
from grading.cli.rubric import main
main(sys.argv[1:])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded(argv: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env(),
                         cwd=REPO_ROOT, check=False).stdout.splitlines()  # fmt: skip
    return [m for m in json.loads(out[-1]) if m in SDKS] if out else ["(failed)"]


def _child_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_in(cmd: Sequence[str | Path], environment: dict[str, str]) -> None:
    result = subprocess.run([str(c) for c in cmd], env=environment, capture_output=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {result.returncode}\n{result.stderr.decode()}")


def environments(pycache: Path) -> dict[str, dict[str, str]]:
    """ "cached": bytecode compiled once into ``pycache`` (as installed); "compiled": none, every start
    compiles grading from source."""
    cached = {**env(), "PYTHONPYCACHEPREFIX": str(pycache)}
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    return {"cached": cached, "compiled": {**env(), "PYTHONDONTWRITEBYTECODE": "1"}}


def medians_in_turns(
    commands: dict[str, Sequence[str | Path]], repeat: int, environment: dict[str, str] | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """The median of ``repeat`` runs of each command, wall clock and CPU (user and system of the child),
    one run of each per round, so that a load that comes and goes falls on every command alike."""
    environment = environment or env()
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            used, started = _child_cpu(), time.perf_counter()
            _run_in(cmd, environment)
            times[name].append(time.perf_counter() - started)
            cpu[name].append(_child_cpu() - used)
    return (
        {name: statistics.median(found) for name, found in times.items()},
        {name: statistics.median(found) for name, found in cpu.items()},
    )


def capture_case(root: Path) -> tuple[list[str], list[str]]:
    """A 300-file repository with a 5-file change (4 edits, 1 new file) and its snapshot: the ``rubric
    capture`` command line, and the git reference's, run in a copy of the same work tree."""
    repo = root / "capture-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(300):
        d = repo / "src" / f"pkg{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text("".join(f"def f{j}():\n    return {j}\n" for j in range(40)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    snapshot = root / "capture-snapshot"
    run([*RUBRIC, "snapshot", str(repo), "--output", str(snapshot)])
    for i in range(4):
        path = repo / "src" / f"pkg{i}" / f"mod{i}.py"
        path.write_text(path.read_text() + "# edited\n")
    (repo / "src" / "new.py").write_text("NEW = 1\n")
    copy = root / "capture-reference"
    shutil.copytree(repo, copy, symlinks=True)
    rubric = [*RUBRIC, "capture", str(repo), "--base", "HEAD", "--before", str(snapshot),
              "--out", str(root / "capture-run")]  # fmt: skip
    reference = ["sh", "-c", f"cd '{copy}' && git add -N . && git diff --binary HEAD >/dev/null"]
    return rubric, reference


def measure(repeat: int) -> list[Goal]:
    """Time every command in both environments (:func:`environments`), print the table, return the goals."""
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        commands = subcommands(root)
        capture, reference = capture_case(root)
        timed: dict[str, Sequence[str | Path]] = {
            "python -c pass": [sys.executable, "-c", "pass"],
            BARE_LABEL: BARE,
            **{label: [*RUBRIC, *argv] for label, argv in commands.items()},
            "capture": capture,
            "reference": reference,
        }
        kinds = environments(root / "pycache")
        for cmd in timed.values():
            _run_in(cmd, kinds["cached"])  # writes the bytecode cache
        found = {kind: medians_in_turns(timed, repeat, environment) for kind, environment in kinds.items()}
        # while the files the commands read are still there (rubric judge failed on a removed task)
        loads = {label: loaded(argv) for label, argv in commands.items() if label != "`rubric --help`"}
    wall, cpu = found["cached"]
    rows = [Row(BARE_LABEL, wall[BARE_LABEL], "`python -c pass`", wall["python -c pass"], None)]
    notes = []
    for label in commands:
        goal = 3.0 if label == "`rubric --help`" else None
        rows.append(Row(label, wall[label], BARE_LABEL, wall[BARE_LABEL], goal))
        if label != "`rubric --help`":
            notes.append(f"{label} loads: {', '.join(loads[label]) or 'none'} (of {', '.join(SDKS)})")
    capture_label = "`rubric capture`, 5 files changed of 300"
    git_label = "`git add -N . && git diff --binary HEAD`"
    rows.append(Row(capture_label, wall["capture"], git_label, wall["reference"], 6.0))
    rows.append(Row(capture_label, wall["capture"], BARE_LABEL, wall[BARE_LABEL], None))
    rows.append(
        Row(f"{capture_label}, CPU time", cpu["capture"], f"{git_label}, CPU time", cpu["reference"], None)
    )
    help_label = "`rubric --help`"
    rows.append(
        Row(f"{help_label}, CPU time", cpu[help_label], f"{BARE_LABEL}, CPU time", cpu[BARE_LABEL], None)
    )
    wall_c, _ = found["compiled"]
    rows.append(
        Row(f"{capture_label}, no bytecode cache", wall_c["capture"], git_label, wall_c["reference"], None)
    )
    rows.append(
        Row(f"{help_label}, no bytecode cache", wall_c[help_label], BARE_LABEL, wall_c[BARE_LABEL], None)
    )
    print_table(
        "`rubric` start-up",
        rows,
        [
            "; ".join(notes) + ".",
            f"Median of {repeat} runs each, the commands taken in turns, with the bytecode cache in place "
            "unless the row says otherwise (then PYTHONDONTWRITEBYTECODE=1: grading compiled at each start); "
            f"{load()}; {machine()}.",
        ],
    )
    help_ratio = wall["`rubric --help`"] / wall[BARE_LABEL]
    capture_ratio = wall["capture"] / wall["reference"]
    note = (
        f"CPU time {cpu['capture'] / cpu['reference']:.1f}x; without a bytecode cache "
        f"{wall_c['capture'] / wall_c['reference']:.1f}x; {load()}"
    )
    return [
        Goal("issue 34 §2: start-up", "`rubric --help` against the bare interpreter", help_ratio, 3.0,
             note=f"CPU time {cpu['`rubric --help`'] / cpu[BARE_LABEL]:.2f}x; {load()}"),
        Goal("issue 34 §2: start-up", "`rubric capture` (5 of 300 files) against git", capture_ratio, 6.0,
             note=note),
    ]  # fmt: skip


def subcommands(root: Path) -> dict[str, list[str]]:
    """The subcommands timed against the bare interpreter, with the files they read made in ``root``."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "a.py").write_text("b\n")
    run_dir = root / "run"
    run_dir.mkdir()
    (run_dir / "workspace.diff").write_bytes(git(repo, "diff", "HEAD"))
    task = root / "task"
    task.mkdir()
    rubric_json = bench_rubric(["**"])
    (task / "rubric.json").write_text(json.dumps(rubric_json))
    (task / "task.json").write_text(json.dumps({"id": rubric_json["task"], "prompt": "Fix it."}))
    manifest = root / "repo_manifest.yaml"
    manifest.write_text('tests:\n  globs: ["tests/**"]\n')
    script = root / "judge.json"
    script.write_text(json.dumps({"default": {}}))
    return {
        "`rubric --help`": ["--help"],
        "`rubric validate`": ["validate", str(task / "rubric.json")],
        "`rubric scope`": ["scope", str(task), str(run_dir)],
        "`rubric integrity`": ["integrity", str(task), str(run_dir), "--manifest", str(manifest)],
        "`rubric judge --render-only` (scripted)": [
            "judge", str(task), str(run_dir), "--judge", f"scripted:{script}", "--render-only"],
    }  # fmt: skip


def goals(quick: bool = False) -> list[Goal]:
    """Issue 34 §2: ``--help`` <= 3x the bare interpreter, a whole capture <= 6x git. Quick: 5 rounds."""
    return measure(5 if quick else 9)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    measure(args.repeat)


if __name__ == "__main__":
    main()
