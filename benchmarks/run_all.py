"""Run every benchmark in this folder and print each goal's figure with its limit and whether it is met.

    .venv/bin/python benchmarks/run_all.py            # every script, its tables, then the goals
    .venv/bin/python benchmarks/run_all.py --quick    # only the scripts with goals(), in their quick mode
    .venv/bin/python benchmarks/run_all.py --only judge_sweep mutant_derivation

The convention a script follows to take part (docs/benchmarks.md, "Run them"): it defines, at module level,

    def goals(quick: bool = False) -> list[Goal]

which measures (printing its own tables, if it likes) and returns one ``_common.Goal`` per figure a goal
names: the figure, its value (a ratio against a reference measured in the same run, or seconds where the
goal is a time), the limit and the goal it answers. It raises ``_common.Skip("why")`` when it cannot measure
here (e.g. no database given). run_all finds ``def goals(`` in each script's source (nothing is imported
to look), and calls it in a child process with the script imported as a module (not ``__main__``), so
scripts never share state. A script without ``goals()`` is run as a command (its tables are printed) and
listed as having no goal; ``--quick`` skips those. A script with ``RUN_ALL = False`` at module level (too
long, or needing a service) is listed but run only when named by ``--only``. Files whose names start with
``_`` are not benchmarks.

Full runs take many minutes on 2 cores. Run on an otherwise idle machine: every figure is a ratio against a
reference measured in the same run, but a load that comes and goes still moves it; each goal's note gives
the load average when it was measured.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from _common import machine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MARK = "@@run_all-goals@@"
HAS_GOALS = re.compile(r"^def goals\(", re.MULTILINE)
OPTED_OUT = re.compile(r"^RUN_ALL = False", re.MULTILINE)
# Calls the script's goals() in a child process: the script imported as a module, the goals as one JSON line.
CHILD = f"""
import dataclasses, json, sys
sys.path[:0] = [{str(HERE)!r}, {str(REPO)!r}]
import importlib
module = importlib.import_module(sys.argv[1])
try:
    rows = [dataclasses.asdict(g) for g in module.goals(quick=sys.argv[2] == "quick")]
except Exception as skipped:  # _common.Skip, whether the script imported it as _common or benchmarks._common
    if type(skipped).__name__ != "Skip":
        raise
    rows = {{"skipped": str(skipped)}}
sys.stdout.flush()
print({MARK!r} + json.dumps(rows))
"""


def scripts(only: list[str]) -> list[Path]:
    found = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run_all.py")
    return [p for p in found if not only or p.stem in only]


def run_goals(path: Path, quick: bool) -> tuple[list[dict[str, object]] | str, str]:
    """The script's goals (or why there are none), and what else it printed."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, path.stem, "quick" if quick else "full"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    printed, _, tail = result.stdout.rpartition(MARK)
    if result.returncode != 0 or not tail:
        return f"failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}", result.stdout
    rows = json.loads(tail)
    if isinstance(rows, dict):
        return f"not measured: {rows['skipped']}", printed
    return rows, printed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="only scripts with goals(), in quick mode")
    parser.add_argument("--only", nargs="*", default=[], help="script names (without .py)")
    args = parser.parse_args()
    summary: list[str] = []
    failed = 0
    for path in scripts(args.only):
        source = path.read_text()
        if OPTED_OUT.search(source) and path.stem not in args.only:
            summary.append(f"| {path.name} | - | - | - | not run (RUN_ALL = False): run it by name, --only |")
            continue
        if HAS_GOALS.search(source):
            rows, printed = run_goals(path, args.quick)
            sys.stdout.write(printed)
            if isinstance(rows, str):
                failed += rows.startswith("failed")
                summary.append(f"| {path.name} | - | - | - | {rows.splitlines()[0][:200]} |")
                if rows.startswith("failed"):
                    print(f"\n{path.name} {rows}", file=sys.stderr)
                continue
            for g in rows:
                unit = "s" if g["unit"] == "s" else "x"
                summary.append(
                    f"| {path.name} | {g['goal']}: {g['figure']} | {g['value']:.3g}{unit} | "
                    f"<= {g['limit']:g}{unit} | {'met' if g['value'] <= g['limit'] else 'not met'}"  # type: ignore[operator]
                    f"{'; ' + str(g['note']) if g['note'] else ''} |"
                )
        elif args.quick:
            summary.append(f"| {path.name} | - | - | - | no goals(): not run in quick mode |")
        else:
            result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=False)
            sys.stdout.write(result.stdout)
            if result.returncode != 0:
                failed += 1
                print(f"\n{path.name} failed (exit {result.returncode}):\n{result.stderr}", file=sys.stderr)
            summary.append(f"| {path.name} | - | - | - | no goals(): tables only |")
        sys.stdout.flush()
    print("\n### Goals\n")
    print("| script | goal: figure | value | limit | met |")
    print("|---|---|---:|---:|---|")
    print("\n".join(summary))
    print(f"\n{'Quick' if args.quick else 'Full'} run; {machine()}.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
