from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal (as `rubric report`'s Markdown writes it)."""
    return "n/a" if value is None else f"{100 * value:.1f}%"
