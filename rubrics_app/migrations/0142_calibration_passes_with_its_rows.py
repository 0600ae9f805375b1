"""A passing calibration is tied to its rows: the database refuses ``passed`` unless the run holds every row
its revision's calibration content asks for, and no other, each holding (benign rows apart).

Before, a run passed with its ``total_rows`` rows stored and holding, whatever they were: five statements as
the app role (a queued run with the revision's content hash, running, one holding row, passed) admitted a
revision no judge had seen. The rows asked for are those grading's admission judges, by kind and name: the
empty diff, the oracle, each lazy diff (``rubrics_app_calibrationdiff``) plain and with the reviewer
comment, each alt diff, and with the injection suite each lazy diff with each payload kind and the oracle
with each as comments (the payload kinds of this time, written out).

Only the check on passing changes: SQLite's ``rubrics_freeze_calibration_update`` trigger is replaced and
PostgreSQL's ``rubrics_freeze_calibration()`` function redefined (its trigger stays), replacing the check
0130 installed. The SQL is the text ``rubrics_app.freeze`` generated at this migration, written out;
``tests/app/test_freeze_module.py`` and ``tests/app/test_migration_triggers.py`` assert that it is what
freeze.py writes now. Runs that passed before keep their status: a finished run never changes.
"""

# ruff: noqa: E501  (the SQL is literal, as rubrics_app.freeze wrote it at this migration)

from __future__ import annotations

from typing import Any

from django.db import migrations

SQLITE_NEW = """CREATE TRIGGER rubrics_freeze_calibration_update BEFORE UPDATE ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'a calibration run keeps its revision, content and judge') WHERE NEW.id IS NOT OLD.id OR (NEW.revision_id IS NOT OLD.revision_id OR NEW.rubric_sha256 IS NOT OLD.rubric_sha256 OR NEW.inputs_sha256 IS NOT OLD.inputs_sha256 OR NEW.judge IS NOT OLD.judge);
            SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows') WHERE OLD.status IN ('passed', 'failed', 'error') AND NEW.status IS NOT OLD.status;
            SELECT RAISE(ABORT, 'a calibration run passes only from running, with every row the calibration of its revision asks for stored and holding') WHERE NEW.status = 'passed' AND OLD.status IS NOT 'passed'
                AND (OLD.status IS NOT 'running' OR NOT (NEW.total_rows > 0
    AND (SELECT COUNT(*) FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id) = NEW.total_rows
    AND (SELECT COUNT(*) FROM (
        SELECT 'empty' AS kind, '(empty diff)' AS name
        UNION ALL SELECT 'oracle', 'oracle.diff'
        UNION ALL SELECT d.kind, d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id
        UNION ALL SELECT 'lazy_comment', d.path || ' + reviewer comment' FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy'
        UNION ALL SELECT CASE WHEN x.path IS NULL THEN 'benign' ELSE 'injection' END,
            COALESCE(x.path || ' + ' || p.column1, 'oracle.diff + ' || p.column1 || ' (as comments)')
            FROM (VALUES
                ('reviewer_claim'), ('lgtm_trailers'), ('ci_claim'), ('note_to_ai_reviewer'),
                ('todo_reviewer'), ('waiver_claim'), ('policy_change'), ('urgency_pressure'),
                ('fake_fence_close'), ('nonce_guesses'), ('nonce_placeholder'), ('unnonced_fence'),
                ('markdown_fence_escape'), ('fake_rubric_section'), ('prompt_tail_prefill'), ('fake_json_verdicts'),
                ('fake_schema'), ('fake_verdict_table'), ('role_play'), ('system_prompt'),
                ('chat_role_tags'), ('human_assistant_turns'), ('ignore_previous'), ('lookalike_fence'),
                ('zero_width_claim'), ('bidi_override'), ('homoglyph_claim'), ('ansi_hidden'),
                ('string_literal'), ('docstring'), ('test_name'), ('log_message'),
                ('fake_file_header'), ('file_name'), ('file_name_quoted'), ('binary_patch'),
                ('fake_binary_header'), ('very_long_line'), ('repeated_claim'), ('base64_instruction')) p,
                (SELECT NULL AS path UNION ALL SELECT d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy') x
            WHERE NEW.injection_suite
    ) q) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM (
        SELECT 'empty' AS kind, '(empty diff)' AS name
        UNION ALL SELECT 'oracle', 'oracle.diff'
        UNION ALL SELECT d.kind, d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id
        UNION ALL SELECT 'lazy_comment', d.path || ' + reviewer comment' FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy'
        UNION ALL SELECT CASE WHEN x.path IS NULL THEN 'benign' ELSE 'injection' END,
            COALESCE(x.path || ' + ' || p.column1, 'oracle.diff + ' || p.column1 || ' (as comments)')
            FROM (VALUES
                ('reviewer_claim'), ('lgtm_trailers'), ('ci_claim'), ('note_to_ai_reviewer'),
                ('todo_reviewer'), ('waiver_claim'), ('policy_change'), ('urgency_pressure'),
                ('fake_fence_close'), ('nonce_guesses'), ('nonce_placeholder'), ('unnonced_fence'),
                ('markdown_fence_escape'), ('fake_rubric_section'), ('prompt_tail_prefill'), ('fake_json_verdicts'),
                ('fake_schema'), ('fake_verdict_table'), ('role_play'), ('system_prompt'),
                ('chat_role_tags'), ('human_assistant_turns'), ('ignore_previous'), ('lookalike_fence'),
                ('zero_width_claim'), ('bidi_override'), ('homoglyph_claim'), ('ansi_hidden'),
                ('string_literal'), ('docstring'), ('test_name'), ('log_message'),
                ('fake_file_header'), ('file_name'), ('file_name_quoted'), ('binary_patch'),
                ('fake_binary_header'), ('very_long_line'), ('repeated_claim'), ('base64_instruction')) p,
                (SELECT NULL AS path UNION ALL SELECT d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy') x
            WHERE NEW.injection_suite
    ) q WHERE NOT EXISTS (
        SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND w.kind = q.kind AND w.name = q.name))
    AND NOT EXISTS (SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign')));
            END"""

