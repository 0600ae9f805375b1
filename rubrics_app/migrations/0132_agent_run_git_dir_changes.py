"""A run's git_dir_changes.txt: the paths under .git the run changed (rubric capture writes it from the
snapshot's private record), kept so that a sweep measures the git_dir integrity part as `rubric grade` does.
Runs imported before have none: their git_dir part stays not measured."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0131_sweep_batch"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentrun",
            name="git_dir_changes",
            field=models.TextField(blank=True, null=True),
        ),
    ]
