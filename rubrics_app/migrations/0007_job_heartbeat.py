from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0006_freeze_holes_closed")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]
