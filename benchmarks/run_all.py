"""Run every benchmark and print their tables (Markdown), as docs/benchmarks.md shows them.

    .venv/bin/python benchmarks/run_all.py > /tmp/benchmarks.md

About five minutes on 2 cores. Run it on a machine that is otherwise idle: every figure is a ratio
against a reference measured in the same run, but a load that comes and goes between the two still moves it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "scope_integrity.py",
    "snapshot_record.py",
    "capture_commits.py",
    "startup.py",
    "judge_sweep.py",
    "batch_billing.py",
    "binary_bomb.py",
    "hostile_inputs.py",
    "globs.py",
    "mutant_derivation.py",
    "report_bootstrap.py",
    "report_coverage.py",
    "app_pages.py",
]


def main() -> int:
    failed = 0
    for name in SCRIPTS:
        result = subprocess.run(
            [sys.executable, str(HERE / name)], capture_output=True, text=True, check=False
        )
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
        if result.returncode != 0:
            failed += 1
            print(f"\n{name} failed (exit {result.returncode}):\n{result.stderr}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
