"""Frozen means frozen, on SQLite and PostgreSQL; a revision's status moves only forward.

Replaces the triggers of 0002/0005 (dropped here, put back on reversal) with one set that also closes:

- SQLite ``REPLACE INTO``: it deletes the conflicting row without firing DELETE triggers (unless
  ``recursive_triggers`` is on, which settings.py turns on for every connection of the app). The INSERT
  triggers refuse a row that would replace a frozen one on any of its unique keys, so a raw connection
  without the pragma is refused too. A revision is only ever inserted as a draft.
- PostgreSQL ``TRUNCATE`` (statement triggers: row triggers never see it). Production runs the app as a role
  that does not own the tables, so it cannot disable these triggers either (README).
- Status only forward: draft -> approved -> admitted -> retired, one step at a time; ``retired`` (a revision
  superseded by a newer admitted one) is frozen like approved and admitted.
- The task of a frozen revision: its id, repository, prompts, gate and base commit/date, since what a rubric
  means depends on them; and deleting (or replacing) that task or its repository, even with SQLite's
  foreign keys turned off in a raw connection.

Every refusal is an integrity error (SQLite RAISE(ABORT), PostgreSQL SQLSTATE 23001 restrict_violation).
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# vendor -> (statements that drop 0005's triggers and install these, statements that drop these and put
# 0005's back).
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
            """CREATE TRIGGER rubrics_freeze_revision_insert BEFORE INSERT ON rubrics_app_rubricrevision FOR EACH ROW
        BEGIN
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.status IN ('approved', 'admitted', 'retired') AND (r.id = NEW.id OR (r.task_id = NEW.task_id AND r.number = NEW.number) OR (r.task_id = NEW.task_id AND r.status = 'admitted' AND NEW.status = 'admitted')));
            SELECT RAISE(ABORT, 'a rubric revision is created as a draft') WHERE NEW.status IS NOT 'draft';
        END""",
            """CREATE TRIGGER rubrics_freeze_revision_update BEFORE UPDATE ON rubrics_app_rubricrevision FOR EACH ROW
        BEGIN
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE OLD.status IN ('approved', 'admitted', 'retired')
                AND (NEW.status NOT IN ('approved', 'admitted', 'retired') OR NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.number IS NOT OLD.number OR NEW.parent_id IS NOT OLD.parent_id OR NEW.origin IS NOT OLD.origin OR NEW.drafted_by_id IS NOT OLD.drafted_by_id OR NEW.drafted_by_model IS NOT OLD.drafted_by_model OR NEW.input_hash IS NOT OLD.input_hash OR NEW.created_at IS NOT OLD.created_at OR NEW.intent IS NOT OLD.intent OR NEW.allowed_globs IS NOT OLD.allowed_globs OR NEW.denied_globs IS NOT OLD.denied_globs OR NEW.max_changed_lines IS NOT OLD.max_changed_lines OR NEW.max_files IS NOT OLD.max_files OR NEW.lazy_solution IS NOT OLD.lazy_solution OR NEW.alt_valid_solution IS NOT OLD.alt_valid_solution OR NEW.omitted_keys IS NOT OLD.omitted_keys OR NEW.version IS NOT OLD.version OR NEW.approved_at IS NOT OLD.approved_at OR NEW.approved_by_id IS NOT OLD.approved_by_id);
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.id IS NOT OLD.id AND r.status IN ('approved', 'admitted', 'retired') AND (r.id = NEW.id OR (r.task_id = NEW.task_id AND r.number = NEW.number) OR (r.task_id = NEW.task_id AND r.status = 'admitted' AND NEW.status = 'admitted')));
            SELECT RAISE(ABORT, 'rubric revision status moves only forward: draft -> approved -> admitted -> retired') WHERE NEW.status IS NOT OLD.status
                AND OLD.status || '>' || NEW.status NOT IN ('draft>approved', 'approved>admitted', 'admitted>retired');
        END""",
            """CREATE TRIGGER rubrics_freeze_revision_delete BEFORE DELETE ON rubrics_app_rubricrevision FOR EACH ROW
        WHEN OLD.status IN ('approved', 'admitted', 'retired')
        BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_insert BEFORE INSERT ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_update BEFORE UPDATE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_delete BEFORE DELETE ON rubrics_app_rubricitem
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_insert BEFORE INSERT ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_update BEFORE UPDATE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_delete BEFORE DELETE ON rubrics_app_calibrationdiff
                FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
                BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_task_insert BEFORE INSERT ON rubrics_app_task FOR EACH ROW
        WHEN EXISTS (SELECT 1 FROM rubrics_app_task t WHERE (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')))
        BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_task_update BEFORE UPDATE ON rubrics_app_task FOR EACH ROW
        WHEN ((NEW.id IS NOT OLD.id OR NEW.repository_id IS NOT OLD.repository_id OR NEW.task_id IS NOT OLD.task_id OR NEW.spec_prompt IS NOT OLD.spec_prompt OR NEW.issue_prompt IS NOT OLD.issue_prompt OR NEW.gate IS NOT OLD.gate OR NEW.base_commit IS NOT OLD.base_commit OR NEW.base_date IS NOT OLD.base_date) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))) OR EXISTS (SELECT 1 FROM rubrics_app_task t WHERE t.id IS NOT OLD.id AND (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')))
        BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_task_delete BEFORE DELETE ON rubrics_app_task FOR EACH ROW
        WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
        BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_insert BEFORE INSERT ON rubrics_app_repository FOR EACH ROW
        WHEN EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
        BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_update BEFORE UPDATE ON rubrics_app_repository FOR EACH ROW
        WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))
            OR EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE p.id IS NOT OLD.id AND (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
        BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_delete BEFORE DELETE ON rubrics_app_repository FOR EACH ROW
        WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
        BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_delete""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_rubricitem_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_rubricitem_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_rubricitem_delete""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_calibrationdiff_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_calibrationdiff_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_rubrics_app_calibrationdiff_delete""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_task_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_task_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_task_delete""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_repository_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_repository_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_repository_delete""",
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
    ),
    "postgresql": (
        [
            """DROP TRIGGER IF EXISTS rubrics_frozen_revision ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_app_rubricitem_frozen ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_app_calibrationdiff_frozen ON rubrics_app_calibrationdiff""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision()""",
            """DROP FUNCTION IF EXISTS rubrics_refuse_frozen_revision_part()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_revision() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'draft' THEN RAISE EXCEPTION 'a rubric revision is created as a draft' USING ERRCODE = 'restrict_violation'; END IF;
                RETURN NEW;
            END IF;
            IF OLD.status IN ('approved', 'admitted', 'retired') AND (TG_OP = 'DELETE' OR NEW.status NOT IN ('approved', 'admitted', 'retired')
                    OR NEW.id IS DISTINCT FROM OLD.id OR ROW(NEW.task_id, NEW.number, NEW.parent_id, NEW.origin, NEW.drafted_by_id, NEW.drafted_by_model, NEW.input_hash, NEW.created_at, NEW.intent, NEW.allowed_globs, NEW.denied_globs, NEW.max_changed_lines, NEW.max_files, NEW.lazy_solution, NEW.alt_valid_solution, NEW.omitted_keys, NEW.version, NEW.approved_at, NEW.approved_by_id) IS DISTINCT FROM ROW(OLD.task_id, OLD.number, OLD.parent_id, OLD.origin, OLD.drafted_by_id, OLD.drafted_by_model, OLD.input_hash, OLD.created_at, OLD.intent, OLD.allowed_globs, OLD.denied_globs, OLD.max_changed_lines, OLD.max_files, OLD.lazy_solution, OLD.alt_valid_solution, OLD.omitted_keys, OLD.version, OLD.approved_at, OLD.approved_by_id)) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status
                    AND OLD.status || '>' || NEW.status NOT IN ('draft>approved', 'approved>admitted', 'admitted>retired') THEN
                RAISE EXCEPTION 'rubric revision status moves only forward: draft -> approved -> admitted -> retired' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_freeze_revision BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricrevision
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_revision_part() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id AND status IN ('approved', 'admitted', 'retired')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id AND status IN ('approved', 'admitted', 'retired')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_freeze_part BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricitem
            FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_part()""",
            """CREATE TRIGGER rubrics_freeze_part BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_calibrationdiff
            FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_part()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'rubrics_app_rubricrevision' AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE status IN ('approved', 'admitted', 'retired')
            ) OR TG_TABLE_NAME IN ('rubrics_app_rubricitem', 'rubrics_app_calibrationdiff') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE r.status IN ('approved', 'admitted', 'retired')
                UNION ALL
                SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE r.status IN ('approved', 'admitted', 'retired')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NULL;
        END $$""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_rubricrevision
            FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_rubricitem
            FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_calibrationdiff
            FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_task() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF (TG_OP = 'DELETE' OR ROW(NEW.id, NEW.repository_id, NEW.task_id, NEW.spec_prompt, NEW.issue_prompt, NEW.gate, NEW.base_commit, NEW.base_date) IS DISTINCT FROM ROW(OLD.id, OLD.repository_id, OLD.task_id, OLD.spec_prompt, OLD.issue_prompt, OLD.gate, OLD.base_commit, OLD.base_date))
                AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')) THEN
                RAISE EXCEPTION 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_freeze_task BEFORE UPDATE OR DELETE ON rubrics_app_task
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_task()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_repository() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF (TG_OP = 'DELETE' OR NEW.id IS DISTINCT FROM OLD.id)
                AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')) THEN
                RAISE EXCEPTION 'repository holds an approved, admitted or retired rubric revision: it is never deleted' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
        END $$""",
            """CREATE TRIGGER rubrics_freeze_repository BEFORE UPDATE OR DELETE ON rubrics_app_repository
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_repository()""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_part ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_part ON rubrics_app_calibrationdiff""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_calibrationdiff""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_task ON rubrics_app_task""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_repository ON rubrics_app_repository""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_revision()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_revision_part()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_truncate()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_task()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_repository()""",
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
    dependencies = [("rubrics_app", "0005_frozen_status_stays_frozen")]

    operations = [
        migrations.AlterField(
            model_name="rubricrevision",
            name="status",
            field=models.CharField(
                choices=[
                    ("draft", "Draft"),
                    ("approved", "Approved"),
                    ("admitted", "Admitted"),
                    ("retired", "Retired"),
                ],
                default="draft",
                max_length=20,
            ),
        ),
        migrations.RunPython(install, uninstall),
    ]
