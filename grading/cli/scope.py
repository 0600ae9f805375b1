"""``rubric scope TASK_DIR RUN_DIR [--json]``: exit 0 in scope, 1 out of scope, 2 bad input."""

from __future__ import annotations

import argparse
from pathlib import Path

from grading.checks.scope import scope_for_run
from grading.cli.common import Subparsers, add_json_flag, print_json
from grading.words import counted

_RULE_TEXT = {
    "outside_allowed": "outside allowed_globs",
    "denied": "matches denied_globs",
    "ignored_in_denied": "ignored file created under denied_globs",
}


def register(subparsers: Subparsers) -> None:
    scope = subparsers.add_parser(
        "scope",
        help="check a run's workspace diff against the rubric's scope",
        description="Check RUN_DIR/workspace.diff and RUN_DIR/ignored_created.txt against the scope of "
        "TASK_DIR/rubric.json (spec §3). Exit 0 in scope, 1 out of scope, 2 bad input.",
    )
    scope.add_argument("task_dir", type=Path, metavar="TASK_DIR")
    scope.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    scope.add_argument(
        "--rubric",
        type=Path,
        metavar="PATH",
        help="the rubric.json to use instead of TASK_DIR/rubric.json (a held-out rubric)",
    )
    add_json_flag(scope)
    scope.set_defaults(handler=run_scope)


def run_scope(args: argparse.Namespace) -> int:
    result = scope_for_run(args.task_dir, args.run_dir, args.rubric)
    if args.json:
        print_json(result)
    else:
        verdict = "in scope" if result.in_scope else "OUT OF SCOPE"
        files, lines = (
            counted(result.changed_files, "changed file"),
            counted(result.changed_lines, "changed line"),
        )
        print(f"{verdict}: {files}, {lines}")
        for violation in result.violations:
            if violation.rule == "too_many_files":
                print(f"  too_many_files: {counted(result.changed_files, 'file')} is more than max_files")
            elif violation.rule == "too_many_lines":
                lines = counted(result.changed_lines, "line")
                print(f"  too_many_lines: {lines} is more than max_changed_lines")
            else:
                # repr: a path may hold a newline or a tab, and must not forge another output line
                print(f"  {violation.rule}: {violation.path!r} ({_RULE_TEXT[violation.rule]})")
    return 0 if result.in_scope else 1
