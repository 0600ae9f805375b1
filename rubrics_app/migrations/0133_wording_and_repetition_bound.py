"""Job kinds' labels in a newcomer's words: no specification section numbers ("(§5 admission rows)") in what
the job pages show. An agent run's repetition bounded in the schema by grading.MAX_RUN_INT (2**31 - 1, written
out here so the migration never changes with the code): run.json, the SWE-bench form and --repetition
already refuse anything outside 0..MAX_RUN_INT, and now a writer that skips them is refused on SQLite as it is
by PostgreSQL's integer column, instead of storing a run only one database can hold."""

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
        migrations.AddConstraint(
            model_name="agentrun",
            constraint=models.CheckConstraint(
                condition=models.Q(("repetition__gte", 0), ("repetition__lte", 2147483647)),
                name="agent_run_repetition_in_range",
            ),
        ),
    ]