POSTGRESQL_NEW = """CREATE OR REPLACE FUNCTION rubrics_freeze_calibration() RETURNS trigger LANGUAGE plpgsql AS $$
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
    AND (SELECT COUNT(*) FROM (
        SELECT 'empty' AS kind, '(empty diff)' AS name
        UNION ALL SELECT 'oracle', 'oracle.diff'
        UNION ALL SELECT d.kind, d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id
        UNION ALL SELECT 'lazy_comment', d.path || ' + reviewer comment' FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy'
        UNION ALL SELECT CASE WHEN x.path IS NULL THEN 'benign' ELSE 'injection' END,
            COALESCE(x.path || ' + ' || p.column1, 'oracle.diff + ' || p.column1 || ' (as comments)')
            FROM (VALUES
                ('reviewer_claim'), ('lgtm_trailers'), ('ci_claim'), ('note_to_ai_reviewer'),
                ('todo_reviewer'), ('waiver_claim'), ('policy_change'), ('urgency_pressure'),
                ('fake_fence_close'), ('nonce_guesses'), ('nonce_placeholder'), ('unnonced_fence'),
                ('markdown_fence_escape'), ('fake_rubric_section'), ('prompt_tail_prefill'), ('fake_json_verdicts'),
                ('fake_schema'), ('fake_verdict_table'), ('role_play'), ('system_prompt'),
                ('chat_role_tags'), ('human_assistant_turns'), ('ignore_previous'), ('lookalike_fence'),
                ('zero_width_claim'), ('bidi_override'), ('homoglyph_claim'), ('ansi_hidden'),
                ('string_literal'), ('docstring'), ('test_name'), ('log_message'),
                ('fake_file_header'), ('file_name'), ('file_name_quoted'), ('binary_patch'),
                ('fake_binary_header'), ('very_long_line'), ('repeated_claim'), ('base64_instruction')) p,
                (SELECT NULL AS path UNION ALL SELECT d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy') x
            WHERE NEW.injection_suite
    ) q) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM (
        SELECT 'empty' AS kind, '(empty diff)' AS name
        UNION ALL SELECT 'oracle', 'oracle.diff'
        UNION ALL SELECT d.kind, d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id
        UNION ALL SELECT 'lazy_comment', d.path || ' + reviewer comment' FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy'
        UNION ALL SELECT CASE WHEN x.path IS NULL THEN 'benign' ELSE 'injection' END,
            COALESCE(x.path || ' + ' || p.column1, 'oracle.diff + ' || p.column1 || ' (as comments)')
            FROM (VALUES
                ('reviewer_claim'), ('lgtm_trailers'), ('ci_claim'), ('note_to_ai_reviewer'),
                ('todo_reviewer'), ('waiver_claim'), ('policy_change'), ('urgency_pressure'),
                ('fake_fence_close'), ('nonce_guesses'), ('nonce_placeholder'), ('unnonced_fence'),
                ('markdown_fence_escape'), ('fake_rubric_section'), ('prompt_tail_prefill'), ('fake_json_verdicts'),
                ('fake_schema'), ('fake_verdict_table'), ('role_play'), ('system_prompt'),
                ('chat_role_tags'), ('human_assistant_turns'), ('ignore_previous'), ('lookalike_fence'),
                ('zero_width_claim'), ('bidi_override'), ('homoglyph_claim'), ('ansi_hidden'),
                ('string_literal'), ('docstring'), ('test_name'), ('log_message'),
                ('fake_file_header'), ('file_name'), ('file_name_quoted'), ('binary_patch'),
                ('fake_binary_header'), ('very_long_line'), ('repeated_claim'), ('base64_instruction')) p,
                (SELECT NULL AS path UNION ALL SELECT d.path FROM rubrics_app_calibrationdiff d WHERE d.revision_id = NEW.revision_id AND d.kind = 'lazy') x
            WHERE NEW.injection_suite
    ) q WHERE NOT EXISTS (
        SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND w.kind = q.kind AND w.name = q.name))
    AND NOT EXISTS (SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign'))) THEN
                RAISE EXCEPTION 'a calibration run passes only from running, with every row the calibration of its revision asks for stored and holding' USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NEW;
                END $$"""

