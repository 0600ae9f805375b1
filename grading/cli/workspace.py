"""``rubric snapshot`` (before a run), ``rubric capture`` (after it, before grade) and ``rubric list-tests``
(tests.list on the base, for the task's tests_base.txt): spec §3."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.cli.common import Subparsers, add_json_flag, print_json
from grading.errors import InputError
from grading.path_lists import quote_path
from grading.run_files import TESTS_LIST_ERROR_NAME, TESTS_LIST_NAME
from grading.words import counted
from grading.workspace.diff import capture, write_snapshot
from grading.workspace.record import record_path
from grading.workspace.testlist import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    ListingFailed,
    TestListing,
    list_command,
    run_test_list,
    write_listing_error,
)

_NOTES_MAX = 20  # notes printed per kind; --json has them all


def register(subparsers: Subparsers) -> None:
    snapshot = subparsers.add_parser(
        "snapshot",
        help="record the ignored files in a workspace before a run, its info/exclude and .gitignore files",
        description="Before the agent runs: record the ignored files present in WORKSPACE, its "
        ".git/info/exclude and every .gitignore, so that capture can tell what the run created and which "
        "ignore rules the run wrote; and write FILE.git, a private record of the git state (HEAD's objects, "
        "refs, index, and a manifest of .git) from which capture diffs whatever the run does to .git. "
        "Exit 0 written, 2 bad input (not the top of a git work tree, FILE inside WORKSPACE, an "
        "unwritable FILE, or one that exists and is not a regular file: a FIFO would block).",
    )
    snapshot.add_argument("workspace", type=Path, metavar="WORKSPACE", help="top level of the git work tree")
    snapshot.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE",
        help="snapshot file, outside the workspace (its private record FILE.git goes beside it)",
    )  # fmt: skip
    snapshot.set_defaults(handler=run_snapshot)

    cap = subparsers.add_parser(
        "capture",
        help="write workspace.diff and ignored_created.txt into a run directory",
        description="After the agent runs and before the repository's grader: write RUN_DIR/workspace.diff "
        "(every change against --base, untracked files included, renames off, binary patches) and "
        "RUN_DIR/ignored_created.txt (ignored files the run created), RUN_DIR/git_dir_changes.txt (paths "
        "under .git the run changed), and with --manifest the run's "
        "tests_list.txt (or tests_list.error when the listing fails in the workspace: the run's fault when "
        "it works on the base). Exit 0 written, 1 the test listing could not run at all (the diff is still "
        "written), 2 bad input.",
    )
    cap.add_argument("workspace", type=Path, metavar="WORKSPACE", help="top level of the git work tree")
    cap.add_argument("--base", required=True, metavar="REV", help="the task's base commit")
    cap.add_argument(
        "--before", required=True, type=Path, metavar="FILE", help="snapshot written by `rubric snapshot`"
    )
    cap.add_argument("--out", required=True, type=Path, metavar="RUN_DIR", help="run directory to write into")
    cap.add_argument(
        "--manifest", type=Path, metavar="FILE",
        help="repo_manifest.yaml (the harness's copy, not the workspace's): when it declares tests.list, run "
        "it in the workspace after the diff is taken and write RUN_DIR/tests_list.txt, or "
        "RUN_DIR/tests_list.error with the failure and its last stderr lines (exit 1 if it cannot run)",
    )  # fmt: skip
    _add_listing_limits(cap)
    add_json_flag(cap)
    cap.set_defaults(handler=run_capture)

    listing = subparsers.add_parser(
        "list-tests",
        help="run the manifest's tests.list in a checkout of the base and write the task's tests_base.txt",
        description="Run tests.list (split into words, no shell; pinned environment, timeout, output cap) "
        "in CHECKOUT and write what it prints to FILE, normally TASK_DIR/tests_base.txt. "
        "Exit 0 written, 1 the command failed (nothing written), 2 bad input.",
    )
    listing.add_argument(
        "checkout", type=Path, metavar="CHECKOUT", help="a clean checkout of the base commit"
    )
    listing.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="repo_manifest.yaml")
    listing.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="e.g. TASK_DIR/tests_base.txt"
    )
    _add_listing_limits(listing)
    add_json_flag(listing)
    listing.set_defaults(handler=run_list_tests)


def _add_listing_limits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tests-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
        help=f"stop tests.list after this long (default {DEFAULT_TIMEOUT:g})",
    )  # fmt: skip
    parser.add_argument(
        "--tests-max-bytes", type=int, default=DEFAULT_MAX_BYTES, metavar="N",
        help=f"stop tests.list when it prints more than this (default {DEFAULT_MAX_BYTES})",
    )  # fmt: skip


def _listing_argv(args: argparse.Namespace) -> list[str] | None:
    if not (0 < args.tests_timeout <= 86_400) or args.tests_timeout != args.tests_timeout:
        raise InputError(None, "must be more than 0 and at most 86400 seconds", "--tests-timeout")
    if args.tests_max_bytes < 1:
        raise InputError(None, "must be at least 1", "--tests-max-bytes")
    from grading.loaders import load_manifest  # YAML and the schema: only with --manifest

    return list_command(load_manifest(args.manifest).tests, args.manifest)


def run_list_tests(args: argparse.Namespace) -> int:
    argv = _listing_argv(args)
    if argv is None:
        raise InputError(args.manifest, "the manifest declares no tests.list", "tests.list")
    try:
        listing = run_test_list(
            args.checkout, argv, args.output, timeout=args.tests_timeout, max_bytes=args.tests_max_bytes
        )
    except ListingFailed as exc:
        if args.json:
            print_json({"written": False, "error": str(exc)})
        print(f"rubric: tests.list failed: {exc}; {args.output} not written", file=sys.stderr)
        return 1
    if args.json:
        print_json({"written": True, **listing.json_safe()})
    else:
        print(f"{listing.path}: {counted(listing.test_ids, 'test id')}")
    return 0


def run_snapshot(args: argparse.Namespace) -> int:
    count = write_snapshot(args.workspace, args.output)
    print(f"{args.output}: {counted(count, 'ignored file')}; private record {record_path(args.output)}")
    return 0


def run_capture(args: argparse.Namespace) -> int:
    # The manifest is read first: a bad one is bad input, and nothing is written then.
    argv = _listing_argv(args) if args.manifest is not None else None
    result = capture(args.workspace, args.base, args.before, args.out)
    tests_list = args.out / TESTS_LIST_NAME
    error_file = args.out / TESTS_LIST_ERROR_NAME
    listing: TestListing | None = None
    failure: ListingFailed | None = None
    if argv is not None:
        # After the diff: whatever the listing writes into the workspace (caches, bytecode) is not in it.
        # Files of an earlier capture must not stand in for this one.
        tests_list.unlink(missing_ok=True)
        error_file.unlink(missing_ok=True)
        try:
            listing = run_test_list(
                args.workspace, argv, tests_list, timeout=args.tests_timeout, max_bytes=args.tests_max_bytes
            )
        except ListingFailed as exc:
            failure = exc
    if failure is not None and failure.in_workspace:
        write_listing_error(error_file, failure)
        print(
            f"rubric: tests.list failed in the workspace: {failure}; written to {error_file}: `rubric grade` "
            "makes the run not mergeable (test_listing_broken) when the listing works on the base",
            file=sys.stderr,
        )
    elif failure is not None:
        print(
            f"rubric: tests.list could not run: {failure}; {tests_list} not written, "
            "so `rubric grade` reports a grader failure for this run",
            file=sys.stderr,
        )
    code = 1 if failure is not None and not failure.in_workspace else 0
    listing_error = str(failure) if failure is not None else None
    if args.json:
        report = result.json_safe()
        if argv is not None:
            report["tests_list"] = (
                listing.json_safe()
                if listing
                else {"error": listing_error, "error_file": str(error_file) if error_file.exists() else None}
            )
        elif args.manifest is not None:
            report["tests_list"] = None  # the manifest declares no tests.list
        print_json(report)
        return code
    changed = counted(result.files_changed, "file")
    print(f"{result.diff_path}: {changed} changed, {counted(result.diff_bytes, 'byte')}")
    print(
        f"{args.out / 'ignored_created.txt'}: {counted(len(result.ignored_created), 'ignored file')} created"
    )
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
    shown = result.ignored_in_diff[:_NOTES_MAX]
    for name in shown:
        print(f"note: {name!r} is ignored only by rules written during the run; it is in the diff")
    if len(result.ignored_in_diff) > len(shown):
        print(
            f"note: ... and {len(result.ignored_in_diff) - len(shown)} more such "
            f"file{'' if len(result.ignored_in_diff) - len(shown) == 1 else 's'} (--json lists them)"
        )
    if result.git_dir_changes is None:
        print(
            "note: the snapshot has no private record (v3 or older); changes under .git are not checked "
            "(take snapshots with this version of `rubric snapshot`)"
        )
    elif result.git_dir_changes:
        names = result.git_dir_changes[:_NOTES_MAX]
        more = len(result.git_dir_changes) - len(names)
        print(
            f"note: the run changed {counted(len(result.git_dir_changes), 'path')} under .git: "
            + ", ".join(quote_path(n) for n in names)
            + (f" and {more} more (git_dir_changes.txt lists them)" if more else "")
        )
    if result.special_files:
        names = result.special_files[:_NOTES_MAX]
        more = len(result.special_files) - len(names)
        print(
            f"note: the run left {len(result.special_files)} "
            f"{'FIFO, socket or device' if len(result.special_files) == 1 else 'FIFOs, sockets or devices'} "
            "in the work tree, not read and absent from the diff: "
            + ", ".join(quote_path(n) for n in names)
            + (f" and {more} more (ignored_created.txt lists them)" if more else "")
        )
    if listing is not None:
        print(f"{listing.path}: {counted(listing.test_ids, 'test id')}")
    elif args.manifest is not None and argv is None:
        print("note: the manifest declares no tests.list; removed test cases are not measured for this run")
    for directory in result.self_ignoring_dirs:
        files = f"{directory.file_count} file{'' if directory.file_count == 1 else 's'}"
        print(
            f"note: {directory.path + '/'!r} is a new self-ignoring directory ({files}); "
            "listed in ignored_created.txt as one line"
        )
    return code
