"""The report page's charts, drawn on the server as inline SVG: no CDN, no script.

Every piece of text comes from run files (task, arm, model and blocker ids), so each is escaped by
``format_html`` like any other template value; numbers are formatted here before they reach it.
"""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from grading import Cell, Estimate, TaskRow

LABEL_WIDTH = 230
PLOT_WIDTH = 380
ROW_HEIGHT = 40
TOP = 34  # legend and axis labels
MAX_LABEL = 34  # characters shown; the full text is in the row's <title>

TEST_PASS_COLOUR = "#6b7280"
MERGEABLE_COLOUR = "#1d4ed8"


def _x(rate: float) -> str:
    return f"{LABEL_WIDTH + max(0.0, min(1.0, rate)) * PLOT_WIDTH:.1f}"


def _short(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _estimate(e: Estimate, y: float, colour: str, marker: str) -> SafeString:
    if e.value is None:
        return format_html(
            '<text x="{}" y="{}" fill="#6b7280" font-size="11">not measured</text>', _x(0), f"{y + 4:.1f}"
        )
    parts = []
    if e.ci is not None:
        lo, hi = _x(e.ci[0]), _x(e.ci[1])
        parts.append(
            format_html(
                '<line x1="{lo}" x2="{hi}" y1="{y}" y2="{y}" stroke="{c}" stroke-width="2"/>'
                '<line x1="{lo}" x2="{lo}" y1="{a}" y2="{b}" stroke="{c}"/>'
                '<line x1="{hi}" x2="{hi}" y1="{a}" y2="{b}" stroke="{c}"/>',
                lo=lo,
                hi=hi,
                y=f"{y:.1f}",
                a=f"{y - 4:.1f}",
                b=f"{y + 4:.1f}",
                c=colour,
            )  # fmt: skip
        )
    x = _x(e.value)
    if marker == "square":
        parts.append(
            format_html(
                '<rect x="{}" y="{}" width="8" height="8" fill="{}"/>',
                f"{float(x) - 4:.1f}",
                f"{y - 4:.1f}",
                colour,
            )
        )
    else:
        parts.append(format_html('<circle cx="{}" cy="{}" r="4.5" fill="{}"/>', x, f"{y:.1f}", colour))
    return mark_safe("".join(parts))


def _interval_text(e: Estimate) -> str:
    text = _pct(e.value)
    if e.ci is not None:
        text += f" [{_pct(e.ci[0])}, {_pct(e.ci[1])}]"
    return text


def rates_chart(cells: list[Cell]) -> SafeString:
    """Mergeable against test-pass per arm and model, each with its 95% interval as a bar."""
    height = TOP + ROW_HEIGHT * max(1, len(cells)) + 8
    width = LABEL_WIDTH + PLOT_WIDTH + 20
    parts: list[SafeString] = [
        format_html(
            '<svg xmlns="http://www.w3.org/2000/svg" class="report-chart" viewBox="0 0 {w} {h}" width="{w}" '
            'height="{h}" role="img" aria-labelledby="rates-chart-title">'
            '<title id="rates-chart-title">Mergeable rate against test-pass rate per arm and model, '
            "with 95% intervals</title>",
            w=str(width),
            h=str(height),
        ),  # fmt: skip
        format_html(
            '<rect x="{}" y="6" width="8" height="8" fill="{}"/>'
            '<text x="{}" y="14" font-size="11">test-pass</text>'
            '<circle cx="{}" cy="10" r="4.5" fill="{}"/><text x="{}" y="14" font-size="11">mergeable</text>',
            str(LABEL_WIDTH),
            TEST_PASS_COLOUR,
            str(LABEL_WIDTH + 12),
            str(LABEL_WIDTH + 84),
            MERGEABLE_COLOUR,
            str(LABEL_WIDTH + 92),
        ),  # fmt: skip
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            format_html(
                '<line x1="{x}" x2="{x}" y1="{top}" y2="{bottom}" stroke="#d1d5db"/>'
                '<text x="{x}" y="{label}" font-size="10" text-anchor="middle">{t}</text>',
                x=_x(tick),
                top=str(TOP - 4),
                bottom=str(height - 8),
                label=str(TOP - 8),
                t=f"{tick:.0%}",
            )  # fmt: skip
        )
    for index, cell in enumerate(cells):
        y = TOP + index * ROW_HEIGHT
        label = f"{cell.arm or '-'} / {cell.model or '-'}"
        if cell.prompt_style:
            label += f" ({cell.prompt_style})"
        title = (
            f"{label}: test-pass {_interval_text(cell.test_pass_rate)}, "
            f"mergeable {_interval_text(cell.mergeable_rate)}"
            + (" (provisional)" if cell.provisional else "")
        )
        parts.append(
            format_html(
                '<g class="cell"><title>{}</title><text x="4" y="{}" font-size="12">{}</text>{}{}</g>',
                title,
                f"{y + ROW_HEIGHT / 2 + 4:.1f}",
                _short(label) + (" *" if cell.provisional else ""),
                _estimate(cell.test_pass_rate, y + 12, TEST_PASS_COLOUR, "square"),
                _estimate(cell.mergeable_rate, y + 26, MERGEABLE_COLOUR, "circle"),
            )
        )
    parts.append(mark_safe("</svg>"))
    return mark_safe("".join(parts))


def blocker_histogram(row: TaskRow) -> SafeString:
    """One task's failed blockers: how many of the runs its primary judge decided failed each blocker."""
    bar_height, gap, label_width, plot = 16, 6, 90, 260
    items = list(row.failed_blockers.items())
    height = max(1, len(items)) * (bar_height + gap) + 4
    width = label_width + plot + 90
    bars = format_html_join(
        "",
        "<g><title>{}: failed in {} of {} judged runs</title>"
        '<text x="0" y="{}" font-size="11">{}</text>'
        '<rect x="{}" y="{}" width="{}" height="{}" fill="#b91c1c"/>'
        '<text x="{}" y="{}" font-size="11">{} of {}</text></g>',
        (
            (
                item,
                str(count),
                str(row.judged),
                f"{i * (bar_height + gap) + bar_height - 4}",
                _short(item),
                str(label_width),
                str(i * (bar_height + gap)),
                f"{plot * count / row.judged if row.judged else 0:.1f}",
                str(bar_height),
                f"{label_width + (plot * count / row.judged if row.judged else 0) + 4:.1f}",
                f"{i * (bar_height + gap) + bar_height - 4}",
                str(count),
                str(row.judged),
            )  # fmt: skip
            for i, (item, count) in enumerate(items)
        ),
    )
    return format_html(
        '<svg xmlns="http://www.w3.org/2000/svg" class="report-histogram" viewBox="0 0 {w} {h}" width="{w}" '
        'height="{h}" role="img"><title>{t}</title>{bars}</svg>',
        w=str(width), h=str(height), t=f"Failed blockers of {row.task}", bars=bars,
    )  # fmt: skip
