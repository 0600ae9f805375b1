"""``rubric check``: admission of a task (§5), one row per workspace with what it must be and what it was.

Exit codes: 0 every row holds (admitted); 1 a row does not hold; 2 bad input. Reports are kept per
content hash (rubric.json, the diffs, the manifest's tests block, the judge and its exact requests) in a
SQLite store, so an unchanged rubric is not judged, nor paid for, twice.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grading.admission import AdmissionReport, AdmissionStore, check_task, default_store_path
from grading.commands import check_mutants
from grading.commands._common import (
    JUDGE_SPEC_HELP,
    Subparsers,
    add_held_out_flags,
    add_json_flag,
    add_tree_flags,
    existing_dir,
    print_json,
)
from grading.commands.grade import add_judge_cache_flags, judge_backend, judge_cache_and_settings
from grading.commands.judge import printable


def register(subparsers: Subparsers) -> None:
    check = subparsers.add_parser(
        "check",
        help="admission (§5): empty, oracle, lazy, lazy with a reviewer comment, and alt diffs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("task_dir", type=existing_dir, metavar="TASK_DIR")
    check.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="repo_manifest.yaml")
    check.add_argument(
        "--judge",
        required=True,
        metavar="SPEC",
        help="the judge that will grade the agents: " + JUDGE_SPEC_HELP,
    )
    check.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="admission reports (SQLite); default $RUBRIC_ADMISSION_STORE or under $XDG_CACHE_HOME",
    )
    check.add_argument("--refresh", action="store_true", help="judge again even when a report is stored")
    add_held_out_flags(check)
    add_judge_cache_flags(check)
    add_tree_flags(check)
    add_json_flag(check)
    check_mutants.add_mutant_flags(check)
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    marks = check_mutants.harmless_marks(args)
    store = AdmissionStore(args.store or default_store_path())
    cache, settings = judge_cache_and_settings(args)
    backend = judge_backend(args.judge, args.decoding)
    report = check_task(
        args.task_dir,
        args.manifest,
        backend,
        store=store,
        cache=cache,
        settings=settings,
        # --no-cache asks for the judge to be called again: a stored report would answer without a call.
        refresh=args.refresh or args.no_cache,
        rubric_path=args.rubric,
        task_json=args.task_json,
        checkout=args.checkout,
    )
    # Mutants are an authoring aid: shown beside the rows, never part of the verdict or the exit code.
    mutants = check_mutants.run_mutants(args, backend, marks, cache, settings) if marks is not None else None
    if args.json:
        print_json(report if mutants is None else check_mutants.with_mutants(report, mutants))
    else:
        print_report(report)
        if mutants is not None:
            check_mutants.print_mutants(mutants)
    return 0 if report.admitted else 1


def print_report(report: AdmissionReport) -> None:
    tag = " (scripted judge)" if report.scripted else ""
    source = "stored report, no judge call" if report.from_store else f"{report.calls} judge calls"
    if report.tree_calls:
        source += f" and {report.tree_calls} tree judge calls"
    print(f"task {report.task}, judge {report.judge}{tag}: {source}")
    width = max(len(f"{row.kind} {row.name}") for row in report.rows)
    for row in report.rows:
        label = f"{row.kind} {row.name}".ljust(width)
        line = f"{'ok  ' if row.holds else 'FAIL'} {label}  expected: {row.expected}  actual: {row.actual}"
        print(printable(line))
    failing = sum(1 for row in report.rows if not row.holds)
    print(
        "admitted" if report.admitted else f"not admitted: {failing} of {len(report.rows)} rows do not hold"
    )
