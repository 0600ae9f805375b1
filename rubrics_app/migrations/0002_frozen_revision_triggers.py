"""The database itself refuses to edit an approved or admitted rubric revision (SQLite and PostgreSQL).

Allowed on a frozen revision: approved -> admitted, the demotion admitted -> approved when another revision of
the task is admitted, and the admitted_at/admitted_by columns that go with them. Everything else (its content,
its provenance, going back to draft, deleting it) and every INSERT/UPDATE/DELETE of its items and
calibration diffs is rejected with an integrity error.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

REVISION = "rubrics_app_rubricrevision"
CHILDREN = ("rubrics_app_rubricitem", "rubrics_app_calibrationdiff")
FROZEN = "('approved', 'admitted')"

# Every column of a revision except id, status, admitted_at and admitted_by_id.
CONTENT_COLUMNS = [
    "task_id",
    "number",
    "parent_id",
    "origin",
    "drafted_by_id",
    "drafted_by_model",
    "input_hash",
    "created_at",
    "intent",
    "allowed_globs",
    "denied_globs",
    "max_changed_lines",
    "max_files",
    "lazy_solution",
    "alt_valid_solution",
    "omitted_keys",
    "version",
    "approved_at",
    "approved_by_id",
]

MESSAGE = "rubric revision is approved or admitted: it is never edited (start a new draft from it)"


def _sqlite() -> tuple[list[str], list[str]]:
    changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in CONTENT_COLUMNS)
    forward = [
        f"""CREATE TRIGGER rubrics_frozen_revision_update BEFORE UPDATE ON {REVISION}
        FOR EACH ROW WHEN OLD.status IN {FROZEN} AND (NEW.status = 'draft' OR {changed})
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
        f"""CREATE TRIGGER rubrics_frozen_revision_delete BEFORE DELETE ON {REVISION}
        FOR EACH ROW WHEN OLD.status IN {FROZEN}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    ]
    backward = [
        "DROP TRIGGER IF EXISTS rubrics_frozen_revision_update",
        "DROP TRIGGER IF EXISTS rubrics_frozen_revision_delete",
    ]
    for table in CHILDREN:
        frozen_old = f"(SELECT status FROM {REVISION} WHERE id = OLD.revision_id) IN {FROZEN}"
        frozen_new = f"(SELECT status FROM {REVISION} WHERE id = NEW.revision_id) IN {FROZEN}"
        for event, condition in (
            ("INSERT", frozen_new),
            ("UPDATE", f"{frozen_old} OR {frozen_new}"),
            ("DELETE", frozen_old),
        ):
            name = f"{table}_frozen_{event.lower()}"
            forward.append(
                f"""CREATE TRIGGER {name} BEFORE {event} ON {table}
                FOR EACH ROW WHEN {condition}
                BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"""
            )
            backward.append(f"DROP TRIGGER IF EXISTS {name}")
    return forward, backward


def _postgresql() -> tuple[list[str], list[str]]:
    new_row = ", ".join(f"NEW.{c}" for c in CONTENT_COLUMNS)
    old_row = ", ".join(f"OLD.{c}" for c in CONTENT_COLUMNS)
    # SQLSTATE 23001 (restrict_violation) reaches Django as IntegrityError, as SQLite's RAISE(ABORT) does.
    forward = [
        f"""CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.status IN {FROZEN} THEN
                IF TG_OP = 'DELETE' OR NEW.status = 'draft'
                   OR ROW({new_row}) IS DISTINCT FROM ROW({old_row}) THEN
                    RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
                END IF;
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
        f"""CREATE TRIGGER rubrics_frozen_revision BEFORE UPDATE OR DELETE ON {REVISION}
        FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision()""",
        f"""CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision_part() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE id = OLD.revision_id AND status IN {FROZEN}
            ) THEN
                RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE id = NEW.revision_id AND status IN {FROZEN}
            ) THEN
                RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
    ]
    backward = [f"DROP TRIGGER IF EXISTS rubrics_frozen_revision ON {REVISION}"]
    for table in CHILDREN:
        forward.append(
            f"""CREATE TRIGGER {table}_frozen BEFORE INSERT OR UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision_part()"""
        )
        backward.append(f"DROP TRIGGER IF EXISTS {table}_frozen ON {table}")
    backward += [
        "DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision()",
        "DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision_part()",
    ]
    return forward, backward


def trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    """(statements that install the triggers, statements that remove them) for a database vendor."""
    if vendor == "sqlite":
        return _sqlite()
    if vendor == "postgresql":
        return _postgresql()
    raise RuntimeError(f"no frozen-revision triggers for database {vendor!r}: use SQLite or PostgreSQL")


def install(apps: Any, schema_editor: Any) -> None:
    for sql in trigger_sql(schema_editor.connection.vendor)[0]:
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    for sql in trigger_sql(schema_editor.connection.vendor)[1]:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0001_initial")]

    operations = [migrations.RunPython(install, uninstall)]