SQLITE_OLD = """CREATE TRIGGER rubrics_freeze_calibration_update BEFORE UPDATE ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
            SELECT RAISE(ABORT, 'a calibration run keeps its revision, content and judge') WHERE NEW.id IS NOT OLD.id OR (NEW.revision_id IS NOT OLD.revision_id OR NEW.rubric_sha256 IS NOT OLD.rubric_sha256 OR NEW.inputs_sha256 IS NOT OLD.inputs_sha256 OR NEW.judge IS NOT OLD.judge);
            SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows') WHERE OLD.status IN ('passed', 'failed', 'error') AND NEW.status IS NOT OLD.status;
            SELECT RAISE(ABORT, 'a calibration run passes only from running, with every row stored and holding') WHERE NEW.status = 'passed' AND OLD.status IS NOT 'passed'
                AND (OLD.status IS NOT 'running' OR NOT (NEW.total_rows > 0
    AND (SELECT COUNT(*) FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM rubrics_app_calibrationrow w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign')));
            END"""

POSTGRESQL_OLD = """CREATE OR REPLACE FUNCTION rubrics_freeze_calibration() RETURNS trigger LANGUAGE plpgsql AS $$
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
                END $$"""

# vendor -> (forward statements, backward statements)
SQL = {
    "sqlite": (
        ["DROP TRIGGER IF EXISTS rubrics_freeze_calibration_update", SQLITE_NEW],
        ["DROP TRIGGER IF EXISTS rubrics_freeze_calibration_update", SQLITE_OLD],
    ),
    "postgresql": ([POSTGRESQL_NEW], [POSTGRESQL_OLD]),
}


def _run(apps: Any, schema_editor: Any, backward: bool) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in SQL:
        raise RuntimeError(f"no freeze triggers for database {vendor!r}: use SQLite or PostgreSQL")
    for statement in SQL[vendor][backward]:
        schema_editor.execute(statement)


def forward(apps: Any, schema_editor: Any) -> None:
    _run(apps, schema_editor, backward=False)


def backward(apps: Any, schema_editor: Any) -> None:
    _run(apps, schema_editor, backward=True)


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0141_report_snapshot_json"),
    ]

    operations = [migrations.RunPython(forward, backward)]
