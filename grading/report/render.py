"""A :class:`~grading.report.build.Report` as CSV (one row per cell) or Markdown (warnings first).

Arm, model and task names come from run files, so they are escaped: a CSV text cell that a spreadsheet
would read as a formula gets a leading ``'``, and Markdown text has its control characters and markup
escaped.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from grading.report.agreement import Agreement
from grading.report.corrected import CorrectedContrast
from grading.report.models import Cell, ContaminationCell, Contrast, Report
from grading.report.stats import Estimate, JudgeAccuracy
from grading.words import counted

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(value: str | None) -> str:
    if value is None:
        return ""
    return "'" + value if value.startswith(_FORMULA_START) else value


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _estimate_columns(e: Estimate | None) -> list[str]:
    if e is None:
        return ["", "", "", ""]
    lo, hi = e.ci if e.ci else (None, None)
    return [_num(e.value), _num(lo), _num(hi), _num(e.se)]


_ESTIMATES = ("test_pass_rate", "mergeable_rate", "difference", "corrected_mergeable_rate")
_CONTRAST_COLUMNS = ("kind", "fixed", "a", "b", "metric", "value", "value_lo", "value_hi", "few_tasks",
                     "half_width", "more_tasks", "repetitions_needed", "se", "p_value", "p_holm",
                     "tasks_a", "tasks_b")  # fmt: skip


def _contrast_columns(c: Contrast | None) -> list[str]:
    if c is None:
        return [""] * len(_CONTRAST_COLUMNS)
    lo, hi = c.ci if c.ci else (None, None)
    p = c.precision
    return [
        c.kind, _csv_text(c.fixed), _csv_text(c.a), _csv_text(c.b), c.metric,
        _num(c.value), _num(lo), _num(hi), "true" if c.few_tasks else "false",
        _num(p.half_width if p and p.half_width is not None else (p.predicted_half_width if p else None)),
        "" if p is None or p.more_tasks is None else str(p.more_tasks),
        "" if p is None or p.repetitions_needed is None else str(p.repetitions_needed),
        _num(c.se), _num(c.p_value), _num(c.p_holm), str(c.tasks_a), str(c.tasks_b),
    ]  # fmt: skip


def report_csv(report: Report) -> str:
    """Every cell of every table, one row each, then every contrast; ``table`` says which (cells,
    by_prompt_style, by_contamination, contrasts). A contrast row fills ``tasks``, ``runs`` and the
    contrast columns (kind to repetitions_needed), a cell row the rest. Each rate has its value and
    interval bounds; ``metric:<name>`` columns hold the per-cell means of numeric grade.json metrics,
    ``rate:<name>`` the share of true of true/false ones; ``integrity_not_measured`` counts the measured
    runs graded with a test-integrity part not measured."""
    tables: list[tuple[str, list[Cell]]] = [
        ("cells", report.cells),
        ("by_prompt_style", report.by_prompt_style),
        ("by_contamination", list(report.by_contamination)),
    ]
    metric_names = sorted({m for _, cells in tables for c in cells for m in c.metrics})
    rate_names = sorted({m for _, cells in tables for c in cells for m in c.metric_rates})
    header = ["table", "arm", "model", "prompt_style", "split", "runs", "tasks", "measured"]
    for name in _ESTIMATES:
        header += [name, f"{name}_lo", f"{name}_hi", f"{name}_se"]
    header += ["mean_merge_score", "grader_failures", "judge_failures", "not_measured", "provisional"]
    header += ["integrity_not_measured", *_CONTRAST_COLUMNS]
    header += [f"metric:{m}" for m in metric_names] + [f"rate:{m}" for m in rate_names]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for table, cells in tables:
        for c in cells:
            split = c.split if isinstance(c, ContaminationCell) else None
            row = [table, _csv_text(c.arm), _csv_text(c.model), c.prompt_style or "", split or ""]
            row += [str(c.runs), str(c.tasks), str(c.measured)]
            for name in _ESTIMATES:
                row += _estimate_columns(getattr(c, name))
            row += [_num(c.mean_merge_score), str(c.grader_failures), str(c.judge_failures)]
            row += [str(c.not_measured), "true" if c.provisional else "false"]
            row += [str(c.integrity_not_measured_runs), *_contrast_columns(None)]
            row += [_num(c.metrics[m].mean) if m in c.metrics else "" for m in metric_names]
            row += [_num(c.metric_rates[m].rate) if m in c.metric_rates else "" for m in rate_names]
            writer.writerow(row)
    blank_rates = [""] * (4 * len(_ESTIMATES) + 6)
    for k in report.contrasts:
        row = [
            "contrasts",
            "",
            "",
            "",
            "",
            str(k.runs),
            str(k.tasks),
            "",
            *blank_rates,
            *_contrast_columns(k),
        ]
        writer.writerow(row + [""] * (len(header) - len(row)))
    return out.getvalue()


# Enough to keep text inert in a table cell or list item: no emphasis, code, links, HTML or cell breaks.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~])")


def md_text(value: str) -> str:
    """Untrusted text for a Markdown table cell: control characters as \\xNN, markup escaped."""
    visible = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in value)
    return _MD_SPECIAL.sub(r"\\\1", visible)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def estimate_note(e: Estimate) -> str:
    """What goes beside an interval: the standard error in points, and "no spread between tasks" when the
    interval is the exact bound on tasks (every task gave the same rate), "" when neither applies."""
    notes = [] if e.se is None or e.method == "no_spread" else [f"SE {100 * e.se:.1f} pp"]
    if e.method == "no_spread":
        notes.append("no spread between tasks")
    return "; ".join(notes)


def _md_estimate(e: Estimate | None) -> str:
    if e is None:
        return "-"
    if e.value is None:
        return "n/a"
    text = _pct(e.value)
    if e.ci:
        text += f" [{_pct(e.ci[0])}, {_pct(e.ci[1])}]"
    note = estimate_note(e)
    return text + (f" ({note})" if note else "")


def _md_cells(title: str, cells: list[Cell], extra: str | None = None) -> list[str]:
    if not cells:
        return []
    head = ["arm", "model"] + ([extra] if extra else [])
    head += ["runs", "tasks", "measured", "mergeable", "test-pass", "difference", "corrected mergeable",
             "mean merge_score", "grader failures", "judge failures", "not measured",
             "integrity not measured"]  # fmt: skip
    lines = [f"## {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        mergeable = _md_estimate(c.mergeable_rate) + (" (provisional)" if c.provisional else "")
        mergeable += f" ({left_out_text(c)})" if c.mergeable_bounds else ""
        row = [md_text(c.arm) or "-", md_text(c.model) or "-"]
        if extra == "prompt style":
            row.append(c.prompt_style or "unknown")
        elif extra == "split" and isinstance(c, ContaminationCell):
            row.append(c.split)
        score = "n/a" if c.mean_merge_score is None else f"{c.mean_merge_score:.3f}"
        row += [str(c.runs), str(c.tasks), str(c.measured), mergeable, _md_estimate(c.test_pass_rate),
                _md_estimate(c.difference), _md_estimate(c.corrected_mergeable_rate), score,
                str(c.grader_failures), str(c.judge_failures), str(c.not_measured),
                _md_integrity(c)]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    metrics = metric_lines(cells)
    if metrics:
        lines += [
            "",
            "grade.json metrics per cell: the mean of a number, the share of true of a true/false value:",
            "",
        ]
        for where, name, text in metrics:
            lines.append(f"- {md_text(where) or '-'}: {md_text(name)} {text}")
    return [*lines, ""]


def left_out_text(c: Cell) -> str:
    """ "12.0% to 31.5% with the 5 runs left out": the mergeable rate's bounds over the runs it leaves out."""
    if not c.mergeable_bounds:
        return ""
    left = c.grader_failures + c.judge_failures + c.not_measured
    lo, hi = c.mergeable_bounds
    return f"{_pct(lo)} to {_pct(hi)} with the {counted(left, 'run')} left out"


