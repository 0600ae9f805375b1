"""The report's charts as SVG text: the page draws them inline (no CDN, no script), ``rubric report
--html`` writes them into its file, and each downloads as an .svg of its own.

Each chart is drawn at the width it is given (``width="100%"``): horizontal positions are percentages of
that width and text sizes are pixels, so a label is 13 px on a 390 px phone as on a 1280 px screen (a
viewBox would scale the text down with the drawing). Every name of a chart's row has a line of its own
above the row, so a narrow screen never makes names and marks collide.

Every piece of text comes from run files or rubrics (task, arm, model, blocker ids, criteria), so each is
escaped (:func:`_h`); numbers are formatted here before they reach it. The results are :class:`Markup`,
text already safe to put in a page.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

from grading.report.contrasts import FEW_TASKS
from grading.report.models import Cell, Contrast, TaskRow
from grading.report.render import (
    METRIC_NAMES,
    ContrastRow,
    contrast_estimate,
    contrast_rows,
    no_interval_reason,
)
from grading.report.stats import Estimate
from grading.words import counted

FONT = 13  # px, whatever the width: the smallest text in a chart
SMALL = 12
LINE = 18  # a label line
ROW = 18  # a mark row
LABEL = 16  # a row's label line in the rates chart and the forest plot
MARK_ROW = 14  # the forest plot's mark row under its label line
RATE_ROW = 12  # each of the rates chart's two mark rows (test-pass, mergeable) under its label line
TOP = 26  # the axis labels
# Characters on a label line, so that it fits a 366 px chart (a 390 px phone's page) at 13 px; the full
# text is in the row's <title>.
MAX_LABEL = 46

TEST_PASS_COLOUR = "#6b7280"
MERGEABLE_COLOUR = "#1d4ed8"
CONTRAST_COLOUR = "#111827"
FAILED_COLOUR = "#b91c1c"


class Markup(str):
    """SVG text built here: already escaped, so :func:`_h` puts it in as it is."""

    __slots__ = ()


def _escape(value: object) -> str:
    return value if isinstance(value, Markup) else html.escape(str(value), quote=True)


def _h(template: str, *args: object, **kwargs: object) -> Markup:
    """``template.format`` with every value escaped, save those already :class:`Markup`."""
    return Markup(template.format(*map(_escape, args), **{k: _escape(v) for k, v in kwargs.items()}))


def mark_safe(text: str) -> Markup:
    return Markup(text)


def _short(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _open(kind: str, height: int, title: str) -> Markup:
    return _h(
        '<svg xmlns="http://www.w3.org/2000/svg" class="report-chart {k}" width="100%" height="{h}" '
        'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="{f}" role="img" '
        'aria-label="{t}"><title>{t}</title>',
        k=kind, h=str(height), f=str(FONT), t=title,
    )  # fmt: skip


class _Scale:
    """Values in [lo, hi] to percentages of the width, between ``left`` and ``right`` percent."""

    def __init__(self, lo: float, hi: float, left: float = 2.0, right: float = 96.0) -> None:
        self.lo, self.hi, self.left, self.right = lo, hi, left, right

    def __call__(self, value: float) -> str:
        share = (min(self.hi, max(self.lo, value)) - self.lo) / (self.hi - self.lo)
        return f"{self.left + share * (self.right - self.left):.2f}%"


def _interval(
    scale: _Scale, value: float, ci: tuple[float, float] | None, y: float, colour: str, marker: str
) -> Markup:
    parts = []
    if ci is not None:
        parts.append(
            _h(
                '<line x1="{lo}" x2="{hi}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2"/>'
                '<line x1="{lo}" x2="{lo}" y1="{a}" y2="{b}" stroke="{c}"/>'
                '<line x1="{hi}" x2="{hi}" y1="{a}" y2="{b}" stroke="{c}"/>',
                lo=scale(ci[0]),
                hi=scale(ci[1]),
                y=f"{y:.1f}",
                a=f"{y - 5:.1f}",
                b=f"{y + 5:.1f}",
                c=colour,
            )  # fmt: skip
        )
    x = scale(value)
    if marker == "square":
        # A square centred on a percentage: a 9 px marker drawn as a thick short line.
        parts.append(
            _h(
                '<line x1="{x}" x2="{x}" y1="{a}" y2="{b}" stroke="{c}" stroke-width="9"/>',
                x=x,
                a=f"{y - 4.5:.1f}",
                b=f"{y + 4.5:.1f}",
                c=colour,
            )  # fmt: skip
        )
    elif marker == "hollow":
        parts.append(
            _h(
                '<circle cx="{}" cy="{}" r="5" fill="#fff" stroke="{}" stroke-width="2"/>',
                x,
                f"{y:.1f}",
                colour,
            )
        )
    else:
        parts.append(_h('<circle cx="{}" cy="{}" r="5" fill="{}"/>', x, f"{y:.1f}", colour))
    return mark_safe("".join(parts))


def _ticks(scale: _Scale, values: list[tuple[float, str]], bottom: float) -> Markup:
    parts = []
    for i, (value, text) in enumerate(values):
        anchor = "start" if i == 0 else "end" if i == len(values) - 1 else "middle"
        parts.append(
            _h(
                '<line x1="{x}" x2="{x}" y1="{top}" y2="{bottom}" stroke="#d1d5db"/>'
                '<text x="{x}" y="{label}" font-size="{f}" text-anchor="{a}" fill="#4b5563">{t}</text>',
                x=scale(value),
                top=str(TOP - 6),
                bottom=f"{bottom:.1f}",
                label=str(TOP - 10),
                f=str(SMALL),
                a=anchor,
                t=text,
            )  # fmt: skip
        )
    return mark_safe("".join(parts))


def _estimate_text(e: Estimate) -> str:
    text = _pct(e.value)
    if e.ci is not None:
        text += f" [{_pct(e.ci[0])}, {_pct(e.ci[1])}]"
    return text


# A legend's markers as text, so a line of entries flows at any width: (glyph, colour).
LEGEND_MARKS = {
    "square": ("■", TEST_PASS_COLOUR),
    "circle": ("●", MERGEABLE_COLOUR),
    "dot": ("●", CONTRAST_COLOUR),
    "hollow": ("○", CONTRAST_COLOUR),
    "interval": ("├─┤", CONTRAST_COLOUR),
    "bar": ("█", FAILED_COLOUR),
}


def _legend(y: float, lines: list[list[tuple[str, str]]]) -> Markup:
    """Legend lines from ``y`` down: each line its entries, each (its marker, a key of
    :data:`LEGEND_MARKS` or "" for none, its text). A chart carries its legend, so its .svg file explains
    itself; a line is kept short enough for a 366 px chart (a 390 px phone)."""
    parts = []
    for i, entries in enumerate(lines):
        spans = []
        for j, (marker, text) in enumerate(entries):
            glyph, colour = LEGEND_MARKS.get(marker, ("", ""))
            lead = "   " if j else ""
            if glyph:
                spans.append(_h('{}<tspan fill="{}">{}</tspan> {}', lead, colour, glyph, text))
            else:
                spans.append(_h("{}{}", lead, text))
        parts.append(
            _h(
                '<text x="1" y="{}" fill="#374151" xml:space="preserve">{}</text>',
                f"{y + i * LINE:.1f}",
                mark_safe("".join(spans)),
            )  # fmt: skip
        )
    return _h('<g class="legend">{}</g>', mark_safe("".join(parts)))


def rates_chart(cells: list[Cell], bootstrap: int) -> Markup:
    """Mergeable against test-pass per arm and model, each with its 95% interval as a bar; a cell whose
    rates have no interval is marked * and the legend says why once."""
    block = LABEL + 2 * RATE_ROW + 2
    reasons = [no_interval_reason(cell, bootstrap) for cell in cells]
    why = next((r for r in reasons if r), None)
    legend = [[("square", "test-pass"), ("circle", "mergeable"), ("interval", "95% interval")]]
    if why:
        legend.append([("", _short(f"* no interval: {why}", MAX_LABEL))])
    body = TOP + block * max(1, len(cells))
    height = body + 6 + LINE * len(legend)
    scale = _Scale(0.0, 1.0)
    parts: list[Markup] = [
        _open(
            "rates-chart",
            height,
            "Mergeable rate against test-pass rate per arm and model, with 95% intervals",
        ),
        _ticks(scale, [(t, f"{t:.0%}") for t in (0.0, 0.25, 0.5, 0.75, 1.0)], body - 2),
    ]
    for index, cell in enumerate(cells):
        y = TOP + index * block
        label = f"{cell.arm or '-'} / {cell.model or '-'}"
        if cell.prompt_style:
            label += f" ({cell.prompt_style})"
        suffix = (" · provisional" if cell.provisional else "") + (" *" if reasons[index] else "")
        line = _short(label, MAX_LABEL - len(suffix)) + suffix
        title = (
            f"{label}: test-pass {_estimate_text(cell.test_pass_rate)}, "
            f"mergeable {_estimate_text(cell.mergeable_rate)}"
            + (" (provisional)" if cell.provisional else "")
            + (f"; no interval: {reasons[index]}" if reasons[index] else "")
        )
        marks = []
        for e, row, colour, marker in (
            (cell.test_pass_rate, 1, TEST_PASS_COLOUR, "square"),
            (cell.mergeable_rate, 2, MERGEABLE_COLOUR, "circle"),
        ):
            ry = y + LABEL + row * RATE_ROW - RATE_ROW / 2 + 1
            if e.value is None:
                marks.append(_h('<text x="2%" y="{}" fill="#4b5563">not measured</text>', f"{ry + 4:.1f}"))
            else:
                marks.append(_interval(scale, e.value, e.ci, ry, colour, marker))
        parts.append(
            _h(
                '<g class="cell"><title>{}</title><text x="0" y="{}" font-weight="600">{}</text>{}</g>',
                title,
                f"{y + LABEL - 3:.1f}",
                line,
                mark_safe("".join(marks)),
            )  # fmt: skip
        )
    parts += [_legend(body + 6 + LINE - 4, legend), mark_safe("</svg>")]
    return mark_safe("".join(parts))


def _contrast_range(contrasts: list[Contrast]) -> float:
    """The half-range of the forest plot's axis: the widest bound, rounded up to 10 points."""
    widest = 0.1
    for c in contrasts:
        for v in (c.value or 0.0, *(c.ci or (0.0, 0.0))):
            widest = max(widest, abs(v))
    return min(1.0, math.ceil(round(widest * 10, 6)) / 10)


