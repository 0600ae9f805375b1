"""Admitted means calibrated, in the database itself (SQLite and PostgreSQL); retired revisions stay frozen.

1. A revision's status becomes 'admitted' (UPDATE or INSERT) only when a passing calibration run of that
   revision with the repository's primary judge exists: a raw ``UPDATE ... SET status = 'admitted'`` without
   one is refused, as an integrity error, by the trigger ``rubrics_admitted_requires_calibration``.
2. Admitting a revision retires the task's previously admitted one ('retired'), so the frozen-revision
   triggers of 0005 are reinstalled with 'retired' among the frozen statuses: a retired revision's content,
   items and calibration diffs are never edited either, and its status stays among the frozen ones.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

_0005 = importlib.import_module("rubrics_app.migrations.0005_frozen_status_stays_frozen")

REVISION = "rubrics_app_rubricrevision"
_FROZEN = "('approved', 'admitted')"
_FROZEN_WITH_RETIRED = "('approved', 'admitted', 'retired')"

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


def frozen_trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    """0005's frozen-revision triggers with 'retired' among the frozen statuses (install, remove)."""
    forward, backward = _0005.trigger_sql(vendor)
    widened = [sql.replace(_FROZEN, _FROZEN_WITH_RETIRED) for sql in forward]
    assert all(_FROZEN not in sql for sql in widened), "0005's triggers changed shape"
    return widened, backward


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
    vendor = schema_editor.connection.vendor
    for sql in (
        _0005.trigger_sql(vendor)[1] + frozen_trigger_sql(vendor)[0] + calibration_trigger_sql(vendor)[0]
    ):
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in (
        calibration_trigger_sql(vendor)[1] + frozen_trigger_sql(vendor)[1] + _0005.trigger_sql(vendor)[0]
    ):
        schema_editor.execute(sql)


def trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    """The frozen-revision triggers as this migration leaves them (tests lift them for a flush)."""
    return frozen_trigger_sql(vendor)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0010_admission_judges_task_files_calibration")]

    operations = [migrations.RunPython(install, uninstall)]
