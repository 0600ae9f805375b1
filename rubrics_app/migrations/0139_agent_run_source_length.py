"""An agent run's source (the folder or zip member it came from) bounded in the schema at 500 characters, the
column's length (rubrics_app.models.MAX_RUN_SOURCE, written out here so the migration never changes with the
code): PostgreSQL's varchar already refused a longer one, SQLite stored it whole. The run import checks the
bound before it writes; now a writer that skips it is refused on both databases alike. A longer source an
SQLite database already holds is cut to its first 500 characters first (it is a label, not the run's data)."""

import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0138_agent_run_passed_not_measured"),
    ]

    operations = [
        migrations.RunSQL(
            "UPDATE rubrics_app_agentrun SET source = substr(source, 1, 500) WHERE length(source) > 500",
            migrations.RunSQL.noop,
        ),
        migrations.AddConstraint(
            model_name="agentrun",
            constraint=models.CheckConstraint(
                condition=django.db.models.lookups.LessThanOrEqual(
                    django.db.models.functions.text.Length("source"), 500
                ),
                name="agent_run_source_length",
            ),
        ),
    ]
