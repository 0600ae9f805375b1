"""The report's sums read from indexes: each judge's cost on a report row in columns of its own, both judges'
verdicts once per distinct pair (ReportVerdicts) instead of on every row, and two indexes the report's
aggregate queries read alone (services.report.report_sums). Every row is written again with the same code
as the app's, then the verdict texts leave the row."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def _refill(apps: Any, verdicts: bool) -> None:
    # The same code as the app's, over the models as they are at this migration: with ReportVerdicts the
    # rows' verdicts go there, without it (undone) back into the rows, costs included.
    from rubrics_app.services.report_rows import RowModels, fill_report_rows

    models_ = RowModels.of(apps, pairs=True, verdicts=verdicts)
    fill_report_rows(models_.row.objects.values_list("grade_id", flat=True), models_)


def _checked_now(schema_editor: Any) -> None:
    # PostgreSQL checks foreign keys at commit by default; checks left pending would refuse the ALTER TABLE
    # that follows in this migration's transaction, so they are made at once.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def refill_rows(apps: Any, schema_editor: Any) -> None:
    _checked_now(schema_editor)
    _refill(apps, verdicts=True)


def restore_rows(apps: Any, schema_editor: Any) -> None:
    _checked_now(schema_editor)
    _refill(apps, verdicts=False)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0135_queue_pairs"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReportVerdicts",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("primary", models.TextField()),
                ("second", models.TextField()),
            ],
        ),
        *(
            migrations.AddField(
                model_name="reportrow",
                name=name,
                field=models.FloatField(db_default=0.0, default=0.0),
            )
            for name in ("primary_cost", "primary_tree_cost", "second_cost", "second_tree_cost")
        ),
        migrations.AddField(
            model_name="reportrow",
            name="verdicts",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="rubrics_app.reportverdicts",
            ),
        ),
        # Undone, the texts come back empty, then restore_rows writes them.
        *(
            migrations.AlterField(model_name="reportrow", name=name, field=models.TextField(default=""))
            for name in ("primary", "second")
        ),
        migrations.RunPython(refill_rows, restore_rows),
        migrations.RemoveField(model_name="reportrow", name="primary"),
        migrations.RemoveField(model_name="reportrow", name="second"),
        migrations.AlterField(
            model_name="reportrow",
            name="verdicts",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="rubrics_app.reportverdicts",
            ),
        ),
        migrations.AddIndex(
            model_name="reportrow",
            index=models.Index(
                fields=[
                    "repository",
                    "current",
                    "task",
                    "arm",
                    "model",
                    "prompt_style",
                    "revision",
                    "provisional",
                    "status",
                    "test_pass",
                    "mergeable",
                    "merge_score",
                    "integrity_not_measured",
                ],
                name="report_row_outcomes",
            ),
        ),
        migrations.AddIndex(
            model_name="reportrow",
            index=models.Index(
                fields=[
                    "repository",
                    "current",
                    "task",
                    "prompt_style",
                    "test_pass",
                    "checks_passed",
                    "verdicts",
                    "primary_cost",
                    "primary_tree_cost",
                    "second_cost",
                    "second_tree_cost",
                ],
                name="report_row_verdicts",
            ),
        ),
    ]
