"""The report rows gain the test-integrity parts not measured, and keep grade.json's true/false metrics
beside the numeric ones: every stored grade's row is written again, with the same code as the app's."""

from typing import Any

from django.db import migrations, models


def refill_rows(apps: Any, schema_editor: Any) -> None:
    from rubrics_app.services.report_rows import RowModels, fill_report_rows

    models_ = RowModels.of(apps)
    fill_report_rows(models_.grade.objects.values_list("pk", flat=True), models_)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0121_agent_run_tests_list_error"),
    ]

    operations = [
        migrations.AddField(
            model_name="reportrow",
            name="integrity_not_measured",
            field=models.TextField(default="[]", db_default="[]"),
        ),
        migrations.RunPython(refill_rows, migrations.RunPython.noop),
    ]
