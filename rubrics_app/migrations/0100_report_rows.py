"""The report's precomputed rows (ReportRow), filled for every grade already stored."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def fill_rows(apps: Any, schema_editor: Any) -> None:
    # The same code as the app's, over the models as they are at this migration.
    from rubrics_app.services.report_rows import RowModels, fill_report_rows

    models_ = RowModels.of(apps)
    fill_report_rows(models_.grade.objects.values_list("pk", flat=True), models_)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0090_sweeps"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReportRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("latest", models.BooleanField(default=False)),
                ("name", models.TextField()),
                ("arm", models.CharField(blank=True, max_length=200)),
                ("model", models.CharField(blank=True, max_length=200)),
                ("prompt_style", models.CharField(blank=True, max_length=10)),
                ("status", models.CharField(max_length=30)),
                ("test_pass", models.BooleanField(null=True)),
                ("mergeable", models.BooleanField(null=True)),
                ("merge_score", models.FloatField(null=True)),
                ("checks_passed", models.BooleanField(null=True)),
                ("provisional", models.BooleanField()),
                ("metrics", models.TextField()),
                ("primary", models.TextField()),
                ("second", models.TextField()),
                ("human_items", models.TextField()),
                ("human_checks", models.BooleanField(default=False)),
                (
                    "grade",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="report_row",
                        to="rubrics_app.rungrade",
                    ),
                ),
                (
                    "repository",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="rubrics_app.repository",
                    ),
                ),
                (
                    "revision",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="rubrics_app.rubricrevision",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="rubrics_app.agentrun",
                    ),
                ),
                (
                    "task",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="rubrics_app.task"
                    ),
                ),
            ],
            options={
                "ordering": ["run_id", "grade_id"],
                "indexes": [
                    models.Index(fields=["repository", "latest", "arm", "model"], name="report_row_lookup"),
                    models.Index(fields=["run", "grade"], name="report_row_run"),
                ],
            },
        ),
        migrations.RunPython(fill_rows, migrations.RunPython.noop),
    ]