def metric_lines(cells: list[Cell]) -> list[tuple[str, str, str]]:
    """(cell, metric, value) for each grade.json metric of each cell: ``= 5 (2 runs)`` for the mean of a
    number, ``true in 66.7% (2 of 3 runs)`` for a true/false metric. The cell is "arm / model"; the texts
    are plain (the caller escapes them for its format)."""
    out = []
    for c in cells:
        where = " / ".join(x for x in (c.arm, c.model) if x)
        for name, m in c.metrics.items():
            out.append((where, name, f"= {m.mean:.4g} ({counted(m.runs, 'run')})"))
        for name, r in c.metric_rates.items():
            out.append((where, name, f"true in {_pct(r.rate)} ({r.true} of {counted(r.runs, 'run')})"))
    return out


def _md_integrity(c: Cell) -> str:
    if not c.integrity_not_measured_runs:
        return "0"
    parts = ", ".join(f"{md_text(part)} {n}" for part, n in c.integrity_not_measured.items())
    return f"{c.integrity_not_measured_runs} ({parts})"


INTERVALS_TEXT = (
    "Rates are means over tasks of each task's rate over its measured runs (every task counts once); "
    "intervals are 95% t intervals over tasks."
)


def labels_weighting_text(accuracy: JudgeAccuracy) -> str:
    """What the correction rests on, in words: the runs the judge decided, and how the labels weigh."""
    note = accuracy.weighting_note or "the labels are taken as a uniform sample of them"
    return f"The correction is of the runs the judge decided; {note}."


