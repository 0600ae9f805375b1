"""The review queue's stored pairs (QueuePair): the migration that added them fills the ones the import
writes, and every write path keeps them equal to the item verdicts' (checked after every test by the
autouse fixture in conftest.py, against tests/app/queue_rule.py)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import F

from rubrics_app.models import (
    ItemVerdict,
    JudgeGrade,
    QueuePair,
    ReportRow,
    Repository,
    RunGrade,
    Task,
    refresh_current_grades,
)
from rubrics_app.services.report_rows import refresh_report_rows
from tests.app.report_helpers import build_runs
from tests.app.report_rows import bulk_runs

pytestmark = pytest.mark.django_db


def _pairs() -> list[dict[str, Any]]:
    fields = [f.attname for f in QueuePair._meta.fields[1:]]
    return list(QueuePair.objects.order_by("grade_id", "item_id", "kind").values(*fields))


def test_the_migration_fills_the_pairs_the_import_writes(tmp_path: Path, repository: Repository) -> None:
    build_runs(tmp_path, repository)
    written = _pairs()
    assert {p["kind"] for p in written} == {"judges", "agreed"} and any(p["current"] for p in written)
    QueuePair.objects.all().delete()
    migration = importlib.import_module("rubrics_app.migrations.0135_queue_pairs")
    state = MigrationExecutor(connection).loader.project_state(("rubrics_app", "0135_queue_pairs"))
    migration.fill_pairs(state.apps, None)
    assert _pairs() == written


def test_the_pairs_and_the_report_rows_follow_the_current_grade(repository: Repository) -> None:
    bulk_runs([Task.objects.create(repository=repository, task_id="t1", spec_prompt="x")], ["a"], ["m"], 2)
    old = RunGrade.objects.order_by("pk").first()
    assert old is not None and old.is_current
    # A newer grade of the same run (no admitted revision: the newest is current), written as a writer does.
    new = RunGrade.objects.create(
        run=old.run, rubric_sha256="e" * 64, status=old.status, mergeable=old.mergeable
    )
    for role in ("primary", "second"):
        judge = JudgeGrade.objects.create(grade=new, role=role, judge=f"scripted:{role}.json")
        ItemVerdict.objects.bulk_create(
            [ItemVerdict(judge=judge, item_id="B1", kind="blocker", verdict="pass", reason="r")]
        )
    refresh_report_rows([new.pk])
    refresh_current_grades(runs=[old.run_id])
    for grade, current in ((old, False), (new, True)):
        assert ReportRow.objects.get(grade=grade).current is current
        assert {p.current for p in QueuePair.objects.filter(grade=grade)} == {current}
    assert not ReportRow.objects.exclude(current=F("grade__is_current")).exists()
