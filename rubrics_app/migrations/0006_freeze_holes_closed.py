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

# vendor -> (0005's install statements, its drop statements), as 0005 wrote them: this migration drops them
# and puts them back on reversal.
_0005_SQL = {
    "sqlite": (
        [
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
        ],
    ),
    "postgresql": (
        [
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
        ],
    ),
}

REVISION = "rubrics_app_rubricrevision"
ITEM = "rubrics_app_rubricitem"
DIFF = "rubrics_app_calibrationdiff"
TASK = "rubrics_app_task"
REPOSITORY = "rubrics_app_repository"
CHILDREN = (ITEM, DIFF)
FROZEN = "('approved', 'admitted', 'retired')"
# old status || '>' || new status, for the only moves a status may make.
FORWARD = "('draft>approved', 'approved>admitted', 'admitted>retired')"

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
# The columns of a task that say what its rubrics mean.
TASK_COLUMNS = [
    "id",
    "repository_id",
    "task_id",
    "spec_prompt",
    "issue_prompt",
    "gate",
    "base_commit",
    "base_date",
]

MESSAGE = "rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)"
STATUS_MESSAGE = "rubric revision status moves only forward: draft -> approved -> admitted -> retired"
NEW_MESSAGE = "a rubric revision is created as a draft"
TASK_MESSAGE = (
    "task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and "
    "base commit are frozen, and it is never deleted"
)
REPOSITORY_MESSAGE = "repository holds an approved, admitted or retired rubric revision: it is never deleted"

SQLITE_TRIGGERS = [
    "rubrics_freeze_revision_insert",
    "rubrics_freeze_revision_update",
    "rubrics_freeze_revision_delete",
    *(f"rubrics_freeze_{table}_{event}" for table in CHILDREN for event in ("insert", "update", "delete")),
    "rubrics_freeze_task_insert",
    "rubrics_freeze_task_update",
    "rubrics_freeze_task_delete",
    "rubrics_freeze_repository_insert",
    "rubrics_freeze_repository_update",
    "rubrics_freeze_repository_delete",
]


def _raise(message: str) -> str:
    return f"SELECT RAISE(ABORT, '{message}')"


def _task_holds_frozen(task_id: str) -> str:
    return f"EXISTS (SELECT 1 FROM {REVISION} r WHERE r.task_id = {task_id} AND r.status IN {FROZEN})"


def _repository_holds_frozen(repository_id: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {REVISION} r JOIN {TASK} t ON t.id = r.task_id "
        f"WHERE t.repository_id = {repository_id} AND r.status IN {FROZEN})"
    )


def _replaces_frozen_revision(old: bool) -> str:
    """A REPLACE (INSERT OR REPLACE, UPDATE OR REPLACE) that would delete a frozen revision: NEW collides
    with it on one of the table's unique keys."""
    other = "r.id IS NOT OLD.id AND " if old else ""
    return (
        f"EXISTS (SELECT 1 FROM {REVISION} r WHERE {other}r.status IN {FROZEN} AND (r.id = NEW.id "
        "OR (r.task_id = NEW.task_id AND r.number = NEW.number) "
        "OR (r.task_id = NEW.task_id AND r.status = 'admitted' AND NEW.status = 'admitted')))"
    )


