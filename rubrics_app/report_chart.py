"""The report page's charts: grading.report_charts draws them (the command line's --html file shares
them); here they become Django safe strings, since that module escapes every name it draws."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.safestring import SafeString, mark_safe

from grading import report_charts
from grading.contrasts import Contrast
from grading.report import Cell, TaskRow


def rates_chart(cells: list[Cell], bootstrap: int) -> SafeString:
    return mark_safe(report_charts.rates_chart(cells, bootstrap))


def forest_plot(contrasts: list[Contrast]) -> SafeString:
    return mark_safe(report_charts.forest_plot(contrasts))


def blocker_histogram(row: TaskRow, criteria: Mapping[str, str] | None = None) -> SafeString:
    return mark_safe(report_charts.blocker_histogram(row, criteria))
