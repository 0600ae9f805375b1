"""``rubric judge TASK_DIR RUN_DIR... --judge SPEC``: the rubric judge's verdicts on runs' workspace diffs.

Exit codes: 0 when every run was judged or found too large to review (whatever the verdicts: mergeability
is ``rubric grade``'s decision), 1 when the judge failed on at least one run (no usable reply after the
retries), 2 on bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grading.binary_text import judge_text
from grading.checks.integrity import check_integrity, read_git_dir_changes
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
from grading.diff_rules import MAX_DIFF_BYTES
from grading.diffs import decode_diff, parse_diff
from grading.errors import InputError, printable
from grading.judge.backend import Backend
from grading.judge.cache import SqliteCache, cache_key, default_cache_path, describe_repeat_agreement
from grading.judge.cost import load_price_table
from grading.judge.models import JudgeResult
from grading.judge.prompt import (
    DiffTooLarge,
    check_diff_text,
    git_dir_note,
    render_request,
    select_items,
    self_ignoring_note,
    special_files_note,
    too_large_to_review,
)
from grading.judge.runner import JudgeSettings
from grading.judge.specs import make_backend, parse_decoding
from grading.judge.sweep import SweepJob, SweepResult, judge_sweep
from grading.judge.tree import base_tree_for
from grading.loaders import load_manifest, load_rubric, load_task, task_for_run
from grading.run_files import DIFF_NAME, IGNORED_CREATED_NAME, read_ignored_created_shown
from grading.schema import Rubric, TaskSpec
from grading.strict_json import read_input_bytes
from grading.words import counted


def register(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "judge",
        help="the rubric judge's verdicts on runs' workspace diffs (§4)",
        description="Judge each RUN_DIR's workspace.diff against TASK_DIR's rubric. Exit 0 when every run "
        "was judged, 1 on a judge failure, 2 on bad input.",
    )
    parser.add_argument("task_dir", type=existing_dir, metavar="TASK_DIR")
    parser.add_argument("run_dirs", type=existing_dir, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--judge", required=True, metavar="SPEC", help=JUDGE_SPEC_HELP)
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="print the exact request body per run and its cache key; call nothing",
    )
    add_json_flag(parser)
    parser.add_argument(
        "--manifest",
        type=Path,
        metavar="FILE",
        help="repo_manifest.yaml for tests.config_globs (default: ../../repo_manifest.yaml "
        "from TASK_DIR when it exists)",
    )
    parser.add_argument(
        "--decoding",
        action="append",
        metavar="NAME=VALUE",
        help="a decoding parameter sent to the model, e.g. temperature=0 (repeatable; "
        "none is sent by default)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="PATH",
        help="SQLite verdict cache (default: $RUBRIC_JUDGE_CACHE, else "
        "$XDG_CACHE_HOME/mergeability-grading/judge-cache.sqlite3)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read cached verdicts (the new ones are recorded as a regrade)",
    )
    add_regrade_flags(parser)
    add_held_out_flags(parser)
    add_tree_flags(parser)
    parser.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="diffs judged at once (default: %(default)s)"
    )
    parser.add_argument(
        "--attempts",
        type=int,
        default=3,
        metavar="N",
        help="calls per request before a judge failure (default: %(default)s)",
    )
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price table JSON (default: built-in, or $RUBRIC_JUDGE_PRICES)",
    )
    parser.add_argument(
        "--batch",
        action="store_true",
        help="anthropic and openai: send the sweep through the provider's batch API (half price, slower)",
    )
    parser.set_defaults(handler=run_judge)


def _read_diff(run_dir: Path) -> str:
    path = run_dir / DIFF_NAME
    if not path.exists():
        raise InputError(path, "file not found (write it with `rubric capture`)")
    # A diff over the judge's limit is still read: it is too large to review, not bad input (§1).
    data = read_input_bytes(path, MAX_DIFF_BYTES)
    # Bytes that are not UTF-8 reach the judge as \\xNN (grading.diffs.decode_diff), as in `rubric grade`.
    return decode_diff(data)


def _manifest_path(args: argparse.Namespace) -> Path | None:
    if args.manifest is not None:
        return Path(args.manifest)
    default = Path(args.task_dir).resolve().parent.parent / "repo_manifest.yaml"
    return default if default.is_file() else None


def config_edited(
    diff_text: str, manifest: Path | None, source: Path, ignored_created: Sequence[str] = ()
) -> bool:
    """Whether the diff edits, or the run created as an ignored file, a file matching the manifest's
    tests.config_globs (§3), as integrity sees it."""
    if manifest is None:
        return False
    tests = load_manifest(manifest).tests
    if tests is None:
        return False
    changes = parse_diff(diff_text, str(source))
    result = check_integrity(tests, changes, None, None, None, None, ignored_created)
    return bool(result.config_edits)


def _settings(args: argparse.Namespace) -> JudgeSettings:
    regrade_rate(args)
    if args.concurrency < 1 or args.attempts < 1:
        raise InputError(None, "--concurrency and --attempts must be at least 1")
    return JudgeSettings(
        attempts=args.attempts,
        concurrency=args.concurrency,
        no_cache=args.no_cache,
        regrade_sample=args.regrade_sample,
        regrade_seed=args.regrade_seed,
        prices=load_price_table(args.prices),
        tree_budget=tree_budget(args),
    )


def _print_text(label: str, result: JudgeResult, many: bool) -> None:
    tag = " (scripted judge)" if result.scripted else ""
    prefix = f"{label}: " if many else ""
    if result.failure is not None:
        print(f"{prefix}judge failure{tag}: {printable(result.failure)}")
    if result.too_large_to_review is not None:
        print(f"{prefix}not judged, no call{tag}: {printable(result.too_large_to_review)}")
    for v in result.verdicts:
        kind = "blocker" if v.kind == "blocker" else "non-blocker"
        flag = " [re-judged: verdict disagreed with its finding]" if v.flagged_inconsistent else ""
        tree = " [tree-judged]" if v.tree_judged else ""
        print(f"{prefix}{v.item_id} ({kind}) {v.verdict}{tag}{flag}{tree}: {printable(v.reason)}")
    for item_id in result.not_measured:
        why = result.not_measured_reason or "needs the base tree"
        print(f"{prefix}{item_id} (blocker) not measured (needs_tree): {why}")
    for record in result.tree:
        state = f"judge failure: {printable(record.failure)}" if record.failure else "judged"
        hit = ", cache hit" if record.cache_hit else ""
        print(
            f"{prefix}tree judge {record.item_id}: {state}{hit}, {record.tool_calls} tool calls, "
            f"cost ${record.usage.cost_usd:.4f}" + ("" if record.usage.cost_known else " (price unknown)")
        )
    cost = f"${result.usage.cost_usd:.4f}" + ("" if result.usage.cost_known else " (price unknown)")
    print(
        f"{prefix}judge {result.judge}{tag}, model {result.model_id or '-'}, calls {result.calls}, "
        f"cache {'hit' if result.cache_hit else 'miss'}, cost {cost}"
    )


def _progress(done: int, total: int, label: str, result: JudgeResult) -> None:
    width = 30
    filled = width * done // total
    state = "failed" if result.failure else ("cached" if result.cache_hit else "judged")
    if result.too_large_to_review is not None:
        state = "too large"
    sys.stderr.write(
        f"\rjudging [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {state} "
        f"{printable(label)[-40:]:<40}"
    )
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def run_judge(args: argparse.Namespace) -> int:
    task_dir = Path(args.task_dir)
    task: TaskSpec = load_task(task_dir, args.task_json)
    base_tree = None
    if args.checkout is not None:
        base_tree = base_tree_for(task, args.checkout, args.task_json or task_dir / "task.json")
    rubric: Rubric = load_rubric(args.rubric or task_dir / "rubric.json", check_files=False)
    settings = _settings(args)
    jobs = _jobs(args, task, rubric, settings)
    backend = make_backend(args.judge, decoding=parse_decoding(args.decoding), batch=args.batch)
    if args.render_only:
        _print_requests(jobs, rubric, backend, settings)
        return 0
    cache = SqliteCache(args.cache or default_cache_path())
    many = len(jobs) > 1
    sweep = asyncio.run(
        judge_sweep(
            jobs,
            backend,
            cache=cache,
            settings=settings,
            progress=_progress if many else None,
            base_tree=base_tree,
        )
    )
    if args.json:
        _print_sweep_json(sweep, many)
    else:
        _print_sweep_text(sweep, len(jobs), many)
    agreement = describe_repeat_agreement(sweep.results)
    if agreement is not None:
        # On stderr with --json, so stdout stays one JSON object.
        print(agreement, file=sys.stderr if args.json else sys.stdout)
    return 1 if sweep.failures else 0


def _jobs(
    args: argparse.Namespace, task: TaskSpec, rubric: Rubric, settings: JudgeSettings
) -> list[SweepJob]:
    """One job a run directory: its diff, whether it edits the tests' configuration, and what it ignored."""
    manifest = _manifest_path(args)
    jobs: list[SweepJob] = []
    for run_dir in args.run_dirs:
        diff_text = _read_diff(run_dir)
        # Too large is no bad input: the runner reports the run too large to review, with no call.
        with contextlib.suppress(DiffTooLarge):
            check_diff_text(diff_text, source=str(run_dir / DIFF_NAME), max_chars=settings.max_diff_chars)
        ignored = read_ignored_created_shown(run_dir / IGNORED_CREATED_NAME)
        edited = config_edited(diff_text, manifest, run_dir / DIFF_NAME, ignored.all_files())
        jobs.append(
            SweepJob(
                label=str(run_dir),
                task=task_for_run(task, run_dir),
                rubric=rubric,
                diff_text=diff_text,
                config_edited=edited,
                self_ignoring_dirs=ignored.self_ignoring_dirs,
                git_dir_changes=read_git_dir_changes(run_dir) or [],
                special_files=ignored.special_files,
            )
        )
    return jobs