# The report's words for its rates, everywhere it names them (page, HTML file, charts, Markdown); the JSON
# keys and CSV columns are the keys here. docs/report.md lists them once ("Words").
METRIC_NAMES = {"test_pass_rate": "test-pass", "mergeable_rate": "mergeable", "difference": "difference"}
CONTRAST_KINDS = {"arm": "Arms compared, model by model", "model": "Models compared, arm by arm"}
ONE_TASK = "one task only: nothing to resample"
NO_BOOTSTRAP = "no intervals were asked for (bootstrap 0)"
NO_LABEL_RESAMPLE = "no resample of the labels"


def no_interval_reason(cell: Cell, bootstrap: int) -> str | None:
    """Why a cell's measured rates have no interval, or None when they have one (or nothing is measured)."""
    if not cell.measured or cell.test_pass_rate.ci is not None:
        return None
    return NO_BOOTSTRAP if bootstrap == 0 else ONE_TASK


@dataclass
class Notes:
    """A table's footnotes: a reason said once under the table, each place it applies marked with its
    number, in the order first met."""

    reasons: list[str] = field(default_factory=list)

    def mark(self, reason: str) -> int:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return self.reasons.index(reason) + 1

    def lines(self) -> list[tuple[int, str]]:
        return list(enumerate(self.reasons, start=1))


def cell_notes(cells: Iterable[Cell], bootstrap: int) -> Notes:
    """The footnotes of a table of cells: why a rate has no interval, each reason once ("no interval: one
    task only: nothing to resample"), in the order of the table's cells."""
    notes = Notes()
    for c in cells:
        why = no_interval_reason(c, bootstrap)
        if why:
            notes.mark(f"no interval: {why}")
        corrected = c.corrected_mergeable_rate
        if corrected is not None and corrected.value is not None and corrected.ci is None:
            notes.mark(f"no interval: {why or NO_LABEL_RESAMPLE}")
    return notes


def points(value: float | None) -> str:
    """A difference of rates in percentage points, signed: "+12.5 pp"."""
    return "n/a" if value is None else f"{100 * value:+.1f} pp".replace("-", "−")


def contrast_label(c: Contrast) -> str:
    """ "arm B − arm A (model M)": what a contrast compares, in plain text."""
    return f"{c.b} − {c.a} ({'model' if c.kind == 'arm' else 'arm'} {c.fixed})"


def contrast_test(c: Contrast) -> str:
    """The standard error and the p-values: "SE 4.1 pp, p 0.012, Holm 0.036 of 4: holds at 5%"."""
    parts = []
    if c.se is not None and c.method != "no_spread":
        parts.append(f"SE {100 * c.se:.1f} pp")
    if c.p_value is not None and c.p_holm is not None and c.method != "no_spread":
        holds = "holds" if c.p_holm < 0.05 else "does not hold"
        parts.append(f"p {c.p_value:.3g}, Holm {c.p_holm:.3g} of {c.family_size} comparisons: {holds} at 5%")
    return ", ".join(parts)


