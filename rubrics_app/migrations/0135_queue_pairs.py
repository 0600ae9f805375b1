"""The review queue's precomputed pairs (QueuePair), filled for every grade already stored, with the same code
as the app's; and the grade's current marker on its report row (ReportRow.current), with the indexes the
queue page reads by. The tables are filled before their indexes are built: one pass each, not one index
update per row."""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models


def fill_pairs(apps: Any, schema_editor: Any) -> None:
    # The same code as the app's, over the models as they are at this migration.
    from rubrics_app.services.report_rows import RowModels, fill_queue_pairs

    models_ = RowModels.of(apps, pairs=True)
    fill_queue_pairs(models_.grade.objects.values_list("pk", flat=True), models_)
    models_.row.objects.filter(grade__is_current=True).update(current=True)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0134_stored_current_grade"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueuePair",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("item_id", models.CharField(max_length=40)),
                ("kind", models.CharField(blank=True, max_length=10)),
                ("current", models.BooleanField(default=False)),
                ("task_id", models.CharField(max_length=200)),
                ("arm", models.CharField(blank=True, max_length=200)),
                ("model", models.CharField(blank=True, max_length=200)),
                ("repetition", models.IntegerField()),
                ("sample_key", models.FloatField(default=0.0)),
                (
                    "grade",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="rubrics_app.rungrade",
                    ),
                ),
                (
                    "repository",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="rubrics_app.repository",
                    ),
                ),
            ],
            options={
                "ordering": [
                    "repository_id",
                    "kind",
                    "task_id",
                    "arm",
                    "model",
                    "repetition",
                    "grade_id",
                    "item_id",
                ],
            },
        ),
        migrations.AddField(
            model_name="reportrow",
            name="current",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunPython(fill_pairs, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="queuepair",
            index=models.Index(
                fields=[
                    "repository",
                    "kind",
                    "current",
                    "task_id",
                    "arm",
                    "model",
                    "repetition",
                    "grade",
                    "item_id",
                    "sample_key",
                ],
                name="queue_pair_order",
            ),
        ),
        migrations.AddConstraint(
            model_name="queuepair",
            constraint=models.UniqueConstraint(
                fields=("grade", "item_id", "kind"), name="one_queue_pair_per_kind"
            ),
        ),
        *(
            migrations.AddIndex(
                model_name="queuepair",
                index=models.Index(
                    condition=models.Q(("current", True)),
                    fields=["repository", column],
                    name=f"queue_pair_{column}",
                ),
            )
            for column in ("task_id", "item_id", "arm", "model")
        ),
        migrations.AddIndex(
            model_name="reportrow",
            index=models.Index(fields=["repository", "id"], name="report_row_count"),
        ),
        migrations.AddIndex(
            model_name="reportrow",
            index=models.Index(
                fields=["repository", "current", "task", "test_pass", "mergeable"], name="report_row_sums"
            ),
        ),
    ]