def _print_requests(jobs: list[SweepJob], rubric: Rubric, backend: Backend, settings: JudgeSettings) -> None:
    """--render-only: each run's exact request body and cache key (or why it is too large); no call."""
    requests: list[dict[str, Any]] = []
    for job in jobs:
        too_large = too_large_to_review(judge_text(job.diff_text), settings.max_diff_chars)
        if too_large is not None:
            requests.append(
                {
                    "run_dir": job.label,
                    "cache_key": None,
                    "request": None,
                    "too_large_to_review": too_large,
                }
            )
            continue
        items, _ = select_items(rubric, config_edited=job.config_edited)
        request = render_request(
            job.task,
            rubric,
            items,
            job.diff_text,
            max_diff_chars=settings.max_diff_chars,
            ignored_note=self_ignoring_note(job.self_ignoring_dirs),
            git_dir_note=git_dir_note(job.git_dir_changes),
            special_files_note=special_files_note(job.special_files),
        )
        requests.append(
            {
                "run_dir": job.label,
                "cache_key": cache_key(backend, request),
                "request": backend.render(request),
            }
        )
    print(json.dumps({"requests": requests}, indent=2, ensure_ascii=False))


def _print_sweep_json(sweep: SweepResult, many: bool) -> None:
    if not many:
        print_json(sweep.results[0])
        return
    print_json(
        {
            "runs": [
                {"run_dir": label, "result": r.model_dump(mode="json")}
                for label, r in zip(sweep.labels, sweep.results, strict=True)
            ],
            "calls": sweep.calls,
            "cache_hits": sweep.cache_hits,
            "failures": sweep.failures,
            "usage": sweep.usage.model_dump(mode="json"),
            "tree_calls": sweep.tree_calls,
            "tree_usage": sweep.tree_usage.model_dump(mode="json"),
        }
    )


def _print_sweep_text(sweep: SweepResult, runs: int, many: bool) -> None:
    for label, result in zip(sweep.labels, sweep.results, strict=True):
        _print_text(label, result, many)
    if many:
        unknown = "" if sweep.usage.cost_known else " (some prices unknown)"
        cost = f"${sweep.usage.cost_usd:.4f}{unknown}"
        print(
            f"sweep: {counted(runs, 'run')}, {counted(sweep.calls, 'call')}, "
            f"{counted(sweep.cache_hits, 'cache hit')}, {counted(sweep.failures, 'judge failure')}, "
            f"cost {cost}"
        )
        if sweep.tree_calls:
            print(f"tree judge: {counted(sweep.tree_calls, 'call')}, cost ${sweep.tree_usage.cost_usd:.4f}")
