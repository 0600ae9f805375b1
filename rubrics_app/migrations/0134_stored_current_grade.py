"""A run's current grade stored (``RunGrade.is_current``) instead of derived by a correlated subquery on every
read of the report, the queue and the counts; one current grade per run, in the schema. Filled here by the
rule as it stands (written out so that this migration never changes with the code): against the task's
admitted revision with the repository's primary judge (or no judge), else the run's newest grade. The
marker is filled before the constraint and its index are built: one pass, not one index update per row."""

from typing import Any

from django.db import migrations, models
from django.db.models import Case, F, OuterRef, Q, Subquery, When


def fill(apps: Any, schema_editor: Any) -> None:
    RunGrade = apps.get_model("rubrics_app", "RunGrade")
    key = Q(revision__status="admitted", revision__task_id=F("run__task_id")) & (
        Q(primary_judge="") | Q(primary_judge=F("run__task__repository__judges__judge"))
    )
    ranked = Subquery(
        RunGrade.objects.filter(run_id=OuterRef("run_id"))
        .annotate(keyed=Case(When(key, then=1), default=0))
        .order_by("-keyed", "-pk")
        .values("pk")[:1]
    )
    RunGrade.objects.filter(pk=ranked).update(is_current=True)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0133_wording_and_repetition_bound"),
    ]

    operations = [
        migrations.AddField(
            model_name="rungrade",
            name="is_current",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="rungrade",
            constraint=models.UniqueConstraint(
                condition=models.Q(("is_current", True)), fields=("run",), name="one_current_grade_per_run"
            ),
        ),
    ]
