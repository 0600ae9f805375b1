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

from rubrics_app.models import QueuePair, Repository
from tests.app.report_helpers import build_runs

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
