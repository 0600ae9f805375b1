"""The report page's charts: grading.report.charts draws them (the command line's --html file shares
them); here they become Django safe strings, since that module escapes every name it draws."""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.safestring import SafeString, mark_safe

from grading import Cell, Contrast, TaskRow
from grading import blocker_histogram as blocker_histogram_svg
from grading import forest_plot as forest_plot_svg
from grading import rates_chart as rates_chart_svg


def rates_chart(cells: list[Cell], bootstrap: int) -> SafeString:
    return mark_safe(rates_chart_svg(cells, bootstrap))


def forest_plot(contrasts: list[Contrast]) -> SafeString:
    return mark_safe(forest_plot_svg(contrasts))


def blocker_histogram(row: TaskRow, criteria: Mapping[str, str] | None = None) -> SafeString:
    return mark_safe(blocker_histogram_svg(row, criteria))