# The forest plot's three panels side by side, one per metric, in percent of the width.
PANELS = tuple((metric, 34.0 * i + 1.0, 34.0 * i + 32.0) for i, metric in enumerate(METRIC_NAMES))
HEAD = 38  # the panels' titles and their axis labels


def forest_plot(contrasts: list[Contrast]) -> Markup:
    """Every pair compared as one row, its b − a for each metric (test-pass, mergeable, difference) in a
    panel of its own: a point and its paired 95% interval around a line at 0, the same axis in every panel.
    Rows are grouped by kind (arms compared, then models compared); a hollow point marks few tasks."""
    groups = contrast_rows(contrasts)
    block = LABEL + MARK_ROW
    body = HEAD + sum(LINE + block * len(rows) for _, rows in groups)
    legend = [
        [("dot", "b − a (pp)"), ("interval", "paired 95% interval")],
        [("hollow", f"fewer than {FEW_TASKS} shared tasks")],
    ]
    height = body + 6 + LINE * len(legend)
    half = _contrast_range(contrasts)
    scales = {metric: _Scale(-half, half, left=lo, right=hi) for metric, lo, hi in PANELS}
    parts: list[Markup] = [
        _open("forest-plot", height, "Contrasts: b − a with paired 95% intervals, by task")
    ]
    parts += [_forest_panel_axis(metric, lo, hi, scales[metric], half, body) for metric, lo, hi in PANELS]
    y = HEAD
    for title, rows in groups:
        parts.append(
            _h(
                '<text x="2" y="{}" font-style="italic" fill="#374151">{}</text>',
                f"{y + LINE - 4:.1f}",
                _short(title),
            )  # fmt: skip
        )
        y += LINE
        for row in rows:
            parts.append(_forest_row(row, y, scales))
            y += block
    parts += [_legend(body + 6 + LINE - 4, legend), mark_safe("</svg>")]
    return mark_safe("".join(parts))


