"""The injection suite's option and counts on a calibration run, and each row's payload kind and outcome.

On SQLite, adding a column with a default rebuilds the table, and the rebuild of the calibration runs' table
fails while 0011's trigger (on the revisions' table) names it: the trigger is dropped first and installed
again after, exactly as 0011 wrote it. PostgreSQL adds the columns in place.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations, models

_admission = importlib.import_module("rubrics_app.migrations.0011_admitted_means_calibrated")


def _on_sqlite(index: int) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for sql in _admission.calibration_trigger_sql("sqlite")[index]:
                schema_editor.execute(sql)

    return run


install, uninstall = _on_sqlite(0), _on_sqlite(1)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0060_drafting"),
    ]

    operations = [
        migrations.RunPython(uninstall, install),
        migrations.AddField(
            model_name="calibrationrun",
            name="injection_suite",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attacks",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attack_successes",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attacks_not_measured",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign_drifts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign_not_measured",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrow",
            name="payload_kind",
            field=models.CharField(blank=True, max_length=60),
        ),
        migrations.AddField(
            model_name="calibrationrow",
            name="outcome",
            field=models.CharField(blank=True, max_length=20),
        ),
        migrations.RunPython(install, uninstall),
    ]
