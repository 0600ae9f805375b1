"""The audit trail records a saved or removed remote (AuditVerb.REMOTE_SET)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0150_sweep_export_job_files"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="verb",
            field=models.CharField(
                choices=[
                    ("drafted", "drafted"),
                    ("edited", "edited"),
                    ("item_approved", "approved an item of"),
                    ("changes_requested", "requested changes on"),
                    ("commented", "commented on"),
                    ("approved", "approved"),
                    ("admitted", "admitted"),
                    ("exported", "exported"),
                    ("imported", "imported"),
                    ("imported_approved", "imported as approved"),
                    ("calibrated", "calibrated"),
                    ("retired", "retired"),
                    ("judges_set", "set the judges of"),
                    ("task_files_edited", "edited the task files of"),
                    ("draft_settings_set", "set how rubrics are drafted in"),
                    ("remote_set", "set the remote of"),
                    ("mutant_harmless", "marked a mutant harmless for"),
                    ("mutant_unmarked", "took back a harmless mark for"),
                ],
                max_length=30,
            ),
        ),
    ]
