from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0011_admitted_means_calibrated"),
    ]

    operations = [
        migrations.AddField(
            model_name="repository",
            name="training_cutoffs",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
