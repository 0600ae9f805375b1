"""The review queue's label target computed without the report: per-task sums of the current grades' report
rows in one query, and GradedRun records only for the labelled runs, equal to the report's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import cache

from grading import build_report
from rubrics_app.models import ReportRow, Repository, RunGrade
from rubrics_app.services.report import MEASURED, cheap_label_target, graded_runs
from rubrics_app.services.report_rows import refresh_report_rows
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
    runs, _, _ = graded_runs(repository, {})
    rows = ReportRow.objects.filter(repository=repository, grade__is_current=True)
    assert {r.run for r in runs if r.measured} == set(rows.filter(MEASURED).values_list("name", flat=True))
    assert {(r.mergeable is None, r.test_pass is None) for r in runs} == {
        (False, False),
        (True, False),
        (True, True),
    }
    assert any(r.test_pass is False for r in runs)  # failed the tests: measured


def test_the_queue_s_label_target_is_the_report_s(tmp_path: Path, repository: Repository) -> None:
    build_runs(tmp_path, repository)
    _vary(repository)
    assert (
        cheap_label_target(repository)
        == build_report(graded_runs(repository, {})[0], bootstrap=0).label_target
    )
    label_runs(repository)
    cache.clear()
    runs = graded_runs(repository, {})[0]
    assert sum(r.human_mergeable is not None for r in runs) >= 10
    assert {r.human_mergeable for r in runs} == {True, False, None}
    target = build_report(runs, bootstrap=0).label_target
    assert target is not None and target.labelled > 0
    assert cheap_label_target(repository) == target
