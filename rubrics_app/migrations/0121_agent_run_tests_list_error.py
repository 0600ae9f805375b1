"""A run's tests_list.error: why tests.list failed in its workspace (rubric capture writes it in place of
tests_list.txt), kept so that grading the stored run again sees the same test_listing_broken."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0120_draft_export_sha256_verdict_finding"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentrun",
            name="tests_list_error",
            field=models.TextField(blank=True, null=True),
        ),
    ]
