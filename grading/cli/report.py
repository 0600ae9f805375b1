"""``rubric report RUN_DIR...``: mergeable against test-pass per arm and model (spec §7).

Reads each RUN_DIR's run.json and metrics.json (written by ``rubric grade``). With ``--tasks DIR`` (the
directory holding ``<task-id>/task.json``; repeatable, the first that holds a task wins) the report also
knows each task's base_date (for ``--cutoffs``) and prompt_style. Output: Markdown (default), ``--json``
(one object) or ``--csv`` (one row per cell); ``--html OUT.html`` also writes one self-contained HTML file
with the charts. ``--runs-out FILE`` and ``--items-out FILE`` also write one row per run and one per
run × item × judge (``.csv`` or ``.jsonl``, by the file's extension: the columns the web app's downloads
have). Every output carries its provenance (code version and commit, bootstrap, rubrics, judges). Exit 0,
or 2 on bad input (nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from grading.atomic import write_atomic
from grading.checks.outcome import RunDetails
from grading.cli.common import Subparsers, print_json
from grading.errors import InputError
from grading.loaders import load_run
from grading.report.build import build_report
from grading.report.files import TaskIndex, load_cutoffs, load_labels, read_graded_run, read_metrics
from grading.report.html import render_report_html
from grading.report.label_rows import (
    LabelFile,
    human_mergeable_from_items,
    judged_blockers,
    label_format,
    load_label_file,
    run_inclusion_probability,
)
from grading.report.models import DEFAULT_BOOTSTRAP, DEFAULT_SEED, GradedRun
from grading.report.provenance import TaskRubric, report_provenance
from grading.report.render import report_csv, report_markdown
from grading.report.rows import ItemRow, RowFormat, RunRow, item_rows, rows_text, run_row
from grading.strict_json import read_json
from grading.words import counted


def _count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative")
    return n


def _seed(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None


def register(subparsers: Subparsers) -> None:
    report = subparsers.add_parser(
        "report",
        help="mergeable against test-pass per arm and model, with task-level intervals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    fmt = report.add_mutually_exclusive_group()
    fmt.add_argument("--json", dest="format", action="store_const", const="json", help="one JSON object")
    fmt.add_argument("--csv", dest="format", action="store_const", const="csv", help="one row per cell")
    fmt.add_argument("--md", dest="format", action="store_const", const="md", help="Markdown (default)")
    report.add_argument("--html", type=Path, metavar="OUT",
                        help="also write the report as one self-contained HTML file "
                        "(inline CSS, SVG charts)")  # fmt: skip
    report.add_argument("--tasks", type=Path, action="append", metavar="DIR",
                        help="a tasks directory holding <task-id>/task.json (base_date, prompt_style); "
                        "repeatable")  # fmt: skip
    report.add_argument("--cutoffs", type=Path, metavar="FILE",
                        help='JSON {"<model id>": "YYYY-MM-DD"}: split cells by base_date against the '
                        "model's training cutoff (needs --tasks)")  # fmt: skip
    report.add_argument("--labels", type=Path, metavar="FILE",
                        help="the labels file (.csv or .jsonl rows, as export_labels writes) or JSON "
                        '{"<run dir>": true|false}: human verdicts for the judge-error correction '
                        "(at least 20 labelled runs)")  # fmt: skip
    report.add_argument(
        "--bootstrap",
        type=_count,
        default=DEFAULT_BOOTSTRAP,
        metavar="N",
        help=f"bootstrap replicates (default {DEFAULT_BOOTSTRAP}; 0: no intervals)",
    )
    report.add_argument(
        "--seed",
        type=_seed,
        default=DEFAULT_SEED,
        metavar="N",
        help=f"bootstrap seed (default {DEFAULT_SEED}: the same runs give the same report)",
    )
    report.add_argument("--runs-out", type=Path, metavar="FILE",
                        help="also write one row per run (FILE.csv or FILE.jsonl)")  # fmt: skip
    report.add_argument("--items-out", type=Path, metavar="FILE",
                        help="also write one row per run, item and judge (.csv or .jsonl)")  # fmt: skip
    report.set_defaults(handler=run_report, format="md")


def _row_format(path: Path | None, option: str) -> RowFormat | None:
    if path is None:
        return None
    if path.is_dir() or not path.parent.is_dir():
        raise InputError(path, "not a file in an existing directory", option)
    if path.suffix not in (".csv", ".jsonl"):
        raise InputError(path, "ends in .csv or .jsonl (the file's format)", option)
    return "csv" if path.suffix == ".csv" else "jsonl"


def _rows(run_dir: Path, run: GradedRun) -> tuple[RunRow, list[ItemRow]]:
    """The run's rows: its metrics.json read whole for the judges' verdicts and usage, and the rubric's sha.
    A file that reads only as far as the report needs (an older grader's) gives rows without judges."""
    path = run_dir / "metrics.json"
    details: RunDetails | None = None
    try:
        strict = read_metrics(path, strict=True)
        details, sha = strict.details, strict.rubric_sha256
    except InputError:
        sha = read_metrics(path).rubric_sha256
    record = load_run(run_dir / "run.json")
    row = run_row(run, details, repetition=record.repetition, rubric_sha256=sha)
    return row, item_rows(row, details)


def run_report(args: argparse.Namespace) -> int:
    if args.html is not None and (args.html.is_dir() or not args.html.parent.is_dir()):
        raise InputError(args.html, "not a file in an existing directory", "--html")
    runs_format = _row_format(args.runs_out, "--runs-out")
    items_format = _row_format(args.items_out, "--items-out")
    if args.cutoffs is not None and not args.tasks:
        raise InputError(None, "needs --tasks: the split compares each task's base_date", "--cutoffs")
    cutoffs = load_cutoffs(args.cutoffs) if args.cutoffs is not None else None
    labels = _RunLabels.load(args.labels)
    for tasks_dir in args.tasks or []:
        if not tasks_dir.is_dir():
            raise InputError(tasks_dir, "not a directory", "--tasks")
    tasks = TaskIndex(args.tasks) if args.tasks else None
    runs, run_rows, items, seen = _read_runs(args.run_dirs, tasks, labels)
    report = build_report(runs, cutoffs=cutoffs, bootstrap=args.bootstrap, seed=args.seed)
    if unmatched := len(labels.named() - seen):
        report.warnings.append(
            f"{counted(unmatched, 'label')} in {args.labels} for runs not in this report: ignored"
        )
    rubrics = {(r.task, r.rubric_sha256) for r in run_rows}
    provenance = report_provenance(
        report,
        repository=None,
        filters={},
        rubrics=[TaskRubric(task=task, revision=None, rubric_sha256=sha) for task, sha in rubrics],
    )
    if runs_format is not None:
        write_atomic(args.runs_out, rows_text(run_rows, RunRow, provenance, runs_format).encode())
    if items_format is not None:
        write_atomic(args.items_out, rows_text(items, ItemRow, provenance, items_format).encode())
    if args.html is not None:
        write_atomic(args.html, render_report_html(report, provenance=provenance).encode())
    if args.format == "json":
        print_json({**report.to_json_dict(), "provenance": provenance.model_dump(mode="json")})
    elif args.format == "csv":
        sys.stdout.write(report_csv(report))
    else:
        sys.stdout.write(report_markdown(report))
    return 0


@dataclass(frozen=True)
class _RunLabels:
    """``--labels``: the old ``{"<run dir>": true|false}`` (``by_run``), or the labels file (CSV / JSONL,
    one row per label, ``file``) from which each run's human verdict is worked out here. Each label's
    inclusion probability, where the file gives it, becomes the run's (``label_probability``)."""

    file: LabelFile | None
    by_run: dict[Path, tuple[bool, float | None]]

    @classmethod
    def load(cls, path: Path | None) -> _RunLabels:
        file = load_label_file(path) if path is not None and label_format(path.name) else None
        item_labels = file.items if file is not None else {}
        if path is None or item_labels or label_format(path.name):
            return cls(file=file, by_run={})
        return cls(file=file, by_run=load_labels(path))

    def named(self) -> set[Path]:
        """The run directories the labels name."""
        return set(self.by_run) | set(self.file.items if self.file is not None else {})

    def apply(self, run_dir: Path, resolved: Path, run: GradedRun) -> GradedRun:
        """``run`` with the human verdict and label probability its labels give, if they name it."""
        if resolved in self.by_run:
            verdict, given = self.by_run[resolved]
            return run.model_copy(update={"human_mergeable": verdict, "label_probability": given})
        if self.file is None or resolved not in self.file.items:
            return run
        metrics = read_json(run_dir / "metrics.json")
        details = metrics.get("details") if isinstance(metrics, dict) else None
        human = human_mergeable_from_items(details, self.file.items[resolved])
        judged = judged_blockers(details)
        draws = self.file.draws
        probability = (
            run_inclusion_probability(judged, draws.get(resolved, {}))
            if human is not None and judged and draws is not None
            else None
        )
        return run.model_copy(update={"human_mergeable": human, "label_probability": probability})


def _read_runs(
    run_dirs: list[Path], tasks: TaskIndex | None, labels: _RunLabels
) -> tuple[list[GradedRun], list[RunRow], list[ItemRow], set[Path]]:
    """Each run directory read once, with its labels applied, and its rows; and the resolved directories."""
    runs: list[GradedRun] = []
    run_rows: list[RunRow] = []
    items: list[ItemRow] = []
    seen: set[Path] = set()
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise InputError(run_dir, "not a run directory")
        if not (run_dir / "run.json").exists() and any((c / "run.json").is_file() for c in run_dir.iterdir()):
            raise InputError(
                run_dir / "run.json", f"file not found; to report the runs inside, give {run_dir}/*"
            )
        resolved = run_dir.resolve()
        if resolved in seen:
            raise InputError(run_dir, "given twice: each run counts once")
        seen.add(resolved)
        run = labels.apply(run_dir, resolved, read_graded_run(run_dir, tasks))
        runs.append(run)
        row, run_items = _rows(run_dir, run)
        run_rows.append(row)
        items += run_items
    return runs, run_rows, items, seen