def _forest_panel_axis(metric: str, lo: float, hi: float, scale: _Scale, half: float, body: float) -> Markup:
    """One panel's title, its axis labels (−half, 0, +half) and its lines at 0 and at both edges."""
    edge = f"{100 * half:.0f}"
    return _h(
        '<text x="{mid}" y="13" text-anchor="middle" font-weight="600">{name}</text>'
        '<text x="{lo}" y="{ty}" font-size="{f}" fill="#4b5563">−{e}</text>'
        '<text x="{zero}" y="{ty}" font-size="{f}" text-anchor="middle" fill="#4b5563">0</text>'
        '<text x="{hi}" y="{ty}" font-size="{f}" text-anchor="end" fill="#4b5563">+{e}</text>'
        '<line x1="{zero}" x2="{zero}" y1="{top}" y2="{bottom}" stroke="#111827" stroke-width="1.5"/>'
        '<line x1="{lo}" x2="{lo}" y1="{top}" y2="{bottom}" stroke="#e5e7eb"/>'
        '<line x1="{hi}" x2="{hi}" y1="{top}" y2="{bottom}" stroke="#e5e7eb"/>',
        mid=f"{(lo + hi) / 2:.2f}%",
        name=METRIC_NAMES[metric],
        lo=f"{lo:.2f}%",
        hi=f"{hi:.2f}%",
        zero=scale(0.0),
        ty=str(HEAD - 8),
        f=str(SMALL),
        e=edge,
        top=str(HEAD - 4),
        bottom=f"{body - 2:.1f}",
    )  # fmt: skip