@dataclass(frozen=True)
class ContrastRow:
    """One pair compared (two arms of a model, or two models in an arm): its contrasts, one per metric, side
    by side. The pair, its shared tasks and runs are the same for every metric, so they are read off one."""

    by_metric: dict[str, Contrast]

    @property
    def first(self) -> Contrast:
        return next(iter(self.by_metric.values()))

    @property
    def kind(self) -> str:
        return self.first.kind

    @property
    def fixed(self) -> str:
        return self.first.fixed

    @property
    def a(self) -> str:
        return self.first.a

    @property
    def b(self) -> str:
        return self.first.b

    @property
    def tasks(self) -> int:
        return self.first.tasks

    @property
    def runs(self) -> int:
        return self.first.runs

    @property
    def label(self) -> str:
        return contrast_label(self.first)

    @property
    def within(self) -> str:
        """What both sides share: "model M" (arms compared) or "arm A" (models compared)."""
        return f"{'model' if self.kind == 'arm' else 'arm'} {self.fixed}"

    @property
    def tasks_text(self) -> str:
        """ "4", or "4 of 5 and 4" when a side has tasks the other has not; "(few tasks)" under 10."""
        c = self.first
        text = str(c.tasks)
        if c.tasks != c.tasks_a or c.tasks != c.tasks_b:
            text += f" of {c.tasks_a} and {c.tasks_b}"
        return text + (" (few tasks)" if c.few_tasks and c.tasks else "")


def contrast_rows(contrasts: Iterable[Contrast]) -> list[tuple[str, list[ContrastRow]]]:
    """The contrasts one row per pair compared, grouped by kind (arms compared, then models compared), each
    group with its title (:data:`CONTRAST_KINDS`); pairs in the report's order."""
    pairs: dict[tuple[str, str, str, str], dict[str, Contrast]] = {}
    for c in contrasts:
        pairs.setdefault((c.kind, c.fixed, c.a, c.b), {})[c.metric] = c
    groups: dict[str, list[ContrastRow]] = {}
    for (kind, *_), by_metric in pairs.items():
        groups.setdefault(kind, []).append(ContrastRow(by_metric))
    return [(CONTRAST_KINDS[kind], groups[kind]) for kind in CONTRAST_KINDS if kind in groups]


def contrast_cell(c: Contrast | None, notes: Notes) -> tuple[str, str, int | None]:
    """One metric of a contrast row: (b − a with its interval, its SE and p-values, the footnote number of
    why it has no interval or what its interval bounds, or None)."""
    if c is None:
        return "-", "", None
    note = None
    if c.value is None:
        return "n/a", "", notes.mark(c.interval_reason) if c.interval_reason else None
    text = points(c.value)
    if c.ci:
        text += f" [{points(c.ci[0])[:-3]}, {points(c.ci[1])[:-3]}]"
    elif c.interval_reason:
        note = notes.mark(f"no interval: {c.interval_reason}")
    if c.method == "no_spread":
        note = notes.mark(NO_SPREAD_CONTRAST)
    parts = []
    if c.se is not None and c.method != "no_spread":
        parts.append(f"SE {100 * c.se:.1f}")
    if c.p_value is not None and c.p_holm is not None and c.method != "no_spread":
        parts.append(f"p {c.p_value:.2g}, Holm {c.p_holm:.2g}{': holds' if c.p_holm < 0.05 else ''}")
    return text, ", ".join(parts), note


ContrastLine = tuple[ContrastRow, list[tuple[str, str, int | None]], str]


def contrast_table(contrasts: Iterable[Contrast]) -> tuple[list[tuple[str, list[ContrastLine]]], Notes]:
    """The contrasts table of the page and the HTML file: per kind (its title), one line per pair compared:
    the row, a :func:`contrast_cell` per metric of :data:`METRIC_NAMES` and how many runs are enough for
    the mergeable rate; and the footnotes, each reason said once for the whole table."""
    notes = Notes()
    groups = []
    for title, rows in contrast_rows(contrasts):
        lines: list[ContrastLine] = []
        for row in rows:
            cells = [contrast_cell(row.by_metric.get(m), notes) for m in METRIC_NAMES]
            mergeable = row.by_metric.get("mergeable_rate")
            lines.append((row, cells, precision_text(mergeable, notes) if mergeable else "-"))
        groups.append((title, lines))
    return groups, notes


NO_SPREAD_CONTRAST = "every shared task gives the same b − a: the interval bounds how many tasks could differ"


def contrast_estimate(c: Contrast) -> str:
    """The value with its interval, or the reason there is none, its standard error and p-values, and the
    few-tasks mark."""
    if c.value is None:
        return f"n/a ({c.interval_reason})" if c.interval_reason else "n/a"
    text = points(c.value)
    text += f" [{points(c.ci[0])}, {points(c.ci[1])}]" if c.ci else f" (no interval: {c.interval_reason})"
    if c.method == "no_spread":
        text += " (every shared task gives the same difference: the interval bounds how many could differ)"
    test = contrast_test(c)
    text += f" ({test})" if test else ""
    shared = (
        f" ({c.tasks} shared tasks of {c.tasks_a} and {c.tasks_b})"
        if c.tasks != c.tasks_a or c.tasks != c.tasks_b
        else ""
    )
    return text + shared + (" (few tasks)" if c.few_tasks and c.tasks else "")


