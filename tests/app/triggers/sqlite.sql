-- trigger rubrics_freeze_calibration_delete ON rubrics_app_calibrationrun
CREATE TRIGGER rubrics_freeze_calibration_delete BEFORE DELETE ON rubrics_app_calibrationrun FOR EACH ROW
WHEN OLD.status = 'passed' AND (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id)
IN ('admitted', 'retired')
BEGIN SELECT RAISE(ABORT, 'the passing calibration of an admitted or retired revision is never deleted'); END

-- trigger rubrics_freeze_calibration_insert ON rubrics_app_calibrationrun
CREATE TRIGGER rubrics_freeze_calibration_insert BEFORE INSERT ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
SELECT RAISE(ABORT, 'a calibration run is created as queued') WHERE NEW.status IS NOT 'queued';
SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows') WHERE EXISTS (
SELECT 1 FROM rubrics_app_calibrationrun c WHERE c.id = NEW.id AND c.status IN ('passed', 'failed', 'error'));
END

-- trigger rubrics_freeze_calibration_row_insert ON rubrics_app_calibrationrow
CREATE TRIGGER rubrics_freeze_calibration_row_insert BEFORE INSERT ON rubrics_app_calibrationrow FOR EACH ROW WHEN (SELECT status FROM rubrics_app_calibrationrun WHERE id = NEW.run_id) IN ('passed', 'failed', 'error')
BEGIN SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows'); END

-- trigger rubrics_freeze_calibration_row_update ON rubrics_app_calibrationrow
CREATE TRIGGER rubrics_freeze_calibration_row_update BEFORE UPDATE ON rubrics_app_calibrationrow FOR EACH ROW WHEN (SELECT status FROM rubrics_app_calibrationrun WHERE id = NEW.run_id) IN ('passed', 'failed', 'error') OR (SELECT status FROM rubrics_app_calibrationrun WHERE id = OLD.run_id) IN ('passed', 'failed', 'error')
BEGIN SELECT RAISE(ABORT, 'a finished calibration run never changes status, nor its rows'); END

-- trigger rubrics_freeze_calibration_update ON rubrics_app_calibrationrun
CREATE TRIGGER rubrics_freeze_calibration_update BEFORE UPDATE ON rubrics_app_calibrationrun FOR EACH ROW BEGIN
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
END

-- trigger rubrics_freeze_repository_delete ON rubrics_app_repository
CREATE TRIGGER rubrics_freeze_repository_delete BEFORE DELETE ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END

-- trigger rubrics_freeze_repository_insert ON rubrics_app_repository
CREATE TRIGGER rubrics_freeze_repository_insert BEFORE INSERT ON rubrics_app_repository FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END

-- trigger rubrics_freeze_repository_update ON rubrics_app_repository
CREATE TRIGGER rubrics_freeze_repository_update BEFORE UPDATE ON rubrics_app_repository FOR EACH ROW
WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))
OR EXISTS (SELECT 1 FROM rubrics_app_repository p WHERE p.id IS NOT OLD.id AND (p.id = NEW.id OR p.name = NEW.name) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r JOIN rubrics_app_task t ON t.id = r.task_id WHERE t.repository_id = p.id AND r.status IN ('approved', 'admitted', 'retired')))
BEGIN SELECT RAISE(ABORT, 'repository holds an approved, admitted or retired rubric revision: it is never deleted'); END

-- trigger rubrics_freeze_revision_admitted ON rubrics_app_rubricrevision
CREATE TRIGGER rubrics_freeze_revision_admitted AFTER UPDATE OF status ON rubrics_app_rubricrevision FOR EACH ROW
WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' BEGIN
UPDATE rubrics_app_rubricrevision SET status = 'retired'
WHERE task_id = NEW.task_id AND status = 'admitted' AND id <> NEW.id;
END

-- trigger rubrics_freeze_revision_delete ON rubrics_app_rubricrevision
CREATE TRIGGER rubrics_freeze_revision_delete BEFORE DELETE ON rubrics_app_rubricrevision FOR EACH ROW WHEN OLD.status IN ('approved', 'admitted', 'retired')
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_revision_insert ON rubrics_app_rubricrevision
CREATE TRIGGER rubrics_freeze_revision_insert BEFORE INSERT ON rubrics_app_rubricrevision FOR EACH ROW BEGIN
SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)') WHERE EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.status IN ('approved', 'admitted', 'retired') AND (r.id = NEW.id OR (r.task_id = NEW.task_id AND r.number = NEW.number)));
SELECT RAISE(ABORT, 'a rubric revision is created as a draft') WHERE NEW.status IS NOT 'draft';
END

