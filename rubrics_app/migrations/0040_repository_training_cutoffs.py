from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0021_job_kind_check_evidence"),
    ]

    operations = [
        migrations.AddField(
            model_name="repository",
            name="training_cutoffs",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
