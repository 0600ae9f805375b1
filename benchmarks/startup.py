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
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import REPO_ROOT, RUBRIC, Row, bench_rubric, env, git, machine, print_table, run

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


def medians_in_turns(commands: dict[str, Sequence[str | Path]], repeat: int) -> dict[str, float]:
    """The median of ``repeat`` wall-clock runs of each command, one run of each per round, so that a load
    that comes and goes falls on every command alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            started = time.perf_counter()
            run(cmd)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(found) for name, found in times.items()}


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
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
        commands = {
            "`rubric --help`": ["--help"],
            "`rubric validate`": ["validate", str(task / "rubric.json")],
            "`rubric scope`": ["scope", str(task), str(run_dir)],
            "`rubric integrity`": ["integrity", str(task), str(run_dir), "--manifest", str(manifest)],
            "`rubric judge --render-only` (scripted)": [
                "judge", str(task), str(run_dir), "--judge", f"scripted:{script}", "--render-only"],
        }  # fmt: skip
        capture, reference = capture_case(root)
        timed: dict[str, Sequence[str | Path]] = {
            "python -c pass": [sys.executable, "-c", "pass"],
            BARE_LABEL: BARE,
            **{label: [*RUBRIC, *argv] for label, argv in commands.items()},
            "capture": capture,
            "reference": reference,
        }
        found = medians_in_turns(timed, args.repeat)
        rows = [Row(BARE_LABEL, found[BARE_LABEL], "`python -c pass`", found["python -c pass"], None)]
        notes = []
        for label, argv in commands.items():
            goal = 3.0 if label == "`rubric --help`" else None
            rows.append(Row(label, found[label], BARE_LABEL, found[BARE_LABEL], goal))
            if label != "`rubric --help`":
                notes.append(f"{label} loads: {', '.join(loaded(argv)) or 'none'} (of {', '.join(SDKS)})")
        rows.append(
            Row(
                "`rubric capture`, 5 files changed of 300",
                found["capture"],
                "`git add -N . && git diff --binary HEAD`",
                found["reference"],
                6.0,
            )  # fmt: skip
        )
        rows.append(Row("`rubric capture`, 5 files changed of 300", found["capture"], BARE_LABEL,
                        found[BARE_LABEL], None))  # fmt: skip
    print_table(
        "`rubric` start-up",
        rows,
        [
            "; ".join(notes) + ".",
            f"Median of {args.repeat} runs each, the commands taken in turns; load average "
            f"{os.getloadavg()[0]:.1f}; {machine()}.",
        ],
    )


if __name__ == "__main__":
    main()