-- trigger rubrics_freeze_revision_update ON rubrics_app_rubricrevision
CREATE TRIGGER rubrics_freeze_revision_update BEFORE UPDATE ON rubrics_app_rubricrevision FOR EACH ROW BEGIN
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
END

-- trigger rubrics_freeze_rubrics_app_calibrationdiff_delete ON rubrics_app_calibrationdiff
CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_delete BEFORE DELETE ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_rubrics_app_calibrationdiff_insert ON rubrics_app_calibrationdiff
CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_insert BEFORE INSERT ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_rubrics_app_calibrationdiff_update ON rubrics_app_calibrationdiff
CREATE TRIGGER rubrics_freeze_rubrics_app_calibrationdiff_update BEFORE UPDATE ON rubrics_app_calibrationdiff FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_calibrationdiff c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_rubrics_app_rubricitem_delete ON rubrics_app_rubricitem
CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_delete BEFORE DELETE ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired')
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_rubrics_app_rubricitem_insert ON rubrics_app_rubricitem
CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_insert BEFORE INSERT ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_rubrics_app_rubricitem_update ON rubrics_app_rubricitem
CREATE TRIGGER rubrics_freeze_rubrics_app_rubricitem_update BEFORE UPDATE ON rubrics_app_rubricitem FOR EACH ROW WHEN (SELECT status FROM rubrics_app_rubricrevision WHERE id = OLD.revision_id) IN ('approved', 'admitted', 'retired') OR (SELECT status FROM rubrics_app_rubricrevision WHERE id = NEW.revision_id) IN ('approved', 'admitted', 'retired') OR EXISTS (SELECT 1 FROM rubrics_app_rubricitem c JOIN rubrics_app_rubricrevision r ON r.id = c.revision_id WHERE c.id = NEW.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)'); END

-- trigger rubrics_freeze_task_delete ON rubrics_app_task
CREATE TRIGGER rubrics_freeze_task_delete BEFORE DELETE ON rubrics_app_task FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired'))
BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END

-- trigger rubrics_freeze_task_insert ON rubrics_app_task
CREATE TRIGGER rubrics_freeze_task_insert BEFORE INSERT ON rubrics_app_task FOR EACH ROW WHEN EXISTS (SELECT 1 FROM rubrics_app_task t WHERE (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')))
BEGIN SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted'); END

-- trigger rubrics_freeze_task_update ON rubrics_app_task
CREATE TRIGGER rubrics_freeze_task_update BEFORE UPDATE ON rubrics_app_task FOR EACH ROW BEGIN
SELECT RAISE(ABORT, 'task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and base commit are frozen, and it is never deleted') WHERE ((NEW.id IS NOT OLD.id OR NEW.repository_id IS NOT OLD.repository_id OR NEW.task_id IS NOT OLD.task_id OR NEW.spec_prompt IS NOT OLD.spec_prompt OR NEW.issue_prompt IS NOT OLD.issue_prompt OR NEW.gate IS NOT OLD.gate OR NEW.base_commit IS NOT OLD.base_commit OR NEW.base_date IS NOT OLD.base_date) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('approved', 'admitted', 'retired')))
OR EXISTS (SELECT 1 FROM rubrics_app_task t WHERE t.id IS NOT OLD.id AND (t.id = NEW.id OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = t.id AND r.status IN ('approved', 'admitted', 'retired')));
SELECT RAISE(ABORT, 'task holds an admitted rubric revision: its task files were calibrated with it and are frozen') WHERE (NEW.oracle_diff IS NOT OLD.oracle_diff OR NEW.oracle_grade IS NOT OLD.oracle_grade OR NEW.tests_base IS NOT OLD.tests_base)
AND EXISTS (SELECT 1 FROM rubrics_app_rubricrevision r WHERE r.task_id = OLD.id AND r.status IN ('admitted'));
END