PRECISION_NO_SPREAD = (
    "no spread between tasks: every shared task gives the same b − a, so the precision cannot be judged "
    "from these runs"
)


def precision_text(c: Contrast, notes: Notes | None = None) -> str:
    """How far the interval is from ±5 points and what would close it, in plain text. With ``notes`` (a
    table's footnotes), the reasons go there, marked [n] in the text, and the text is short."""
    p = c.precision
    if p is None or c.value is None:
        return "-"
    aim = f"±{100 * p.target:g} pp"
    now = p.half_width if p.half_width is not None else p.predicted_half_width
    parts = [f"now ±{100 * now:.1f} pp" if now is not None else "now unknown"]
    if c.method == "no_spread" or (now is not None and now <= 0):
        return f"- [{notes.mark(PRECISION_NO_SPREAD)}]" if notes is not None else PRECISION_NO_SPREAD
    if now is not None and now <= p.target:
        return f"{parts[0]}: within {aim}" + (
            f"; detectable at 80% power: ±{100 * p.minimum_detectable_effect:.1f} pp"
            if p.minimum_detectable_effect is not None
            else ""
        )
    if p.more_tasks is not None:
        parts.append(f"{p.more_tasks} more tasks")
    if p.repetitions_needed is not None:
        parts.append(f"or {p.repetitions_needed} runs per task and side (now {p.repetitions:.1f})")
    text = ", ".join(parts) + f" to reach {aim}" if len(parts) > 1 else parts[0]
    if p.reason:
        text += f" [{notes.mark(p.reason)}]" if notes is not None else f" ({p.reason})"
    if p.minimum_detectable_effect is not None:
        text += f"; detectable at 80% power: ±{100 * p.minimum_detectable_effect:.1f} pp"
        if notes is None:
            text += f", {p.tasks_to_detect} tasks to detect {100 * p.target:g} pp"
    return text


