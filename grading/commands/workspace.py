"""``rubric snapshot`` (before a run) and ``rubric capture`` (after it, before grade): spec §3."""

from __future__ import annotations

import argparse
from pathlib import Path

from grading.commands._common import Subparsers, add_json_flag, print_json
from grading.workspace import capture, write_snapshot


def register(subparsers: Subparsers) -> None:
    snapshot = subparsers.add_parser(
        "snapshot",
        help="record the ignored files present in a workspace before a run, and its .git/info/exclude",
    )
    snapshot.add_argument("workspace", type=Path, metavar="WORKSPACE", help="top level of the git work tree")
    snapshot.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE",
        help="snapshot file; write it outside the workspace, or it becomes part of the run's diff",
    )  # fmt: skip
    snapshot.set_defaults(handler=run_snapshot)

    cap = subparsers.add_parser(
        "capture", help="write workspace.diff and ignored_created.txt into a run directory"
    )
    cap.add_argument("workspace", type=Path, metavar="WORKSPACE", help="top level of the git work tree")
    cap.add_argument("--base", required=True, metavar="REV", help="the task's base commit")
    cap.add_argument(
        "--before", required=True, type=Path, metavar="FILE", help="snapshot written by `rubric snapshot`"
    )
    cap.add_argument("--out", required=True, type=Path, metavar="RUN_DIR", help="run directory to write into")
    add_json_flag(cap)
    cap.set_defaults(handler=run_capture)


def run_snapshot(args: argparse.Namespace) -> int:
    count = write_snapshot(args.workspace, args.output)
    print(f"{args.output}: {count} ignored file(s)")
    return 0


def run_capture(args: argparse.Namespace) -> int:
    result = capture(args.workspace, args.base, args.before, args.out)
    if args.json:
        print_json(result)
        return 0
    print(f"{result.diff_path}: {result.files_changed} file(s) changed, {result.diff_bytes} bytes")
    print(f"{args.out / 'ignored_created.txt'}: {len(result.ignored_created)} ignored file(s) created")
    for nested in result.nested_repositories:
        print(f"note: {nested} is a nested git repository; its files are in the diff as added files")
    for name in result.unrepresentable:
        print(f"note: git cannot track {name!r}; it is listed in ignored_created.txt instead of the diff")
    if not result.exclude_rules_recorded:
        print(
            "note: the snapshot is v1 and does not record .git/info/exclude; untracked vs ignored was "
            "decided with the current one, so files excluded there during the run are not in the diff "
            "(take snapshots with this version of `rubric snapshot`)"
        )
    if result.info_exclude_changed:
        print("note: .git/info/exclude changed since the snapshot; the capture used the snapshot's rules")
    if not result.ignore_files_recorded:
        print(
            "note: the snapshot does not record the .gitignore files (v1/v2); the base commit's stood in "
            "for the rules before the run"
        )
    for name in result.ignored_in_diff:
        print(f"note: {name!r} is ignored only by rules written during the run; it is in the diff")
    for directory in result.self_ignoring_dirs:
        files = f"{directory.file_count} file{'' if directory.file_count == 1 else 's'}"
        print(
            f"note: {directory.path + '/'!r} is a new self-ignoring directory ({files}); "
            "listed in ignored_created.txt as one line"
        )
    return 0
