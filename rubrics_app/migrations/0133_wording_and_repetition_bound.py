"""Job kinds' labels in a newcomer's words: no specification section numbers ("(§5 admission rows)") in what
the job pages show."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0132_agent_run_git_dir_changes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="kind",
            field=models.CharField(
                choices=[
                    ("validate_revision", "Validate a revision"),
                    ("export_revision", "Export a revision to the checkout"),
                    ("check_evidence", "Check blockers' cited code against the checkout"),
                    ("calibrate_revision", "Calibrate a revision against its admission rows"),
                    ("sweep", "Sweep: grade agent runs with the judges"),
                    ("draft_rubric", "Draft a rubric from the merged PR"),
                ],
                max_length=40,
            ),
        ),
    ]