def _md_contrasts(report: Report) -> list[str]:
    if not report.contrasts:
        return []
    groups, notes = contrast_table(report.contrasts)
    lines = [
        "## Contrasts",
        "",
        "b − a in percentage points (pp), one row per pair compared: the mean over the tasks both sides "
        "measured of each task's b − a (every task counts once), with a 95% t interval, its standard error "
        "(SE) and p-values (Holm within each kind and rate).",
        "",
        "| b − a | shared tasks | runs | " + " | ".join(METRIC_NAMES.values())
        + " | how many runs are enough (mergeable) |",
        "|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for title, rows in groups:
        lines.append(f"| **{title}** | | | | | | |")
        for row, cells, precision in rows:
            metrics = " | ".join(
                md_text(text) + (f" [{note}]" if note else "") + (f" ({md_text(test)})" if test else "")
                for text, test, note in cells
            )
            label = md_text(f"{row.b} − {row.a} ({row.within})")
            lines.append(
                f"| {label} | {md_text(row.tasks_text)} | {row.runs} | {metrics} | {md_text(precision)} |"
            )
    lines += [""] + [f"{n}. {md_text(text)}" for n, text in notes.lines()]
    return [*lines, ""]


def corrected_contrast_label(c: CorrectedContrast) -> str:
    """ "arm B − arm A (model M)", as :func:`contrast_label`."""
    return f"{c.b} − {c.a} ({'model' if c.kind == 'arm' else 'arm'} {c.fixed})"


def corrected_contrast_text(c: CorrectedContrast) -> str:
    """The corrected b − a with its interval, or why there is none."""
    if c.value is None:
        return f"n/a ({c.reason})" if c.reason else "n/a"
    text = points(c.value)
    text += f" [{points(c.ci[0])}, {points(c.ci[1])}]" if c.ci else f" (no interval: {c.reason})"
    return text


def _md_corrected_contrasts(report: Report) -> list[str]:
    if not report.corrected_contrasts:
        return []
    lines = [
        "## Judge-error-corrected contrasts (mergeable)",
        "",
        "b − a of the corrected mergeable rates over the shared tasks, each side with its sensitivity and "
        "specificity; percentile bootstrap over the tasks and the labels.",
        "",
        "| contrast | corrected b − a [95% interval] | tasks |",
        "|---|---|---|",
    ]
    for c in report.corrected_contrasts:
        label = corrected_contrast_label(c)
        lines.append(f"| {md_text(label)} | {md_text(corrected_contrast_text(c))} | {c.tasks} |")
    return [*lines, ""]


def _md_agreement(a: Agreement) -> str:
    raw = "n/a" if a.raw is None else f"{a.raw:.3f}"
    if a.kappa is None:
        ac1 = f", Gwet's AC1 {a.ac1:.3f}" if a.ac1 is not None else ""
        return f"κ undefined ({md_text(a.undefined_reason or '')}); raw agreement {raw}{ac1}, n {a.n}"
    ci = f" [{a.kappa_ci[0]:.3f}, {a.kappa_ci[1]:.3f}] (tasks resampled)" if a.kappa_ci else ""
    return f"κ {a.kappa:.3f}{ci}; raw agreement {raw}, n {a.n}"


def report_markdown(report: Report) -> str:
    """The report for people: warnings at the top, then the cells, agreement and per-task blockers."""
    lines = ["# Mergeability report", ""]
    if report.warnings:
        lines += ["## Warnings", ""] + [f"- {md_text(w)}" for w in report.warnings] + [""]
    lines += _md_contrasts(report)
    lines += _md_corrected_contrasts(report)
    lines += _md_cells("Per arm and model", report.cells)
    lines += _md_cells("By prompt style", report.by_prompt_style, "prompt style")
    lines += _md_cells("By training cutoff", list(report.by_contamination), "split")
    lines.append(
        f"{INTERVALS_TEXT} Corrected rates: task-level bootstrap, {report.bootstrap} replicates, seed "
        f"{report.seed}."
    )
    lines.append("")
    acc = report.judge_accuracy
    lines += ["## Judge error", ""]
    if acc.sensitivity is not None and acc.specificity is not None:
        lines.append(
            f"Against {acc.labelled} human labels: sensitivity {acc.sensitivity:.3f}, "
            f"specificity {acc.specificity:.3f} (Rogan-Gladen corrected rates in the tables). "
            f"{md_text(labels_weighting_text(acc))}"
        )
    if acc.undefined_reason:
        lines.append(f"No corrected rate: {md_text(acc.undefined_reason)}.")
    lines += ["", "## Judges", ""]
    for j in report.judges:
        tag = " (scripted)" if j.scripted else ""
        unknown = "" if j.cost_known else " (some prices unknown)"
        line = f"- {j.role}: {md_text(j.judge)}{tag}, {counted(j.runs, 'run')}, "
        line += f"diff-only judge cost ${j.cost_usd:.4f}"
        line += unknown
        if j.tree_judged:
            line += (
                f"; tree judge cost ${j.tree_cost_usd:.4f} ({j.tree_judged} tree-judged verdicts in "
                f"{j.tree_judged_runs} runs)"
            )
        lines.append(line)
    lines += ["", "## Judge agreement", "", f"- mergeable: {_md_agreement(report.agreement.mergeable)}"]
    for item, a in report.agreement.items.items():
        lines.append(f"- {md_text(item)}: {_md_agreement(a)}")
    if report.repeat_agreement is not None:
        r = report.repeat_agreement
        lines.append(
            f"- same judge, same input, judged again: {r.agreeing} of {r.items} item verdicts agree "
            f"({counted(r.pairs, 'run')})"
        )
    if report.disagreements:
        lines += ["", "| run | task | item | primary | second |", "|---|---|---|---|---|"]
        for d in report.disagreements:
            lines.append(
                f"| {md_text(d.run)} | {md_text(d.task)} | {md_text(d.item)} | {d.primary} | {d.second} |"
            )
    lines += ["", "## Failed blockers per task (runs that passed the tests)", ""]
    lines += ["| task | runs | judged | failed blockers |", "|---|---|---|---|"]
    for t in report.tasks:
        failed = ", ".join(f"{md_text(b)} {n}" for b, n in t.failed_blockers.items()) or "none"
        lines.append(f"| {md_text(t.task)} | {t.runs} | {t.judged} | {failed} |")
    return "\n".join(lines) + "\n"
