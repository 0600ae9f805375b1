"""Admitted means calibrated, in the database itself (SQLite and PostgreSQL).

A revision's status becomes 'admitted' (UPDATE or INSERT) only when a passing calibration run of that
revision with the repository's primary judge exists: a raw ``UPDATE ... SET status = 'admitted'`` without
one is refused, as an integrity error, by the trigger ``rubrics_admitted_requires_calibration`` (and
``..._insert`` on SQLite). The frozen-revision triggers ('retired' included, forward-only status) are
0006's ``rubrics_freeze_*``; this migration leaves them alone.
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations

# vendor -> (statements that install the admission triggers, statements that remove them).
SQL = {
    "sqlite": (
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
    ),
    "postgresql": (
        [
            """CREATE OR REPLACE FUNCTION rubrics_admitted_requires_calibration() RETURNS trigger
            LANGUAGE plpgsql AS $$
            DECLARE
                becomes_admitted boolean := NEW.status = 'admitted';
            BEGIN
                IF TG_OP = 'UPDATE' THEN
                    becomes_admitted := becomes_admitted AND OLD.status IS DISTINCT FROM 'admitted';
                END IF;
                IF becomes_admitted AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
) THEN
                    RAISE EXCEPTION 'a rubric revision is admitted only through a passing calibration run of it with the primary judge of its repository' USING ERRCODE = 'restrict_violation';
                END IF;
                RETURN NEW;
            END $$""",
            """CREATE TRIGGER rubrics_admitted_requires_calibration BEFORE INSERT OR UPDATE ON rubrics_app_rubricrevision
            FOR EACH ROW EXECUTE FUNCTION rubrics_admitted_requires_calibration()""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration ON rubrics_app_rubricrevision""",
            """DROP FUNCTION IF EXISTS rubrics_admitted_requires_calibration()""",
        ],
    ),
}


def _run(schema_editor: Any, index: int) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in SQL:
        raise RuntimeError(f"no frozen-revision triggers for database {vendor!r}: use SQLite or PostgreSQL")
    for statement in SQL[vendor][index]:
        schema_editor.execute(statement)


def install(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, 0)


def uninstall(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, 1)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0010_admission_judges_task_files_calibration")]

    operations = [migrations.RunPython(install, uninstall)]
