"""The injection suite's option and counts on a calibration run, and each row's payload kind and outcome.

On SQLite, adding a column with a default rebuilds the table, and the rebuild of the calibration runs' table
fails while 0011's trigger (on the revisions' table) names it: the trigger is dropped first and installed
again after, exactly as 0011 wrote it. PostgreSQL adds the columns in place.
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# 0011's SQLite admission trigger: (its install statements, its drop statements), as 0011 wrote them.
_0011_SQLITE = (
    [
        """CREATE TRIGGER rubrics_admitted_requires_calibration BEFORE UPDATE OF status ON rubrics_app_rubricrevision
            FOR EACH ROW WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
)
            BEGIN SELECT RAISE(ABORT, 'a rubric revision is admitted only through a passing calibration run of it with the primary judge of its repository'); END""",
        """CREATE TRIGGER rubrics_admitted_requires_calibration_insert BEFORE INSERT ON rubrics_app_rubricrevision
            FOR EACH ROW WHEN NEW.status = 'admitted' AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
)
            BEGIN SELECT RAISE(ABORT, 'a rubric revision is admitted only through a passing calibration run of it with the primary judge of its repository'); END""",
    ],
    [
        """DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration""",
        """DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration_insert""",
    ],
)


def _on_sqlite(index: int) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for sql in _0011_SQLITE[index]:
                schema_editor.execute(sql)

    return run


install, uninstall = _on_sqlite(0), _on_sqlite(1)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0060_drafting"),
    ]

    operations = [
        migrations.RunPython(uninstall, install),
        migrations.AddField(
            model_name="calibrationrun",
            name="injection_suite",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attacks",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attack_successes",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="attacks_not_measured",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign_drifts",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrun",
            name="benign_not_measured",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="calibrationrow",
            name="payload_kind",
            field=models.CharField(blank=True, max_length=60),
        ),
        migrations.AddField(
            model_name="calibrationrow",
            name="outcome",
            field=models.CharField(blank=True, max_length=20),
        ),
        migrations.RunPython(install, uninstall),
    ]
