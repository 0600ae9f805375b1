"""The freeze in one module (rubrics_app.freeze): its triggers replace 0006's and 0011's.

Besides what those kept, the new set binds admission to content and guards calibration runs: a revision
stores the sha256 of rubric.json as approved (``content_sha256``) and is admitted only with a passing run
of that content; a run is inserted queued, passes only from running with all its rows holding, never
changes status once finished, and keeps its revision, content and judge; task files freeze with an admitted
revision; a revision retires only when a newer one of its task is admitted, which the database now does
itself as another is admitted (so the partial unique index on admitted revisions goes: it would refuse the
newer admission before the older one could retire).

The column lists below are what the schema was at this migration: ``tests/app/test_freeze_module.py``
asserts they equal ``freeze.model_columns()``. A migration that adds a content column stores its own lists
and installs the triggers again.

Revisions frozen before this migration get ``content_sha256`` from their latest passing calibration (the
content that admitted them); an approved revision never calibrated keeps it empty and is admitted through
a new draft of it.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations, models

from rubrics_app import freeze

_0006 = importlib.import_module("rubrics_app.migrations.0006_freeze_holes_closed")
_0011 = importlib.import_module("rubrics_app.migrations.0011_admitted_means_calibrated")

COLUMNS = freeze.Columns(
    revision=(
        "task_id",
        "number",
        "parent_id",
        "origin",
        "drafted_by_id",
        "drafted_by_model",
        "input_hash",
        "created_at",
        "intent",
        "allowed_globs",
        "denied_globs",
        "max_changed_lines",
        "max_files",
        "lazy_solution",
        "alt_valid_solution",
        "omitted_keys",
        "version",
        "approved_at",
        "content_sha256",
        "approved_by_id",
    ),
    task=(
        "id",
        "repository_id",
        "task_id",
        "spec_prompt",
        "issue_prompt",
        "gate",
        "base_commit",
        "base_date",
    ),
    task_files=("oracle_diff", "oracle_grade", "tests_base"),
)

install, uninstall = freeze.installer(COLUMNS)


def drop_old(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in _0011.calibration_trigger_sql(vendor)[1] + _0006.trigger_sql(vendor)[1]:
        schema_editor.execute(sql)


def restore_old(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in _0006.trigger_sql(vendor)[0] + _0011.calibration_trigger_sql(vendor)[0]:
        schema_editor.execute(sql)


def fill_content_sha256(apps: Any, schema_editor: Any) -> None:
    revision_model = apps.get_model("rubrics_app", "RubricRevision")
    run_model = apps.get_model("rubrics_app", "CalibrationRun")
    for revision in revision_model.objects.filter(status__in=freeze.FROZEN_STATUSES).only("pk"):
        run = (
            run_model.objects.filter(revision=revision, status="passed")
            .order_by("-finished_at", "-pk")
            .first()
        )
        if run is not None:
            revision_model.objects.filter(pk=revision.pk).update(content_sha256=run.rubric_sha256)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0125_report_row_integrity_not_measured")]

    operations = [
        migrations.RunPython(drop_old, restore_old),
        migrations.RemoveConstraint(model_name="rubricrevision", name="one_admitted_revision_per_task"),
        migrations.AddField(
            model_name="rubricrevision",
            name="content_sha256",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.RunPython(fill_content_sha256, migrations.RunPython.noop),
        migrations.RunPython(install, uninstall),
    ]
