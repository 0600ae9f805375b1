"""When a job's message was last handed to the broker (Job.sent_at): the reaper sends again a queued job no
worker claimed in time."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0139_agent_run_source_length"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="sent_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
