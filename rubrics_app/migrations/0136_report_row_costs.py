"""Each judge's cost on a report row in columns of its own (ReportRow.primary_cost and the rest), out of the
verdicts' JSON, so that the report sums runs with the same verdicts in one group; every row is written
again with the same code as the app's."""

from typing import Any

from django.db import migrations, models


def refill_rows(apps: Any, schema_editor: Any) -> None:
    # The same code as the app's, over the models as they are at this migration.
    from rubrics_app.services.report_rows import RowModels, fill_report_rows

    models_ = RowModels(
        apps.get_model("rubrics_app", "RunGrade"),
        apps.get_model("rubrics_app", "JudgeGrade"),
        apps.get_model("rubrics_app", "ItemVerdict"),
        apps.get_model("rubrics_app", "ReportRow"),
        apps.get_model("rubrics_app", "QueuePair"),
    )
    fill_report_rows(models_.row.objects.values_list("grade_id", flat=True), models_)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0135_queue_pairs"),
    ]

    operations = [
        *(
            migrations.AddField(
                model_name="reportrow",
                name=name,
                field=models.FloatField(db_default=0.0, default=0.0),
            )
            for name in ("primary_cost", "primary_tree_cost", "second_cost", "second_tree_cost")
        ),
        migrations.RunPython(refill_rows, migrations.RunPython.noop),
    ]
