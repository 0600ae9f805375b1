"""A run's "pass" may be unknown: a SWE-bench run whose harness infrastructure failed was not measured."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0137_report_snapshot"),
    ]

    operations = [
        migrations.AlterField(
            model_name="agentrun",
            name="passed",
            field=models.BooleanField(null=True),
        ),
    ]
