"""The report kept ready is stored as JSON (compressed), not as a pickle.

A pickle runs code when it is read, so whoever could write a row of this table ran code in the web process.
The rows are now the JSON of the page's report, read back through its pydantic model; one that does not
validate is treated as absent. The pickled rows are dropped with their column, not converted: reading them
to convert them is what must never happen. Nothing is lost: a stored report is a cache of data held
elsewhere, the page computes the report until a worker has stored it again (the next import, sweep or
admission sends one), and ``manage.py prepare_report`` stores it at once.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0140_job_sent_at"),
    ]

    operations = [
        # The pickles go with their column, unread.
        migrations.RemoveField(model_name="reportsnapshot", name="data"),
        migrations.AddField(
            model_name="reportsnapshot",
            name="report_json",
            field=models.BinaryField(default=b""),
            preserve_default=False,
        ),
        # Rows left without a report; backwards, the JSON rows go before the pickle column returns.
        migrations.RunSQL("DELETE FROM rubrics_app_reportsnapshot", "DELETE FROM rubrics_app_reportsnapshot"),
    ]
