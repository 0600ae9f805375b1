"""Mutants of the oracle judged with a calibration (an authoring aid), their counts on the run, and harmless
marks per revision content and mutant id.

SQLite adds a NOT NULL column by rebuilding the table, and 0011's admission trigger, which reads
rubrics_app_calibrationrun, makes that rebuild fail; so on SQLite the trigger is lifted around the new
columns and put back as 0011 defines it.
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from typing import Any

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

# 0011's SQLite admission trigger: (its install statements, its drop statements), as 0011 wrote them.
_0011_SQLITE = (
    [
        """CREATE TRIGGER rubrics_admitted_requires_calibration BEFORE UPDATE OF status ON rubrics_app_rubricrevision
            FOR EACH ROW WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
)
            BEGIN SELECT RAISE(ABORT, 'a rubric revision is admitted only through a passing calibration run of it with the primary judge of its repository'); END""",
        """CREATE TRIGGER rubrics_admitted_requires_calibration_insert BEFORE INSERT ON rubrics_app_rubricrevision
            FOR EACH ROW WHEN NEW.status = 'admitted' AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
)
            BEGIN SELECT RAISE(ABORT, 'a rubric revision is admitted only through a passing calibration run of it with the primary judge of its repository'); END""",
    ],
    [
        """DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration""",
        """DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration_insert""",
    ],
)


def _lift_admission_trigger(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for sql in _0011_SQLITE[1]:
            schema_editor.execute(sql)


def _restore_admission_trigger(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for sql in _0011_SQLITE[0]:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0070_calibration_injection_suite"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(_lift_admission_trigger, _restore_admission_trigger),
        migrations.AddField(
            model_name="calibrationrun",
            name="mutants_caught",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="mutants_harmless",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="mutants_note",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="mutants_total",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="with_mutants",
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="verb",
            field=models.CharField(
                choices=[
                    ("drafted", "drafted"),
                    ("edited", "edited"),
                    ("item_approved", "approved an item of"),
                    ("changes_requested", "requested changes on"),
                    ("commented", "commented on"),
                    ("approved", "approved"),
                    ("admitted", "admitted"),
                    ("exported", "exported"),
                    ("imported", "imported"),
                    ("imported_approved", "imported as approved"),
                    ("calibrated", "calibrated"),
                    ("retired", "retired"),
                    ("judges_set", "set the judges of"),
                    ("task_files_edited", "edited the task files of"),
                    ("draft_settings_set", "set how rubrics are drafted in"),
                    ("mutant_harmless", "marked a mutant harmless for"),
                    ("mutant_unmarked", "took back a harmless mark for"),
                ],
                max_length=30,
            ),
        ),
        migrations.CreateModel(
            name="CalibrationMutant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("position", models.PositiveIntegerField()),
                ("mutant_id", models.CharField(max_length=40)),
                ("kind", models.CharField(max_length=20)),
                ("description", models.TextField()),
                ("diff", models.BinaryField(default=b"")),
                ("mergeable", models.BooleanField(null=True)),
                ("caught", models.BooleanField()),
                ("actual", models.TextField()),
                ("blockers_failed", models.JSONField(default=list)),
                ("judge_failure", models.TextField(blank=True)),
                ("verdicts", models.JSONField(default=list)),
                ("calls", models.PositiveIntegerField(default=0)),
                ("cost_usd", models.FloatField(default=0.0)),
                ("cache_hit", models.BooleanField(default=False)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mutants",
                        to="rubrics_app.calibrationrun",
                    ),
                ),
            ],
            options={
                "ordering": ["run_id", "position"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "position"), name="one_calibration_mutant_per_position"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="HarmlessMutant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("rubric_sha256", models.CharField(max_length=64)),
                ("mutant_id", models.CharField(max_length=40)),
                ("reason", models.TextField()),
                ("marked_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "marked_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "task",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="harmless_mutants",
                        to="rubrics_app.task",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("task", "rubric_sha256", "mutant_id"),
                        name="one_harmless_mark_per_content_and_mutant",
                    )
                ],
            },
        ),
        migrations.RunPython(_restore_admission_trigger, _lift_admission_trigger),
    ]
