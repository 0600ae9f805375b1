"""Batch sweeps: a repository's choice (JudgeSetting.sweep_batch) and each sweep's (Sweep.batch).

SQLite adds a column by rebuilding the table, which the freeze triggers reading rubrics_app_judgesetting
refuse mid-rebuild: they are dropped around it and installed again, unchanged. The SQL below is what 0130
installs (rubrics_app.freeze as it was then), written out so that a later edit to freeze.py never changes it.
"""

# ruff: noqa: E501  (the SQL is literal, as it was written at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations, models

# vendor -> (statements that install the freeze triggers, statements that drop them), as 0130 installs them.
FREEZE_SQL = {
    "sqlite": (
        [
            """CREATE TRIGGER rubrics_freeze_revision_insert BEFORE INSERT ON rubrics_app_rubricrevision FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.status IN ('approved', 'admitted', 'retired') AND (r.id = NEW.id OR (r.task_id = NEW.task_id AND r.number = NEW.number)));
            SELECT RAISE(ABORT, 'a rubric revision is created as a draft') WHERE NEW.status IS NOT 'draft';
            END""",
            """CREATE TRIGGER rubrics_freeze_revision_update BEFORE UPDATE ON rubrics_app_rubricrevision FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE OLD.status IN ('approved', 'admitted', 'retired')
                AND (NEW.status NOT IN ('approved', 'admitted', 'retired') OR NEW.id IS NOT OLD.id OR (NEW.task_id IS NOT OLD.task_id OR NEW.number IS NOT OLD.number OR NEW.parent_id IS NOT OLD.parent_id OR NEW.origin IS NOT OLD.origin OR NEW.drafted_by_id IS NOT OLD.drafted_by_id OR NEW.drafted_by_model IS NOT OLD.drafted_by_model OR NEW.input_hash IS NOT OLD.input_hash OR NEW.created_at IS NOT OLD.created_at OR NEW.intent IS NOT OLD.intent OR NEW.allowed_globs IS NOT OLD.allowed_globs OR NEW.denied_globs IS NOT OLD.denied_globs OR NEW.max_changed_lines IS NOT OLD.max_changed_lines OR NEW.max_files IS NOT OLD.max_files OR NEW.lazy_solution IS NOT OLD.lazy_solution OR NEW.alt_valid_solution IS NOT OLD.alt_valid_solution OR NEW.omitted_keys IS NOT OLD.omitted_keys OR NEW.version IS NOT OLD.version OR NEW.approved_at IS NOT OLD.approved_at OR NEW.content_sha256 IS NOT OLD.content_sha256 OR NEW.approved_by_id IS NOT OLD.approved_by_id));
            SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.id IS NOT OLD.id AND r.status IN ('approved', 'admitted', 'retired') AND (r.id = NEW.id OR (r.task_id = NEW.task_id AND r.number = NEW.number)));
            SELECT RAISE(ABORT, 'rubric revision status moves only forward: draft -> approved -> admitted -> retired') WHERE NEW.status IS NOT OLD.status
                AND OLD.status || '>' || NEW.status NOT IN ('draft>approved', 'approved>admitted', 'admitted>retired');
            SELECT RAISE(ABORT, 'a rubric revision is admitted only through a passing calibration run of its content with the primary judge of its repository') WHERE NEW.status = 'admitted' AND OLD.status IS NOT 'admitted'
                AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun c
    JOIN rubrics_app_task t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
        AND NEW.content_sha256 <> '' AND c.rubric_sha256 = NEW.content_sha256
);
            SELECT RAISE(ABORT, 'a rubric revision retires only when a newer revision of its task is admitted') WHERE NEW.status = 'retired' AND OLD.status IS NOT 'retired'
                AND NOT EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.task_id AND r.number > OLD.number AND r.status = 'admitted');
            END""",
            """CREATE TRIGGER rubrics_freeze_revision_admitted AFTER UPDATE OF status ON rubrics_app_rubricrevision FOR EACH ROW
            WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' BEGIN
            UPDATE rubrics_app_rubricrevision SET status = 'retired'
                WHERE task_id = NEW.task_id AND status = 'admitted' AND id <> NEW.id;
            END""",
            """CREATE TRIGGER rubrics_freeze_revision_delete BEFORE DELETE ON rubrics_app_rubricrevision FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted', 'retired')
            BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_insert BEFORE INSERT ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_update BEFORE UPDATE ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_delete BEFORE DELETE ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_insert BEFORE INSERT ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_update BEFORE UPDATE ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_delete BEFORE DELETE ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
                    BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END""",
            """CREATE TRIGGER rubrics_freeze_task_insert BEFORE INSERT ON rubrics_app_task FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_task t WHERE (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')))
            BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_task_update BEFORE UPDATE ON rubrics_app_task FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted') WHERE ((NEW.id IS NOT OLD.id OR NEW.repository_id IS NOT OLD.repository_id OR NEW.task_id IS NOT OLD.task_id OR NEW.spec_prompt IS NOT OLD.spec_prompt OR NEW.issue_prompt IS NOT OLD.issue_prompt OR NEW.gate IS NOT OLD.gate OR NEW.base_commit IS NOT OLD.base_commit OR NEW.base_date IS NOT OLD.base_date) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))
                OR EXISTS (SELECT 1 FROM rubrics_app_task t WHERE t.id IS NOT OLD.id AND (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')));
            SELECT RAISE(ABORT, 'task holds an admitted rubric revision: its task files were calibrated with it and are frozen') WHERE (NEW.oracle_diff IS NOT OLD.oracle_diff OR NEW.oracle_grade IS NOT OLD.oracle_grade OR NEW.tests_base IS NOT OLD.tests_base)
                AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('admitted'));
            END""",
            """CREATE TRIGGER rubrics_freeze_task_delete BEFORE DELETE ON rubrics_app_task FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
            BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_insert BEFORE INSERT ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_update BEFORE UPDATE ON rubrics_app_repository FOR EACH ROW
            WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))
                OR EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE p.id IS NOT OLD.id AND (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_repository_delete BEFORE DELETE ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
            BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_calibration_insert BEFORE INSERT ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'a calibration run is created as queued') WHERE NEW.status IS NOT 'queued';
            SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows') WHERE EXISTS (
                SELECT 1 FROM rubrics_app_calibrationrun c WHERE c.id = NEW.id AND c.status IN ('passed', 'failed', 'error'));
            END""",
            """CREATE TRIGGER rubrics_freeze_calibration_update BEFORE UPDATE ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'a calibration run keeps its revision, content and judge') WHERE NEW.id IS NOT OLD.id OR (NEW.revision_id IS NOT OLD.revision_id OR NEW.rubric_sha256 IS NOT OLD.rubric_sha256 OR NEW.inputs_sha256 IS NOT OLD.inputs_sha256 OR NEW.judge IS NOT OLD.judge);
            SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows') WHERE OLD.status IN ('passed', 'failed', 'error') AND NEW.status IS NOT OLD.status;
            SELECT RAISE(ABORT, 'a calibration run passes only from running, with every row stored and holding') WHERE NEW.status = 'passed' AND OLD.status IS NOT 'passed'
                AND (OLD.status IS NOT 'running' OR NOT (NEW.total_rows > 0
    AND (SELECT COUNT(*) FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign')));
            END""",
            """CREATE TRIGGER rubrics_freeze_calibration_delete BEFORE DELETE ON rubrics_app_calibrationrun FOR EACH ROW
            WHEN OLD.status = 'passed' AND (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id)
                IN ('admitted', 'retired')
            BEGIN SELECT RAISE(ABORT, 'the passing calibration of an admitted or retired revision is never deleted'); END""",
            """CREATE TRIGGER rubrics_freeze_calibration_row_insert BEFORE INSERT ON rubrics_app_calibrationrow FOR EACH ROW WHEN (SELECT status FROM rubrics_app_calibrationrun WHERE id = NEW.run_id) IN ('passed', 'failed', 'error')
                BEGIN SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows'); END""",
            """CREATE TRIGGER rubrics_freeze_calibration_row_update BEFORE UPDATE ON rubrics_app_calibrationrow FOR EACH ROW WHEN (SELECT status FROM rubrics_app_calibrationrun WHERE id = NEW.run_id) IN ('passed', 'failed', 'error') OR (SELECT status FROM rubrics_app_calibrationrun WHERE id = OLD.run_id) IN ('passed', 'failed', 'error')
                BEGIN SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows'); END""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_admitted""",
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
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_update""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_delete""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_row_insert""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_row_update""",
        ],
    ),
    "postgresql": (
        [
            """CREATE OR REPLACE FUNCTION rubrics_freeze_revision() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'draft' THEN RAISE EXCEPTION 'a rubric revision is created as a draft' USING ERRCODE = 'restrict_violation'; END IF;
                RETURN NEW;
            END IF;
            IF OLD.status IN ('approved', 'admitted', 'retired') AND (TG_OP = 'DELETE' OR NEW.status NOT IN ('approved', 'admitted', 'retired')
                    OR NEW.id IS DISTINCT FROM OLD.id OR ROW(NEW.task_id, NEW.number, NEW.parent_id, NEW.origin, NEW.drafted_by_id, NEW.drafted_by_model, NEW.input_hash, NEW.created_at, NEW.intent, NEW.allowed_globs, NEW.denied_globs, NEW.max_changed_lines, NEW.max_files, NEW.lazy_solution, NEW.alt_valid_solution, NEW.omitted_keys, NEW.version, NEW.approved_at, NEW.content_sha256, NEW.approved_by_id) IS DISTINCT FROM ROW(OLD.task_id, OLD.number, OLD.parent_id, OLD.origin, OLD.drafted_by_id, OLD.drafted_by_model, OLD.input_hash, OLD.created_at, OLD.intent, OLD.allowed_globs, OLD.denied_globs, OLD.max_changed_lines, OLD.max_files, OLD.lazy_solution, OLD.alt_valid_solution, OLD.omitted_keys, OLD.version, OLD.approved_at, OLD.content_sha256, OLD.approved_by_id)) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status THEN
                IF OLD.status || '>' || NEW.status NOT IN ('draft>approved', 'approved>admitted', 'admitted>retired') THEN RAISE EXCEPTION 'rubric revision status moves only forward: draft -> approved -> admitted -> retired' USING ERRCODE = 'restrict_violation'; END IF;
                IF NEW.status = 'admitted' AND NOT EXISTS (
    SELECT 1 FROM rubrics_app_calibrationrun c
    JOIN rubrics_app_task t ON t.id = NEW.task_id
    JOIN rubrics_app_judgesetting j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
        AND NEW.content_sha256 <> '' AND c.rubric_sha256 = NEW.content_sha256
) THEN RAISE EXCEPTION 'a rubric revision is admitted only through a passing calibration run of its content with the primary judge of its repository' USING ERRCODE = 'restrict_violation'; END IF;
                IF NEW.status = 'retired' AND NOT EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.task_id AND r.number > OLD.number AND r.status = 'admitted') THEN RAISE EXCEPTION 'a rubric revision retires only when a newer revision of its task is admitted' USING ERRCODE = 'restrict_violation'; END IF;
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_revision BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricrevision FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_revision_admitted() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.status = 'admitted' AND OLD.status IS DISTINCT FROM 'admitted' THEN
                UPDATE rubrics_app_rubricrevision SET status = 'retired'
                    WHERE task_id = NEW.task_id AND status = 'admitted' AND id <> NEW.id;
            END IF;
            RETURN NULL;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_revision_admitted AFTER UPDATE OF status ON rubrics_app_rubricrevision FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_admitted()""",
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
            """CREATE TRIGGER rubrics_freeze_part BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_rubricitem FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_part()""",
            """CREATE TRIGGER rubrics_freeze_part BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_calibrationdiff FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_part()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_TABLE_NAME = 'rubrics_app_rubricrevision' AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricrevision WHERE status IN ('approved', 'admitted', 'retired')
            ) OR TG_TABLE_NAME IN ('rubrics_app_rubricitem', 'rubrics_app_calibrationdiff') AND EXISTS (
                SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE r.status IN ('approved', 'admitted', 'retired')
                UNION ALL
                SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE r.status IN ('approved', 'admitted', 'retired')
            ) OR TG_TABLE_NAME IN ('rubrics_app_calibrationrun', 'rubrics_app_calibrationrow') AND EXISTS (
                SELECT 1 FROM rubrics_app_calibrationrun WHERE status IN ('passed', 'failed', 'error')
            ) THEN
                RAISE EXCEPTION 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NULL;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_rubricrevision FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_rubricitem FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_calibrationdiff FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_calibrationrun FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON rubrics_app_calibrationrow FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_task() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF (TG_OP = 'DELETE' OR ROW(NEW.id, NEW.repository_id, NEW.task_id, NEW.spec_prompt, NEW.issue_prompt, NEW.gate, NEW.base_commit, NEW.base_date) IS DISTINCT FROM ROW(OLD.id, OLD.repository_id, OLD.task_id, OLD.spec_prompt, OLD.issue_prompt, OLD.gate, OLD.base_commit, OLD.base_date)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')) THEN
                RAISE EXCEPTION 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'UPDATE' AND ROW(NEW.oracle_diff, NEW.oracle_grade, NEW.tests_base) IS DISTINCT FROM ROW(OLD.oracle_diff, OLD.oracle_grade, OLD.tests_base)
                    AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('admitted')) THEN
                RAISE EXCEPTION 'task holds an admitted rubric revision: its task files were calibrated with it and are frozen' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_task BEFORE UPDATE OR DELETE ON rubrics_app_task FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_task()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_repository() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF (TG_OP = 'DELETE' OR NEW.id IS DISTINCT FROM OLD.id)
                AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')) THEN
                RAISE EXCEPTION 'repository holds an approved, admitted or retired rubric revision: it is never deleted' USING ERRCODE = 'restrict_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_repository BEFORE UPDATE OR DELETE ON rubrics_app_repository FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_repository()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_calibration() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'queued' THEN RAISE EXCEPTION 'a calibration run is created as queued' USING ERRCODE = 'restrict_violation'; END IF;
                RETURN NEW;
            END IF;
            IF TG_OP = 'DELETE' THEN
                IF OLD.status = 'passed' AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision
                        WHERE id = OLD.revision_id AND status IN ('admitted', 'retired')) THEN
                    RAISE EXCEPTION 'the passing calibration of an admitted or retired revision is never deleted' USING ERRCODE = 'restrict_violation';
                END IF;
                RETURN OLD;
            END IF;
            IF NEW.id IS DISTINCT FROM OLD.id OR ROW(NEW.revision_id, NEW.rubric_sha256, NEW.inputs_sha256, NEW.judge) IS DISTINCT FROM ROW(OLD.revision_id, OLD.rubric_sha256, OLD.inputs_sha256, OLD.judge) THEN
                RAISE EXCEPTION 'a calibration run keeps its revision, content and judge' USING ERRCODE = 'restrict_violation';
            END IF;
            IF OLD.status IN ('passed', 'failed', 'error') AND NEW.status IS DISTINCT FROM OLD.status THEN
                RAISE EXCEPTION 'a finished calibration run never changes status, nor its rows' USING ERRCODE = 'restrict_violation';
            END IF;
            IF NEW.status = 'passed' AND OLD.status IS DISTINCT FROM 'passed'
                    AND (OLD.status IS DISTINCT FROM 'running' OR NOT (NEW.total_rows > 0
    AND (SELECT COUNT(*) FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign'))) THEN
                RAISE EXCEPTION 'a calibration run passes only from running, with every row stored and holding' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NEW;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_calibration BEFORE INSERT OR UPDATE OR DELETE ON rubrics_app_calibrationrun FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_calibration()""",
            """CREATE OR REPLACE FUNCTION rubrics_freeze_calibration_row() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF EXISTS (SELECT 1 FROM rubrics_app_calibrationrun WHERE id = NEW.run_id AND status IN ('passed', 'failed', 'error'))
                OR TG_OP = 'UPDATE' AND EXISTS (
                    SELECT 1 FROM rubrics_app_calibrationrun WHERE id = OLD.run_id AND status IN ('passed', 'failed', 'error')) THEN
                RAISE EXCEPTION 'a finished calibration run never changes status, nor its rows' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NEW;
                END $$""",
            """CREATE TRIGGER rubrics_freeze_calibration_row BEFORE INSERT OR UPDATE ON rubrics_app_calibrationrow FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_calibration_row()""",
        ],
        [
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_revision_admitted ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_part ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_part ON rubrics_app_calibrationdiff""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_rubricrevision""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_rubricitem""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_calibrationdiff""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_calibrationrun""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON rubrics_app_calibrationrow""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_task ON rubrics_app_task""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_repository ON rubrics_app_repository""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration ON rubrics_app_calibrationrun""",
            """DROP TRIGGER IF EXISTS rubrics_freeze_calibration_row ON rubrics_app_calibrationrow""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_revision()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_revision_admitted()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_revision_part()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_truncate()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_task()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_repository()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_calibration()""",
            """DROP FUNCTION IF EXISTS rubrics_freeze_calibration_row()""",
        ],
    ),
}


def _run(schema_editor: Any, index: int) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in FREEZE_SQL:
        raise RuntimeError(f"no freeze triggers for database {vendor!r}: use SQLite or PostgreSQL")
    for statement in FREEZE_SQL[vendor][index]:
        schema_editor.execute(statement)


def install(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, 0)


def uninstall(apps: Any, schema_editor: Any) -> None:
    _run(schema_editor, 1)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0130_freeze_in_one_module"),
    ]

    operations = [
        migrations.RunPython(uninstall, install),
        migrations.AddField(
            model_name="judgesetting",
            name="sweep_batch",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="sweep",
            name="batch",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(install, uninstall),
    ]
