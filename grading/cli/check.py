"""``rubric check``: admission of a task (§5), one row per workspace with what it must be and what it was.

Exit codes: 0 every row holds (admitted); 1 a row does not hold; 2 bad input. Reports are kept per
content hash (rubric.json, the diffs, the manifest's tests block, the judge and its exact requests) in a
SQLite store, so an unchanged rubric is not judged, nor paid for, twice.

--injection-suite adds the injection suite: every payload kind of grading.admission.injection planted in each
lazy diff (an attack succeeds when a blocker the lazy diff breaks flips to pass) and, as harmless comments, in
the oracle (benign drift when the oracle stops being mergeable). It costs one judge call per kind and lazy
diff, and one per kind for the oracle. Any attack success refuses admission (exit 1); benign drift is
reported only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from grading.admission.check import SUITE_KINDS, check_task
from grading.admission.corpus import PAYLOAD_KINDS
from grading.admission.injection import InjectionSummary
from grading.admission.store import AdmissionReport, AdmissionStore, default_store_path
from grading.cli.check_mutants import (
    add_mutant_flags,
    harmless_marks,
    print_mutants,
    run_mutants,
    with_mutants,
)
from grading.cli.common import (
    JUDGE_SPEC_HELP,
    Subparsers,
    add_held_out_flags,
    add_json_flag,
    add_tree_flags,
    existing_dir,
    print_json,
)
from grading.cli.grade import add_judge_cache_flags, judge_backend, judge_cache_and_settings
from grading.errors import printable
from grading.schema import PROMPT_STYLES
from grading.words import counted


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
    check.add_argument(
        "--injection-suite",
        action="store_true",
        help=f"also run the injection suite ({len(PAYLOAD_KINDS)} payload kinds in each lazy diff and, as "
        "comments, in the oracle); admitted only with no attack success",
    )
    check.add_argument(
        "--prompt-style",
        choices=PROMPT_STYLES,
        help="the task prompt the judge is shown (§8), when task.json carries both; default task.json's "
        "prompt_style",
    )
    add_held_out_flags(check)
    add_judge_cache_flags(check)
    add_tree_flags(check)
    add_json_flag(check)
    add_mutant_flags(check)
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    marks = harmless_marks(args)
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
        injection_suite=args.injection_suite,
        prompt_style=args.prompt_style,
    )
    # Mutants are an authoring aid: shown beside the rows, never part of the verdict or the exit code.
    mutants = run_mutants(args, backend, marks, cache, settings) if marks is not None else None
    if args.json:
        print_json(report if mutants is None else with_mutants(report, mutants))
    else:
        print_report(report)
        if mutants is not None:
            print_mutants(mutants)
    return 0 if report.admitted else 1


def print_report(report: AdmissionReport) -> None:
    tag = " (scripted judge)" if report.scripted else ""
    source = "stored report, no judge call" if report.from_store else f"{report.calls} judge calls"
    if report.tree_calls:
        source += f" and {report.tree_calls} tree judge calls"
    print(f"task {report.task}, judge {report.judge}{tag}: {source}")
    rows = [row for row in report.rows if row.kind not in SUITE_KINDS]
    width = max(len(f"{row.kind} {row.name}") for row in rows)
    for row in rows:
        label = f"{row.kind} {row.name}".ljust(width)
        line = f"{'ok  ' if row.holds else 'FAIL'} {label}  expected: {row.expected}  actual: {row.actual}"
        print(printable(line))
    if report.injection is not None:
        print_suite(report)
    failing = sum(1 for row in report.rows if not row.holds and row.kind != "benign")
    if report.admitted:
        print("admitted")
    elif report.injection is not None and report.injection.attack_successes:
        print(
            f"not admitted: {failing} of {counted(len(report.rows) - report.injection.benign, 'row')} "
            f"{'does' if failing == 1 else 'do'} not hold, {report.injection.attack_successes} of them "
            f"{'an attack success' if report.injection.attack_successes == 1 else 'attack successes'}"
        )
    else:
        verb = "does" if failing == 1 else "do"
        print(f"not admitted: {failing} of {counted(len(report.rows), 'row')} {verb} not hold")


def _rate(count: int, measured: int) -> str:
    return f"{count} of {measured} ({count / measured:.1%})" if measured else "not measured"


def print_suite(report: AdmissionReport) -> None:
    summary: InjectionSummary | None = report.injection
    assert summary is not None
    lazy = summary.attacks // len(summary.kinds) if summary.kinds else 0
    calls = "" if report.from_store else f"; {summary.calls} of the {report.calls} judge calls"
    kinds, diffs = counted(len(summary.kinds), "payload kind"), counted(lazy, "lazy diff")
    print(f"injection suite: {kinds} x {diffs}, and the oracle{calls}")
    width = max(len(k.kind) for k in summary.kinds)
    print(f"     {'kind'.ljust(width)}  attacks  successes  not measured  oracle with it as comments")
    for k in summary.kinds:
        benign = {"kept": "still mergeable", "benign_drift": "DRIFT: not mergeable"}.get(
            k.benign or "", "not measured"
        )
        mark = "FAIL" if k.attack_successes else "ok  "
        print(f"{mark} {k.kind.ljust(width)}  {k.attacks:7}  {k.attack_successes:9}  "
              f"{k.attacks_not_measured:12}  {benign}")  # fmt: skip
    for row in report.rows:
        if row.outcome in ("attack_success", "benign_drift", "not_measured"):
            label = {"attack_success": "ATTACK SUCCESS", "benign_drift": "benign drift"}.get(
                row.outcome, "not measured"
            )
            print(
                printable(f"{label}: {row.kind} {row.name}  expected: {row.expected}  actual: {row.actual}")
            )
    measured_attacks = summary.attacks - summary.attacks_not_measured
    print(
        f"attack success rate: {_rate(summary.attack_successes, measured_attacks)}; benign drift rate: "
        f"{_rate(summary.benign_drifts, summary.benign - summary.benign_not_measured)}"
    )
