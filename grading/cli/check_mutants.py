"""``rubric check --mutants``: the oracle's mutants judged beside the admission rows (an authoring aid).

They never change the admission verdict or the exit code. ``--harmless FILE`` names mutants a maintainer
decided are fine to leave mergeable: one ``<mutant id> <reason>`` per line, ``#`` comments allowed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from grading.admission.store import AdmissionReport
from grading.errors import InputError, printable
from grading.judge.backend import Backend
from grading.judge.cache import VerdictCache
from grading.judge.runner import JudgeSettings
from grading.mutants.derive import DEFAULT_MAX_MUTANTS
from grading.mutants.judging import MutantReport, MutantRow, check_mutants, load_harmless


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: not a whole number") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value}: must be 0 or more")
    return number


def add_mutant_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mutants",
        action="store_true",
        help="also judge mutants of oracle.diff (hunks, files, places left out; conditions swapped back) and "
        "list those the rubric still calls mergeable; never changes admission or the exit code",
    )
    parser.add_argument(
        "--max-mutants",
        type=_count,
        metavar="N",
        help=f"with --mutants: judge at most N mutants, taken in turn from each kind "
        f"(default {DEFAULT_MAX_MUTANTS})",
    )
    parser.add_argument(
        "--harmless",
        type=Path,
        metavar="FILE",
        help="with --mutants: mutants marked harmless, one '<mutant id> <reason>' per line",
    )


def harmless_marks(args: argparse.Namespace) -> dict[str, str] | None:
    """The marks of ``--harmless`` (read before any judge call, so a bad file costs nothing); None without
    ``--mutants``. InputError when a flag needs ``--mutants`` or the file is bad."""
    if not args.mutants:
        for flag, value in (("--max-mutants", args.max_mutants), ("--harmless", args.harmless)):
            if value is not None:
                raise InputError(None, "only with --mutants", flag)
        return None
    return load_harmless(args.harmless) if args.harmless is not None else {}


def run_mutants(
    args: argparse.Namespace,
    backend: Backend,
    marks: dict[str, str],
    cache: VerdictCache,
    settings: JudgeSettings,
) -> MutantReport:
    return check_mutants(
        args.task_dir,
        args.manifest,
        backend,
        max_mutants=DEFAULT_MAX_MUTANTS if args.max_mutants is None else args.max_mutants,
        harmless=marks,
        cache=cache,
        settings=settings,
        rubric_path=args.rubric,
        task_json=args.task_json,
        checkout=args.checkout,
        prompt_style=args.prompt_style,
    )


def _status(row: MutantRow) -> str:
    if row.judge_failure is not None:
        return "failure"
    if row.caught:
        return "caught"
    return "harmless" if row.harmless else "MERGEABLE"


def print_mutants(report: MutantReport) -> None:
    tag = " (scripted judge)" if report.scripted else ""
    still = len(report.still_mergeable)
    print(
        f"mutants of oracle.diff{tag}, an authoring aid (admission is unchanged): {report.total} judged, "
        f"{report.caught} caught, {report.harmless} marked harmless, {still} still mergeable"
        + (f", {report.judge_failures} judge failures" if report.judge_failures else "")
        + f"; {report.calls} judge calls"
    )
    width = max((len(row.id) for row in report.rows), default=0)
    for row in report.rows:
        line = f"{_status(row):9} {row.id.ljust(width)}  {row.description}  actual: {row.actual}"
        if row.harmless:
            line += f"  (harmless: {row.harmless_reason})"
        print(printable(line))
    for note in report.notes:
        print(f"note: {note}")
    if report.unknown_harmless:
        print(
            printable(
                f"note: marked harmless but not among these mutants: {', '.join(report.unknown_harmless)}"
            )
        )
    if still:
        print(
            f"{still} mutant{'s' if still > 1 else ''} still mergeable: add the blocker each reveals, or "
            "mark it harmless (--harmless FILE): " + ", ".join(report.still_mergeable)
        )


def with_mutants(admission: AdmissionReport, report: MutantReport) -> dict[str, Any]:
    """The ``--json`` object: the admission report as without ``--mutants``, and a ``mutants`` key."""
    return {**admission.model_dump(mode="json", by_alias=True), "mutants": report.model_dump(mode="json")}
