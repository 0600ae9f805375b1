"""``rubric grade``: the §1 outcome of one run, written to metrics.json.

Exit codes: 0 the run is mergeable, or not measured (no rubric.json: nothing to check); 1 it is not
mergeable, or the outcome could not be decided (grader failure, judge failure); 2 bad input, and then
no metrics.json is written. In every other case metrics.json is written before the exit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.admission.store import AdmissionStore, default_store_path
from grading.checks.outcome import RunMetrics, grade_run
from grading.cli.common import (
    JUDGE_SPEC_HELP,
    Subparsers,
    add_held_out_flags,
    add_json_flag,
    add_regrade_flags,
    add_tree_flags,
    existing_dir,
    print_json,
    regrade_rate,
    tree_budget,
)
from grading.errors import printable
from grading.judge.backend import Backend
from grading.judge.cache import SqliteCache, default_cache_path, describe_repeat_agreement
from grading.judge.cost import load_price_table
from grading.judge.runner import JudgeSettings
from grading.judge.specs import check_second_judge, make_backend, parse_decoding
from grading.words import counted


def register(subparsers: Subparsers) -> None:
    grade = subparsers.add_parser(
        "grade",
        help="scope, integrity and the judge for one run: mergeable and merge_score into metrics.json",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    grade.add_argument("task_dir", type=existing_dir, metavar="TASK_DIR")
    grade.add_argument("run_dir", type=existing_dir, metavar="RUN_DIR")
    grade.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="repo_manifest.yaml")
    grade.add_argument(
        "--judge",
        required=True,
        metavar="SPEC",
        help="the primary judge, whose verdicts count: " + JUDGE_SPEC_HELP,
    )
    grade.add_argument(
        "--second-judge",
        metavar="SPEC",
        help="a judge of another model family, recorded only (the same forms as --judge)",
    )
    grade.add_argument(
        "--allow-same-family",
        action="store_true",
        help="accept a second judge of the primary judge's model family (refused by default)",
    )
    grade.add_argument(
        "--second-judge-sample",
        type=float,
        default=1.0,
        metavar="RATE",
        help="share of runs the second judge grades, chosen by the diff's sha256 so the same runs are "
        "chosen every time (default: %(default)s, every run)",
    )
    add_held_out_flags(grade)
    grade.add_argument(
        "--store",
        type=Path,
        metavar="PATH",
        help="admission reports (SQLite) that decide 'provisional'; default $RUBRIC_ADMISSION_STORE or "
        "under $XDG_CACHE_HOME",
    )
    add_judge_cache_flags(grade)
    add_tree_flags(grade)
    add_regrade_flags(grade)
    grade.add_argument(
        "--second-decoding",
        action="append",
        metavar="NAME=VALUE",
        help="a decoding parameter for the second judge (repeatable; none by default)",
    )
    add_json_flag(grade)
    grade.set_defaults(handler=run_grade)


def add_judge_cache_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache", type=Path, metavar="PATH", help="verdict cache (SQLite); default under $XDG_CACHE_HOME"
    )
    parser.add_argument("--no-cache", action="store_true", help="call the judge even on a cached verdict")
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price table JSON (default: built-in, or $RUBRIC_JUDGE_PRICES)",
    )
    parser.add_argument(
        "--decoding",
        action="append",
        metavar="NAME=VALUE",
        help="a decoding parameter sent to the judge, e.g. temperature=0 (repeatable; "
        "none is sent by default)",
    )


def judge_cache_and_settings(args: argparse.Namespace) -> tuple[SqliteCache, JudgeSettings]:
    settings = JudgeSettings(
        no_cache=args.no_cache,
        prices=load_price_table(args.prices),
        regrade_sample=regrade_rate(args),
        regrade_seed=getattr(args, "regrade_seed", 0),
        tree_budget=tree_budget(args),
    )
    return SqliteCache(args.cache or default_cache_path()), settings


def judge_backend(spec: str, decoding: list[str] | None, flag: str = "--decoding") -> Backend:
    """The backend for a judge spec with its ``NAME=VALUE`` decoding parameters (InputError when bad)."""
    return make_backend(spec, decoding=parse_decoding(decoding, flag))


def run_grade(args: argparse.Namespace) -> int:
    primary = judge_backend(args.judge, args.decoding)
    second = None
    if args.second_judge:
        second = judge_backend(args.second_judge, args.second_decoding, "--second-decoding")
        # Refused before anything is read or called: a same-family pair would be paid for and then useless.
        check_second_judge(args.judge, args.second_judge, allow_same_family=args.allow_same_family)
    cache, settings = judge_cache_and_settings(args)
    metrics = grade_run(
        args.task_dir,
        args.run_dir,
        args.manifest,
        primary,
        second,
        cache=cache,
        settings=settings,
        rubric_path=args.rubric,
        task_json=args.task_json,
        admissions=AdmissionStore(args.store or default_store_path()),
        allow_same_family=args.allow_same_family,
        second_sample=args.second_judge_sample,
        checkout=args.checkout,
    )
    if args.json:
        print_json(metrics.to_json_dict())
    else:
        print_summary(metrics, args.run_dir / "metrics.json")
    for label, result in (("judge", metrics.details.judge), ("second judge", metrics.details.second_judge)):
        line = describe_repeat_agreement([result]) if result is not None else None
        if line is not None:
            # On stderr with --json, so stdout stays one JSON object.
            print(f"{label}: {line}", file=sys.stderr if args.json else sys.stdout)
    if metrics.mergeable is True or metrics.details.status == "not_measured":
        return 0
    return 1


def _verdict_line(label: str, metrics: RunMetrics, second: bool) -> str | None:
    result = metrics.details.second_judge if second else metrics.details.judge
    if result is None:
        return None
    tag = " (scripted)" if result.scripted else ""
    if result.failure is not None:
        return f"{label}: {result.judge}{tag}: judge failure: {printable(result.failure)}"
    if result.too_large_to_review is not None:
        return f"{label}: {result.judge}{tag}: not called: {printable(result.too_large_to_review)}"
    verdicts = ", ".join(
        f"{v.item_id} {v.verdict}" + (" (tree-judged)" if v.tree_judged else "") for v in result.verdicts
    )
    skipped = ""
    if result.not_measured:
        why = result.not_measured_reason or "needs_tree"
        skipped = f"; not measured: {', '.join(result.not_measured)} ({why})"
    hit = " [cache hit]" if result.cache_hit else ""
    tree = ""
    if result.tree:
        tool_calls = sum(r.tool_calls for r in result.tree)
        unknown = "" if result.tree_usage.cost_known else " (price unknown)"
        tree = (
            f"; tree judge: {counted(len(result.tree), 'item')}, {counted(tool_calls, 'tool call')}, "
            f"${result.tree_usage.cost_usd:.4f}{unknown}"
        )
    return f"{label}: {result.judge}{tag}{hit}: {verdicts}{skipped}{tree}"


def print_summary(metrics: RunMetrics, path: Path) -> None:
    d = metrics.details
    score = "null" if metrics.merge_score is None else f"{metrics.merge_score:.3f}"
    mergeable = "null" if metrics.mergeable is None else str(metrics.mergeable).lower()
    passed = str(metrics.grade_metrics["pass"]).lower()
    print(f"{d.status}: mergeable {mergeable}, merge_score {score}, pass {passed}")
    if metrics.provisional:
        print(
            "  provisional: the admission store holds no passing `rubric check` "
            "of this rubric with this judge"
        )
    for reason in d.reasons:
        print(f"  - {printable(reason)}")
    if d.judge_skipped:
        print(f"judge {printable(d.judge_skipped)}")
    for line in (_verdict_line("judge", metrics, False), _verdict_line("second judge", metrics, True)):
        if line:
            print(printable(line))
    if d.second_judge_skipped:
        print(f"second judge {d.second_judge_skipped}")
    print(f"wrote {path}")
