"""The review queue's label target computed without the report: per-task sums of the current grades' report
rows in one query, and GradedRun records only for the labelled runs, equal to the report's own; and the
report's sums count the runs the rows say are measured."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache

from rubrics_app.models import ReportRow, Repository, RunGrade
from rubrics_app.services.report_rows import refresh_report_rows
from rubrics_app.services.reports.report import MEASURED, cheap_label_target, repository_report
from rubrics_app.services.reports.sums import report_sums
from tests.app.report_helpers import build_runs, label_runs

pytestmark = pytest.mark.django_db


def _vary(repository: Repository) -> None:
    """Two runs not measured: a judge failure (mergeable undecided, the tests passed) and a grader failure
    (neither known); their rows written again by the one writer, as a grade is."""
    grades = list(RunGrade.objects.filter(run__task__repository=repository).order_by("pk"))
    RunGrade.objects.filter(pk=grades[0].pk).update(
        status="judge_failure", mergeable=None, judge_failure=True
    )
    RunGrade.objects.filter(pk=grades[5].pk).update(
        status="grader_failure", mergeable=None, grader_failure=True
    )
    refresh_report_rows([grades[0].pk, grades[5].pk])


def test_the_measured_rows_are_the_measured_runs(tmp_path: Path, repository: Repository) -> None:
    build_runs(tmp_path, repository)
    _vary(repository)
    parts = report_sums(repository, {})[0].parts
    rows = ReportRow.objects.filter(repository=repository, grade__is_current=True)
    assert sum(p.measured for p in parts) == rows.filter(MEASURED).count() == rows.count() - 2
    assert sum(p.runs for p in parts) == rows.count()
    statuses = {status for p in parts for status, n in p.statuses.items() if n}
    assert {"judge_failure", "grader_failure", "mergeable", "not_mergeable"} <= statuses
    assert sum(p.measured - p.passed for p in parts) > 0  # failed the tests: measured


def test_the_queue_s_label_target_is_the_report_s(tmp_path: Path, repository: Repository) -> None:
    build_runs(tmp_path, repository)
    _vary(repository)
    assert cheap_label_target(repository) == repository_report(repository, {}).report.label_target
    label_runs(repository)
    cache.clear()
    report = repository_report(repository, {}).report
    assert report.judge_accuracy.labelled >= 10
    target = report.label_target
    assert target is not None and target.labelled > 0
    assert cheap_label_target(repository) == target
