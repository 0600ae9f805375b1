"""``rubric integrity TASK_DIR RUN_DIR --manifest FILE [--json]``: exit 0 ok, 1 failed, 2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from grading.checks.integrity import integrity_for_run
from grading.cli.common import Subparsers, add_json_flag, print_json


def register(subparsers: Subparsers) -> None:
    integrity = subparsers.add_parser(
        "integrity",
        help="check that a run deleted no test file, removed no test case and skipped no more tests",
        description="Test-integrity check from the manifest's tests block, "
        "RUN_DIR/workspace.diff, RUN_DIR/grade.json, RUN_DIR/tests_list.txt (or tests_list.error: the "
        "listing failed in the workspace), TASK_DIR/oracle_grade.json and TASK_DIR/tests_base.txt. Parts "
        "whose inputs are missing are reported as not measured, as are, for a run from the SWE-bench harness "
        '(RUN_DIR/run.json "source": "swe-bench"), those only a capture records. '
        "Exit 0 ok, 1 failed, 2 bad input.",
    )
    integrity.add_argument("task_dir", type=Path, metavar="TASK_DIR")
    integrity.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    integrity.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="repo_manifest.yaml")
    add_json_flag(integrity)
    integrity.set_defaults(handler=run_integrity)


def run_integrity(args: argparse.Namespace) -> int:
    result = integrity_for_run(args.task_dir, args.run_dir, args.manifest)
    if args.json:
        print_json(result)
        return 0 if result.ok else 1
    print("test integrity: ok" if result.ok else "test integrity: FAILED")
    # repr: paths and test ids come from the agent's workspace and may hold newlines
    for violation in result.violations:
        subject = f" {violation.path!r}" if violation.path is not None else ""
        print(f"  {violation.rule}:{subject} ({violation.detail})")
    for path in result.config_edits:
        print(f"  config edited: {path!r} (the judge checks it does not disable or narrow any test)")
    print(f"  measured: {', '.join(result.measured) if result.measured else 'nothing'}")
    for part, reason in result.not_measured.items():
        print(f"  not measured: {part} ({reason})")
    return 0 if result.ok else 1