def _forest_row(row: ContrastRow, y: float, scales: Mapping[str, _Scale]) -> Markup:
    """One compared pair at ``y``: its label, a point and interval in each panel (n/a where it has none),
    and the full figures in its tooltip."""
    ry = y + LABEL + MARK_ROW / 2 - 1
    marks = []
    for metric, lo, _ in PANELS:
        c = row.by_metric.get(metric)
        if c is None or c.value is None:
            marks.append(
                _h(
                    '<text x="{}" y="{}" dx="4" fill="#4b5563">n/a</text>',
                    f"{lo:.2f}%",
                    f"{ry + 4:.1f}",
                )
            )
        else:
            marker = "hollow" if c.few_tasks else "circle"
            marks.append(_interval(scales[metric], c.value, c.ci, ry, CONTRAST_COLOUR, marker))
    full = f"{row.label}, {counted(row.tasks, 'shared task')}: " + "; ".join(
        f"{METRIC_NAMES[m]} {contrast_estimate(c)}" for m, c in row.by_metric.items()
    )
    return _h(
        '<g class="contrast"><title>{t}</title>{marks}<text x="0" y="{y}" stroke="#fff" '
        'stroke-width="3" paint-order="stroke">{label}</text></g>',
        t=full,
        y=f"{y + LABEL - 3:.1f}",
        label=_short(row.label),
        marks=mark_safe("".join(marks)),
    )  # fmt: skip


def blocker_histogram(row: TaskRow, criteria: Mapping[str, str] | None = None) -> Markup:
    """One task's failed blockers: how many of the runs its primary judge decided failed each blocker.
    Each bar's label line names the blocker's criterion (shortened; in full in its <title>); the legend
    says what a bar counts."""
    criteria = criteria or {}
    block = LINE + ROW + 4
    items = list(row.failed_blockers.items())
    body = 4 + block * max(1, len(items))
    height = body + LINE + 2
    scale = _Scale(0.0, 1.0, left=0.0, right=80.0)
    parts: list[Markup] = [_open("report-histogram", height, f"Failed blockers of {row.task}")]
    for i, (item, count) in enumerate(items):
        y = 4 + i * block
        share = count / row.judged if row.judged else 0.0
        criterion = criteria.get(item, "")
        label = f"{item}: {criterion}" if criterion else item
        parts.append(
            _h(
                '<g class="blocker"><title>{title}</title>'
                '<text x="0" y="{ly}">{label}</text>'
                '<rect x="0" y="{by}" width="{w}" height="{h}" fill="{c}"/>'
                '<text x="{tx}" y="{ty}" dx="6">{n} of {of}</text></g>',
                title=f"{label}: failed in {count} of {counted(row.judged, 'judged run')}",
                ly=f"{y + LINE - 4:.1f}",
                label=_short(label),
                by=f"{y + LINE:.1f}",
                w=scale(share),
                h=str(ROW - 4),
                c=FAILED_COLOUR,
                tx=scale(share),
                ty=f"{y + LINE + ROW - 6:.1f}",
                n=str(count),
                of=str(row.judged),
            )  # fmt: skip
        )
    parts.append(_legend(body + LINE - 4, [[("bar", "failed, of the runs the judge decided")]]))
    parts.append(mark_safe("</svg>"))
    return mark_safe("".join(parts))


def standalone(svg: str, metadata: str | None = None) -> str:
    """A chart as an .svg file of its own (the "download figure" link); ``metadata`` (text: the download's
    provenance as JSON) goes, escaped, in a ``<metadata>`` element right after the opening tag."""
    if metadata is not None:
        end = svg.index(">") + 1
        svg = f"{svg[:end]}<metadata>{html.escape(metadata, quote=False)}</metadata>{svg[end:]}"
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n"
