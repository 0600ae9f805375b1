"""Batch sweeps: a repository's choice (JudgeSetting.sweep_batch) and each sweep's (Sweep.batch).

SQLite adds a column by rebuilding the table, which the freeze triggers reading rubrics_app_judgesetting
refuse mid-rebuild: they are dropped around it and installed again, unchanged (0130's column lists).
"""

from __future__ import annotations

import importlib

from django.db import migrations, models

from rubrics_app import freeze

_0130 = importlib.import_module("rubrics_app.migrations.0130_freeze_in_one_module")

install, uninstall = freeze.installer(_0130.COLUMNS)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0130_freeze_in_one_module"),
    ]

    operations = [
        migrations.RunPython(uninstall, install),
        migrations.AddField(
            model_name="judgesetting",
            name="sweep_batch",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="sweep",
            name="batch",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(install, uninstall),
    ]
