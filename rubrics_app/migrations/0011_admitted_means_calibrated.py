"""Admitted means calibrated, in the database itself (SQLite and PostgreSQL).

A revision's status becomes 'admitted' (UPDATE or INSERT) only when a passing calibration run of that
revision with the repository's primary judge exists: a raw ``UPDATE ... SET status = 'admitted'`` without
one is refused, as an integrity error, by the trigger ``rubrics_admitted_requires_calibration`` (and
``..._insert`` on SQLite). The frozen-revision triggers ('retired' included, forward-only status) are
0006's ``rubrics_freeze_*``; this migration leaves them alone.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

REVISION = "rubrics_app_rubricrevision"

MESSAGE = (
    "a rubric revision is admitted only through a passing calibration run of it "
    "with the primary judge of its repository"
)
# A passing run of NEW's revision whose judge is the repository's primary judge.
_CALIBRATED = """EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun AS c
    JOIN rubrics_app_task AS t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting AS j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
)"""


def calibration_trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    if vendor == "sqlite":
        forward = [
            f"""CREATE TRIGGER rubrics_admitted_requires_calibration BEFORE UPDATE OF status ON {REVISION}
            FOR EACH ROW WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' AND NOT {_CALIBRATED}
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
            f"""CREATE TRIGGER rubrics_admitted_requires_calibration_insert BEFORE INSERT ON {REVISION}
            FOR EACH ROW WHEN NEW.status = 'admitted' AND NOT {_CALIBRATED}
            BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
        ]
        backward = [
            "DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration",
            "DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration_insert",
        ]
        return forward, backward
    if vendor == "postgresql":
        forward = [
            f"""CREATE OR REPLACE FUNCTION rubrics_admitted_requires_calibration() RETURNS trigger
            LANGUAGE plpgsql AS $$
            DECLARE
                becomes_admitted boolean := NEW.status = 'admitted';
            BEGIN
                IF TG_OP = 'UPDATE' THEN
                    becomes_admitted := becomes_admitted AND OLD.status IS DISTINCT FROM 'admitted';
                END IF;
                IF becomes_admitted AND NOT {_CALIBRATED} THEN
                    RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
                END IF;
                RETURN NEW;
            END $$""",
            f"""CREATE TRIGGER rubrics_admitted_requires_calibration BEFORE INSERT OR UPDATE ON {REVISION}
            FOR EACH ROW EXECUTE FUNCTION rubrics_admitted_requires_calibration()""",
        ]
        backward = [
            f"DROP TRIGGER IF EXISTS rubrics_admitted_requires_calibration ON {REVISION}",
            "DROP FUNCTION IF EXISTS rubrics_admitted_requires_calibration()",
        ]
        return forward, backward
    raise RuntimeError(f"no admission triggers for database {vendor!r}: use SQLite or PostgreSQL")


def install(apps: Any, schema_editor: Any) -> None:
    for sql in calibration_trigger_sql(schema_editor.connection.vendor)[0]:
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    for sql in calibration_trigger_sql(schema_editor.connection.vendor)[1]:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0010_admission_judges_task_files_calibration")]

    operations = [migrations.RunPython(install, uninstall)]
