from __future__ import annotations

from urllib.parse import urlencode

from django import template

from grading import Cell, Estimate, Notes
from grading import estimate_note as _estimate_note
from grading import left_out_text as _left_out_text
from grading import no_interval_reason as _no_interval_reason

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal (as `rubric report`'s Markdown writes it)."""
    return "n/a" if value is None else f"{100 * value:.1f}%"


@register.filter
def no_interval_reason(cell: Cell, bootstrap: int) -> str | None:
    """Why a cell's rates have no interval (one task, no bootstrap), or None."""
    return _no_interval_reason(cell, bootstrap)


@register.simple_tag
def cell_runs_url(base: str, filters: dict[str, str], cell: Cell) -> str:
    """The runs download (``base``) for one cell: the page's filters narrowed to the cell's arm, model and
    prompt style; "" for a contamination cell (its split is no filter)."""
    if hasattr(cell, "split"):
        return ""
    narrowed = {**filters, "arm": cell.arm, "model": cell.model}
    if cell.prompt_style:
        narrowed["prompt_style"] = cell.prompt_style
    return f"{base}?{urlencode(narrowed)}"


@register.filter
def estimate_note(estimate: Estimate) -> str:
    """The standard error beside an interval, or that every task gave the same rate (grading's text)."""
    return _estimate_note(estimate)


@register.filter
def left_out(cell: Cell) -> str:
    """The mergeable rate's bounds over the runs it leaves out (grading's text), or ""."""
    return _left_out_text(cell)


@register.filter
def note_of(notes: Notes | None, reason: str | None) -> int | str:
    """The number of ``reason``'s footnote under its table (grading.report.render.Notes: each reason said
    once per table); "" without a reason."""
    if not reason or notes is None:
        return ""
    return notes.mark(reason)


@register.filter
def percent_points(value: float) -> str:
    """A standard error of a rate in percentage points: "14.6 pp"."""
    return f"{100 * value:.1f} pp"
