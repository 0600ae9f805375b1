from __future__ import annotations

from django import template

from grading import Cell, Estimate
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


@register.filter
def estimate_note(estimate: Estimate) -> str:
    """The standard error beside an interval, or that every task gave the same rate (grading's text)."""
    return _estimate_note(estimate)


@register.filter
def left_out(cell: Cell) -> str:
    """The mergeable rate's bounds over the runs it leaves out (grading's text), or ""."""
    return _left_out_text(cell)
