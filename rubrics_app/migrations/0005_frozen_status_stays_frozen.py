"""A frozen revision's status may only move between 'approved' and 'admitted'.

0002's triggers refused 'draft' as the new status but let any other value through: a raw UPDATE could set
an approved revision's status to, say, 'x' (no longer frozen), rewrite its content and items, and set it back
to 'approved'. The revision triggers now refuse every new status outside ('approved', 'admitted').
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations

# vendor -> (statements run forward: 0002's triggers dropped, the strict ones installed; statements run
# backward), as 0002's and this migration's code wrote them.
SQL = {
    "sqlite": (
        [
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision_update""",
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision_delete""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_insert""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_update""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_delete""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_insert""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_update""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_delete""",
            """CREATE TRIGGER rubrics_frozen_revision_update BEFORE UPDATE ON rubrics_app_rubricrevision
        FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted') AND (NEW.status NOT IN ('approved', 'admitted') OR NEW.task_id IS NOT OLD.task_id OR NEW.number IS NOT OLD.number OR NEW.parent_id IS NOT OLD.parent_id OR NEW.origin IS NOT OLD.origin OR NEW.drafted_by_id IS NOT OLD.drafted_by_id OR NEW.drafted_by_model IS NOT OLD.drafted_by_model OR NEW.input_hash IS NOT OLD.input_hash OR NEW.created_at IS NOT OLD.created_at OR NEW.intent IS NOT OLD.intent OR NEW.allowed_globs IS NOT OLD.allowed_globs OR NEW.denied_globs IS NOT OLD.denied_globs OR NEW.max_changed_lines IS NOT OLD.max_changed_lines OR NEW.max_files IS NOT OLD.max_files OR NEW.lazy_solution IS NOT OLD.lazy_solution OR NEW.alt_valid_solution IS NOT OLD.alt_valid_solution OR NEW.omitted_keys IS NOT OLD.omitted_keys OR NEW.version IS NOT OLD.version OR NEW.approved_at IS NOT OLD.approved_at OR NEW.approved_by_id IS NOT OLD.approved_by_id)
        BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_frozen_revision_delete BEFORE DELETE ON rubrics_app_rubricrevision
        FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted')
        BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_insert BEFORE INSERT ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_update BEFORE UPDATE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_delete BEFORE DELETE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_insert BEFORE INSERT ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_update BEFORE UPDATE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_delete BEFORE DELETE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision_update""",
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision_delete""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_insert""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_update""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen_delete""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_insert""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_update""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen_delete""",
            """CREATE TRIGGER rubrics_frozen_revision_update BEFORE UPDATE ON rubrics_app_rubricrevision
        FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted') AND (NEW.status = 'draft' OR NEW.task_id IS NOT OLD.task_id OR NEW.number IS NOT OLD.number OR NEW.parent_id IS NOT OLD.parent_id OR NEW.origin IS NOT OLD.origin OR NEW.drafted_by_id IS NOT OLD.drafted_by_id OR NEW.drafted_by_model IS NOT OLD.drafted_by_model OR NEW.input_hash IS NOT OLD.input_hash OR NEW.created_at IS NOT OLD.created_at OR NEW.intent IS NOT OLD.intent OR NEW.allowed_globs IS NOT OLD.allowed_globs OR NEW.denied_globs IS NOT OLD.denied_globs OR NEW.max_changed_lines IS NOT OLD.max_changed_lines OR NEW.max_files IS NOT OLD.max_files OR NEW.lazy_solution IS NOT OLD.lazy_solution OR NEW.alt_valid_solution IS NOT OLD.alt_valid_solution OR NEW.omitted_keys IS NOT OLD.omitted_keys OR NEW.version IS NOT OLD.version OR NEW.approved_at IS NOT OLD.approved_at OR NEW.approved_by_id IS NOT OLD.approved_by_id)
        BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_frozen_revision_delete BEFORE DELETE ON rubrics_app_rubricrevision
        FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted')
        BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_insert BEFORE INSERT ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_update BEFORE UPDATE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen_delete BEFORE DELETE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_insert BEFORE INSERT ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_update BEFORE UPDATE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen_delete BEFORE DELETE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved or admitted: it is never edited (start a new draft from it)'); END""",
        ],
    ),
    "postgresql": (
        [
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen ON rubrics_app_calibrationdiff""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision()""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision_part()""",
            """CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.status IN ('approved', 'admitted') THEN
                IF TG_OP = 'DELETE' OR NEW.status NOT IN ('approved', 'admitted')
                   OR ROW(NEW.task_id, NEW.number, NEW.parent_id, NEW.origin, NEW.drafted_by_id, NEW.drafted_by_model, NEW.input_hash, NEW.created_at, NEW.intent, NEW.allowed_globs, NEW.denied_globs, NEW.max_changed_lines, NEW.max_files, NEW.lazy_solution, NEW.alt_valid_solution, NEW.omitted_keys, NEW.version, NEW.approved_at, NEW.approved_by_id) IS DISTINCT FROM ROW(OLD.task_id, OLD.number, OLD.parent_id, OLD.origin, OLD.drafted_by_id, OLD.drafted_by_model, OLD.input_hash, OLD.created_at, OLD.intent, OLD.allowed_globs, OLD.denied_globs, OLD.max_changed_lines, OLD.max_files, OLD.lazy_solution, OLD.alt_valid_solution, OLD.omitted_keys, OLD.version, OLD.approved_at, OLD.approved_by_id) THEN
                    RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
                END IF;
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_frozen_revision BEFORE UPDATE OR DELETE ON rubrics_app_rubricrevision
        FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision()""",
            """CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision_part() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id AND status IN ('approved', 'admitted')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id AND status IN ('approved', 'admitted')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricitem
            FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision_part()""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_calibrationdiff
            FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision_part()""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen ON rubrics_app_calibrationdiff""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision()""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision_part()""",
            """CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF OLD.status IN ('approved', 'admitted') THEN
                IF TG_OP = 'DELETE' OR NEW.status = 'draft'
                   OR ROW(NEW.task_id, NEW.number, NEW.parent_id, NEW.origin, NEW.drafted_by_id, NEW.drafted_by_model, NEW.input_hash, NEW.created_at, NEW.intent, NEW.allowed_globs, NEW.denied_globs, NEW.max_changed_lines, NEW.max_files, NEW.lazy_solution, NEW.alt_valid_solution, NEW.omitted_keys, NEW.version, NEW.approved_at, NEW.approved_by_id) IS DISTINCT FROM ROW(OLD.task_id, OLD.number, OLD.parent_id, OLD.origin, OLD.drafted_by_id, OLD.drafted_by_model, OLD.input_hash, OLD.created_at, OLD.intent, OLD.allowed_globs, OLD.denied_globs, OLD.max_changed_lines, OLD.max_files, OLD.lazy_solution, OLD.alt_valid_solution, OLD.omitted_keys, OLD.version, OLD.approved_at, OLD.approved_by_id) THEN
                    RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
                END IF;
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_frozen_revision BEFORE UPDATE OR DELETE ON rubrics_app_rubricrevision
        FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision()""",
            """CREATE OR REPLACE FUNCTION rubrics_refuse_frozen_revision_part() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id AND status IN ('approved', 'admitted')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id AND status IN ('approved', 'admitted')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved or admitted: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN
                RETURN OLD;
            END IF;
            RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_app_rubricitem_frozen BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricitem
            FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision_part()""",
            """CREATE TRIGGER rubrics_app_calibrationdiff_frozen BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_calibrationdiff
            FOR EACH ROW EXECUTE FUNCTION rubrics_refuse_frozen_revision_part()""",
        ],
    ),
}


def install(apps: Any, schema_editor: Any) -> None:
    for sql in SQL[schema_editor.connection.vendor][0]:
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    for sql in SQL[schema_editor.connection.vendor][1]:
        schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("rubrics_app", "0004_audit_verb_commented")]

    operations = [migrations.RunPython(install, uninstall)]