def _sqlite() -> list[str]:
    changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in CONTENT_COLUMNS)
    sql = [
        # A new revision is a draft; and no REPLACE may take the place of a frozen one.
        f"""CREATE TRIGGER rubrics_freeze_revision_insert BEFORE INSERT ON {REVISION} FOR EACH ROW
        BEGIN
            {_raise(MESSAGE)} WHERE {_replaces_frozen_revision(old=False)};
            {_raise(NEW_MESSAGE)} WHERE NEW.status IS NOT 'draft';
        END""",
        f"""CREATE TRIGGER rubrics_freeze_revision_update BEFORE UPDATE ON {REVISION} FOR EACH ROW
        BEGIN
            {_raise(MESSAGE)} WHERE OLD.status IN {FROZEN}
                AND (NEW.status NOT IN {FROZEN} OR NEW.id IS NOT OLD.id OR {changed});
            {_raise(MESSAGE)} WHERE {_replaces_frozen_revision(old=True)};
            {_raise(STATUS_MESSAGE)} WHERE NEW.status IS NOT OLD.status
                AND OLD.status || '>' || NEW.status NOT IN {FORWARD};
        END""",
        f"""CREATE TRIGGER rubrics_freeze_revision_delete BEFORE DELETE ON {REVISION} FOR EACH ROW
        WHEN OLD.status IN {FROZEN}
        BEGIN {_raise(MESSAGE)}; END""",
    ]
    for table in CHILDREN:
        frozen_old = f"(SELECT status FROM {REVISION} WHERE id = OLD.revision_id) IN {FROZEN}"
        frozen_new = f"(SELECT status FROM {REVISION} WHERE id = NEW.revision_id) IN {FROZEN}"
        # A REPLACE by id of a row of a frozen revision (the other unique keys include revision_id, so a
        # collision on them is frozen_new).
        replaces_frozen = (
            f"EXISTS (SELECT 1 FROM {table} c JOIN {REVISION} r ON r.id = c.revision_id "
            f"WHERE c.id = NEW.id AND r.status IN {FROZEN})"
        )
        for event, condition in (
            ("insert", f"{frozen_new} OR {replaces_frozen}"),
            ("update", f"{frozen_old} OR {frozen_new} OR {replaces_frozen}"),
            ("delete", frozen_old),
        ):
            sql.append(
                f"""CREATE TRIGGER rubrics_freeze_{table}_{event} BEFORE {event.upper()} ON {table}
                FOR EACH ROW WHEN {condition}
                BEGIN {_raise(MESSAGE)}; END"""
            )
    task_changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in TASK_COLUMNS)

    def replaces_frozen_task(old: bool) -> str:
        other = "t.id IS NOT OLD.id AND " if old else ""
        return (
            f"EXISTS (SELECT 1 FROM {TASK} t WHERE {other}(t.id = NEW.id "
            f"OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) "
            f"AND {_task_holds_frozen('t.id')})"
        )

    def replaces_frozen_repository(old: bool) -> str:
        other = "p.id IS NOT OLD.id AND " if old else ""
        return (
            f"EXISTS (SELECT 1 FROM {REPOSITORY} p WHERE {other}(p.id = NEW.id OR p.name = NEW.name) "
            f"AND {_repository_holds_frozen('p.id')})"
        )

    sql += [
        f"""CREATE TRIGGER rubrics_freeze_task_insert BEFORE INSERT ON {TASK} FOR EACH ROW
        WHEN {replaces_frozen_task(old=False)}
        BEGIN {_raise(TASK_MESSAGE)}; END""",
        f"""CREATE TRIGGER rubrics_freeze_task_update BEFORE UPDATE ON {TASK} FOR EACH ROW
        WHEN (({task_changed}) AND {_task_holds_frozen("OLD.id")}) OR {replaces_frozen_task(old=True)}
        BEGIN {_raise(TASK_MESSAGE)}; END""",
        f"""CREATE TRIGGER rubrics_freeze_task_delete BEFORE DELETE ON {TASK} FOR EACH ROW
        WHEN {_task_holds_frozen("OLD.id")}
        BEGIN {_raise(TASK_MESSAGE)}; END""",
        f"""CREATE TRIGGER rubrics_freeze_repository_insert BEFORE INSERT ON {REPOSITORY} FOR EACH ROW
        WHEN {replaces_frozen_repository(old=False)}
        BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
        f"""CREATE TRIGGER rubrics_freeze_repository_update BEFORE UPDATE ON {REPOSITORY} FOR EACH ROW
        WHEN (NEW.id IS NOT OLD.id AND {_repository_holds_frozen("OLD.id")})
            OR {replaces_frozen_repository(old=True)}
        BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
        f"""CREATE TRIGGER rubrics_freeze_repository_delete BEFORE DELETE ON {REPOSITORY} FOR EACH ROW
        WHEN {_repository_holds_frozen("OLD.id")}
        BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
    ]
    return sql


def _plpgsql(name: str, body: str) -> str:
    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {body}
        END $$"""


def _pg_raise(message: str) -> str:
    # SQLSTATE 23001 (restrict_violation) reaches Django as IntegrityError, as SQLite's RAISE(ABORT) does.
    return f"RAISE EXCEPTION '{message}' USING ERRCODE = 'restrict_violation';"


_RETURN_ROW = "IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;"


def _postgresql() -> list[str]:
    new_row = ", ".join(f"NEW.{c}" for c in CONTENT_COLUMNS)
    old_row = ", ".join(f"OLD.{c}" for c in CONTENT_COLUMNS)
    new_task = ", ".join(f"NEW.{c}" for c in TASK_COLUMNS)
    old_task = ", ".join(f"OLD.{c}" for c in TASK_COLUMNS)
    return [
        _plpgsql(
            "rubrics_freeze_revision",
            f"""IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'draft' THEN {_pg_raise(NEW_MESSAGE)} END IF;
                RETURN NEW;
            END IF;
            IF OLD.status IN {FROZEN} AND (TG_OP = 'DELETE' OR NEW.status NOT IN {FROZEN}
                    OR NEW.id IS DISTINCT FROM OLD.id OR ROW({new_row}) IS DISTINCT FROM ROW({old_row})) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            IF TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status
                    AND OLD.status || '>' || NEW.status NOT IN {FORWARD} THEN
                {_pg_raise(STATUS_MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
        ),
        f"""CREATE TRIGGER rubrics_freeze_revision BEFORE INSERT OR UPDATE OR DELETE ON {REVISION}
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision()""",
        _plpgsql(
            "rubrics_freeze_revision_part",
            f"""IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE id = OLD.revision_id AND status IN {FROZEN}
            ) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE id = NEW.revision_id AND status IN {FROZEN}
            ) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
        ),
        *(
            f"""CREATE TRIGGER rubrics_freeze_part BEFORE INSERT OR UPDATE OR DELETE ON {table}
            FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_revision_part()"""
            for table in CHILDREN
        ),
        # TRUNCATE fires statement triggers only: refuse it while the table holds anything frozen.
        _plpgsql(
            "rubrics_freeze_truncate",
            f"""IF TG_TABLE_NAME = '{REVISION}' AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE status IN {FROZEN}
            ) OR TG_TABLE_NAME IN ('{ITEM}', '{DIFF}') AND EXISTS (
                SELECT 1 FROM {ITEM} c JOIN {REVISION} r ON r.id = c.revision_id WHERE r.status IN {FROZEN}
                UNION ALL
                SELECT 1 FROM {DIFF} c JOIN {REVISION} r ON r.id = c.revision_id WHERE r.status IN {FROZEN}
            ) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            RETURN NULL;""",
        ),
        *(
            f"""CREATE TRIGGER rubrics_freeze_truncate BEFORE TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION rubrics_freeze_truncate()"""
            for table in (REVISION, *CHILDREN)
        ),
        _plpgsql(
            "rubrics_freeze_task",
            f"""IF (TG_OP = 'DELETE' OR ROW({new_task}) IS DISTINCT FROM ROW({old_task}))
                AND {_task_holds_frozen("OLD.id")} THEN
                {_pg_raise(TASK_MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
        ),
        f"""CREATE TRIGGER rubrics_freeze_task BEFORE UPDATE OR DELETE ON {TASK}
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_task()""",
        _plpgsql(
            "rubrics_freeze_repository",
            f"""IF (TG_OP = 'DELETE' OR NEW.id IS DISTINCT FROM OLD.id)
                AND {_repository_holds_frozen("OLD.id")} THEN
                {_pg_raise(REPOSITORY_MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
        ),
        f"""CREATE TRIGGER rubrics_freeze_repository BEFORE UPDATE OR DELETE ON {REPOSITORY}
        FOR EACH ROW EXECUTE FUNCTION rubrics_freeze_repository()""",
    ]


def _postgresql_drop() -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS rubrics_freeze_revision ON {REVISION}",
        *(f"DROP TRIGGER IF EXISTS rubrics_freeze_part ON {table}" for table in CHILDREN),
        *(f"DROP TRIGGER IF EXISTS rubrics_freeze_truncate ON {t}" for t in (REVISION, *CHILDREN)),
        f"DROP TRIGGER IF EXISTS rubrics_freeze_task ON {TASK}",
        f"DROP TRIGGER IF EXISTS rubrics_freeze_repository ON {REPOSITORY}",
        "DROP FUNCTION IF EXISTS rubrics_freeze_revision()",
        "DROP FUNCTION IF EXISTS rubrics_freeze_revision_part()",
        "DROP FUNCTION IF EXISTS rubrics_freeze_truncate()",
        "DROP FUNCTION IF EXISTS rubrics_freeze_task()",
        "DROP FUNCTION IF EXISTS rubrics_freeze_repository()",
    ]


def trigger_sql(vendor: str) -> tuple[list[str], list[str]]:
    """(statements that install the triggers, statements that remove them) for a database vendor."""
    if vendor == "sqlite":
        return _sqlite(), [f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_TRIGGERS]
    if vendor == "postgresql":
        return _postgresql(), _postgresql_drop()
    raise RuntimeError(f"no frozen-revision triggers for database {vendor!r}: use SQLite or PostgreSQL")


def install(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in _0005_SQL[vendor][1] + trigger_sql(vendor)[0]:
        schema_editor.execute(sql)


def uninstall(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    for sql in trigger_sql(vendor)[1] + _0005_SQL[vendor][0]:
        schema_editor.execute(sql)


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
