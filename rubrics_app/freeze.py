"""The freeze: what an approved, admitted or retired rubric revision is, and the triggers that keep it.

One module owns the rule, for the code and for SQLite and PostgreSQL alike:

- A revision is created as a draft; its status moves only forward, one step at a time: draft -> approved ->
  admitted -> retired. Approved, admitted and retired revisions are frozen: every content column (all of
  them but status and the admission's when/who), their items and calibration diffs are never written again,
  nor deleted (SQLite's REPLACE and PostgreSQL's TRUNCATE included).
- The task of a frozen revision keeps the columns that say what its rubrics mean (``Task.FROZEN_FIELDS``),
  and it and its repository are never deleted. Its task files (oracle.diff, oracle_grade.json,
  tests_base.txt) freeze with the task's *admitted* revision: calibration reads them, and an approved
  revision whose calibration failed on a wrong oracle needs them fixed; once a revision was admitted on
  them, they stay.
- Admitted means calibrated: approved -> admitted only with a passing calibration run of that revision
  whose ``rubric_sha256`` is the revision's ``content_sha256`` (the rubric.json it was approved with) and
  whose judge is the repository's primary judge. Becoming admitted retires the task's previously admitted
  revision, and a revision retires only when a newer one of its task is admitted.
- A calibration run is inserted as queued; a finished one (passed, failed, error) never changes status;
  it reaches passed only from running with every row its revision's calibration asks for stored (no other)
  and every row but the benign ones holding; its revision, content and judge never change, and a passed run
  of an admitted or retired revision is never deleted. A finished run's rows are never added to or
  rewritten.

The column lists the triggers compare are given to :func:`install_sql` by the caller. No migration calls this
module: each holds the SQL it installs as literal text, as this module wrote it at the migration's time, and
``tests/app/test_migration_triggers.py`` asserts that a database built by the migrations has exactly the
triggers this module writes now with :func:`model_columns`, so a new content column or an edit here fails a
test until a new migration installs it. Every refusal is an integrity error (SQLite ``RAISE(ABORT)``,
PostgreSQL SQLSTATE 23001 restrict_violation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.apps import apps

FROZEN_STATUSES = ("approved", "admitted", "retired")
# old status || '>' || new status, for the only moves a status may make.
FORWARD_MOVES = ("draft>approved", "approved>admitted", "admitted>retired")
FINISHED_CALIBRATION = ("passed", "failed", "error")

# Columns of a revision that a frozen revision may still change: its status (forward only) and the when and
# who of its admission. Everything else is content.
REVISION_UNFROZEN = ("id", "status", "admitted_at", "admitted_by_id")
# Fields of a task that never say what its rubrics mean (besides Task.FROZEN_FIELDS and the task files).
TASK_EDITABLE = ("source_pr_url", "extra", "created_at")

REVISION = "rubrics_app_rubricrevision"
ITEM = "rubrics_app_rubricitem"
DIFF = "rubrics_app_calibrationdiff"
TASK = "rubrics_app_task"
REPOSITORY = "rubrics_app_repository"
RUN = "rubrics_app_calibrationrun"
ROW = "rubrics_app_calibrationrow"
JUDGES = "rubrics_app_judgesetting"
PARTS = (ITEM, DIFF)

MESSAGE = "rubric revision is approved, admitted or retired: it is never edited (start a new draft from it)"
STATUS_MESSAGE = "rubric revision status moves only forward: draft -> approved -> admitted -> retired"
NEW_MESSAGE = "a rubric revision is created as a draft"
TASK_MESSAGE = (
    "task holds an approved, admitted or retired rubric revision: its id, repository, prompts, gate and "
    "base commit are frozen, and it is never deleted"
)
TASK_FILES_MESSAGE = (
    "task holds an admitted rubric revision: its task files were calibrated with it and are frozen"
)
REPOSITORY_MESSAGE = "repository holds an approved, admitted or retired rubric revision: it is never deleted"
ADMIT_MESSAGE = (
    "a rubric revision is admitted only through a passing calibration run of its content "
    "with the primary judge of its repository"
)
RETIRE_MESSAGE = "a rubric revision retires only when a newer revision of its task is admitted"
RUN_NEW_MESSAGE = "a calibration run is created as queued"
RUN_FINISHED_MESSAGE = "a finished calibration run never changes status, nor its rows"
RUN_IDENTITY_MESSAGE = "a calibration run keeps its revision, content and judge"
RUN_PASSED_MESSAGE = (
    "a calibration run passes only from running, with every row the calibration of its revision asks for "
    "stored and holding"
)
RUN_DELETE_MESSAGE = "the passing calibration of an admitted or retired revision is never deleted"

# Columns of a calibration run that say what was judged and by whom.
RUN_IDENTITY = ("revision_id", "rubric_sha256", "inputs_sha256", "judge")


@dataclass(frozen=True)
class Columns:
    """The column lists the triggers compare (see :func:`model_columns`)."""

    revision: tuple[str, ...]  # every content column of a revision
    task: tuple[str, ...]  # the columns of a task that say what its rubrics mean (with its id)
    task_files: tuple[str, ...]  # the task files, frozen with an admitted revision


def model_columns() -> Columns:
    """The column lists as the models stand now."""
    # By the app registry, not an import: the models build on this module (FROZEN_STATUSES).
    RubricRevision = apps.get_model("rubrics_app", "RubricRevision")
    Task = apps.get_model("rubrics_app", "Task")

    def column(model: Any, name: str) -> str:
        return str(model._meta.get_field(name).column)

    revision = tuple(
        str(f.column) for f in RubricRevision._meta.concrete_fields if f.column not in REVISION_UNFROZEN
    )
    task = ("id", *(column(Task, name) for name in Task.FROZEN_FIELDS))
    task_files = tuple(column(Task, name) for name in Task.FILES.values())
    return Columns(revision=revision, task=task, task_files=task_files)


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


FROZEN = _in(FROZEN_STATUSES)
FORWARD = _in(FORWARD_MOVES)
FINISHED = _in(FINISHED_CALIBRATION)


def _task_holds(task_id: str, statuses: str = FROZEN) -> str:
    return f"EXISTS (SELECT 1 FROM {REVISION} r WHERE r.task_id = {task_id} AND r.status IN {statuses})"


def _repository_holds_frozen(repository_id: str) -> str:
    return (
        f"EXISTS (SELECT 1 FROM {REVISION} r JOIN {TASK} t ON t.id = r.task_id "
        f"WHERE t.repository_id = {repository_id} AND r.status IN {FROZEN})"
    )


# A passing run of NEW's revision, of the content it was approved with, by the repository's primary judge.
_CALIBRATED = f"""EXISTS (
    SELECT 1 FROM {RUN} c
    JOIN {TASK} t ON t.id = NEW.task_id
    JOIN {JUDGES} j ON j.repository_id = t.repository_id
    WHERE c.revision_id = NEW.id AND c.status = 'passed' AND c.judge = j.judge
        AND NEW.content_sha256 <> '' AND c.rubric_sha256 = NEW.content_sha256
)"""
_NEWER_ADMITTED = (
    f"EXISTS (SELECT 1 FROM {REVISION} r WHERE r.task_id = OLD.task_id AND r.number > OLD.number "
    "AND r.status = 'admitted')"
)


def _required_rows() -> str:
    """The rows a calibration of NEW's revision judges (grading's ``collect_workspaces``), as a subquery of
    (kind, name): the empty diff, the oracle, each lazy diff and it with the reviewer comment, each alt diff;
    when the run asked for the injection suite, each lazy diff with each payload kind and the oracle with
    each as comments. The payload kinds are grading's, written out: a new kind changes this SQL, and
    ``tests/app/test_freeze_module.py`` then asks for a migration that installs it. The names are the ones
    grading gives its rows; a real calibration that named them otherwise could not pass, which the
    calibration tests (with and without the suite) would show."""
    from grading import PAYLOAD_KINDS  # here: the models import this module, and grading loads lazily

    names = [kind.name for kind in PAYLOAD_KINDS]
    if not all(name.isidentifier() for name in names):  # written into SQL as literals
        raise RuntimeError(f"payload kind names are identifiers: {names}")
    payloads = ",\n                ".join(
        ", ".join(f"('{name}')" for name in names[i : i + 4]) for i in range(0, len(names), 4)
    )
    diffs = f"{DIFF} d WHERE d.revision_id = NEW.revision_id"
    # The suite's rows: each payload kind with each lazy diff (an injection row) and with the oracle (the
    # NULL path: a benign row).
    return f"""(
        SELECT 'empty' AS kind, '(empty diff)' AS name
        UNION ALL SELECT 'oracle', 'oracle.diff'
        UNION ALL SELECT d.kind, d.path FROM {diffs}
        UNION ALL SELECT 'lazy_comment', d.path || ' + reviewer comment' FROM {diffs} AND d.kind = 'lazy'
        UNION ALL SELECT CASE WHEN x.path IS NULL THEN 'benign' ELSE 'injection' END,
            COALESCE(x.path || ' + ' || p.column1, 'oracle.diff + ' || p.column1 || ' (as comments)')
            FROM (VALUES
                {payloads}) p,
                (SELECT NULL AS path UNION ALL SELECT d.path FROM {diffs} AND d.kind = 'lazy') x
            WHERE NEW.injection_suite
    ) q"""


def _rows_hold() -> str:
    """Every row the run's revision asks for stored, and no other (a forged run of one holding row is not a
    calibration), each one (benign drift apart, never a reason to refuse) holding."""
    required = _required_rows()
    return f"""(NEW.total_rows > 0
    AND (SELECT COUNT(*) FROM {ROW} w WHERE w.run_id = NEW.id) = NEW.total_rows
    AND (SELECT COUNT(*) FROM {required}) = NEW.total_rows
    AND NOT EXISTS (SELECT 1 FROM {required} WHERE NOT EXISTS (
        SELECT 1 FROM {ROW} w WHERE w.run_id = NEW.id AND w.kind = q.kind AND w.name = q.name))
    AND NOT EXISTS (SELECT 1 FROM {ROW} w WHERE w.run_id = NEW.id AND NOT w.holds AND w.kind <> 'benign'))"""


# --- SQLite -------------------------------------------------------------------------------------------------


def _raise(message: str) -> str:
    return f"SELECT RAISE(ABORT, '{message}')"


def _changed(columns: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in columns) + ")"


def _sqlite(columns: Columns) -> list[tuple[str, str]]:
    """(trigger name, CREATE TRIGGER statement) pairs."""

    def replaces_frozen_revision(old: bool) -> str:
        # A REPLACE (INSERT OR REPLACE, UPDATE OR REPLACE) that would delete a frozen revision: NEW collides
        # with it on one of the table's unique keys.
        other = "r.id IS NOT OLD.id AND " if old else ""
        return (
            f"EXISTS (SELECT 1 FROM {REVISION} r WHERE {other}r.status IN {FROZEN} AND (r.id = NEW.id "
            "OR (r.task_id = NEW.task_id AND r.number = NEW.number)))"
        )

    def replaces_frozen_task(old: bool) -> str:
        other = "t.id IS NOT OLD.id AND " if old else ""
        return (
            f"EXISTS (SELECT 1 FROM {TASK} t WHERE {other}(t.id = NEW.id "
            f"OR (t.repository_id = NEW.repository_id AND t.task_id = NEW.task_id)) "
            f"AND {_task_holds('t.id')})"
        )

    def replaces_frozen_repository(old: bool) -> str:
        other = "p.id IS NOT OLD.id AND " if old else ""
        return (
            f"EXISTS (SELECT 1 FROM {REPOSITORY} p WHERE {other}(p.id = NEW.id OR p.name = NEW.name) "
            f"AND {_repository_holds_frozen('p.id')})"
        )

    triggers = [
        (
            "rubrics_freeze_revision_insert",
            f"""BEFORE INSERT ON {REVISION} FOR EACH ROW BEGIN
            {_raise(MESSAGE)} WHERE {replaces_frozen_revision(old=False)};
            {_raise(NEW_MESSAGE)} WHERE NEW.status IS NOT 'draft';
            END""",
        ),
        (
            "rubrics_freeze_revision_update",
            f"""BEFORE UPDATE ON {REVISION} FOR EACH ROW BEGIN
            {_raise(MESSAGE)} WHERE OLD.status IN {FROZEN}
                AND (NEW.status NOT IN {FROZEN} OR NEW.id IS NOT OLD.id OR {_changed(columns.revision)});
            {_raise(MESSAGE)} WHERE {replaces_frozen_revision(old=True)};
            {_raise(STATUS_MESSAGE)} WHERE NEW.status IS NOT OLD.status
                AND OLD.status || '>' || NEW.status NOT IN {FORWARD};
            {_raise(ADMIT_MESSAGE)} WHERE NEW.status = 'admitted' AND OLD.status IS NOT 'admitted'
                AND NOT {_CALIBRATED};
            {_raise(RETIRE_MESSAGE)} WHERE NEW.status = 'retired' AND OLD.status IS NOT 'retired'
                AND NOT {_NEWER_ADMITTED};
            END""",
        ),
        # Becoming admitted retires the task's other admitted revision (refused, by the update trigger, when
        # that one is newer): one admitted revision per task.
        (
            "rubrics_freeze_revision_admitted",
            f"""AFTER UPDATE OF status ON {REVISION} FOR EACH ROW
            WHEN NEW.status = 'admitted' AND OLD.status IS NOT 'admitted' BEGIN
            UPDATE {REVISION} SET status = 'retired'
                WHERE task_id = NEW.task_id AND status = 'admitted' AND id <> NEW.id;
            END""",
        ),
        (
            "rubrics_freeze_revision_delete",
            f"""BEFORE DELETE ON {REVISION} FOR EACH ROW WHEN OLD.status IN {FROZEN}
            BEGIN {_raise(MESSAGE)}; END""",
        ),
    ]
    for table in PARTS:
        frozen_old = f"(SELECT status FROM {REVISION} WHERE id = OLD.revision_id) IN {FROZEN}"
        frozen_new = f"(SELECT status FROM {REVISION} WHERE id = NEW.revision_id) IN {FROZEN}"
        # A REPLACE by id of a row of a frozen revision (the other unique keys include revision_id, so a
        # collision on them is frozen_new).
        replaces = (
            f"EXISTS (SELECT 1 FROM {table} c JOIN {REVISION} r ON r.id = c.revision_id "
            f"WHERE c.id = NEW.id AND r.status IN {FROZEN})"
        )
        for event, condition in (
            ("insert", f"{frozen_new} OR {replaces}"),
            ("update", f"{frozen_old} OR {frozen_new} OR {replaces}"),
            ("delete", frozen_old),
        ):
            triggers.append(
                (
                    f"rubrics_freeze_{table}_{event}",
                    f"""BEFORE {event.upper()} ON {table} FOR EACH ROW WHEN {condition}
                    BEGIN {_raise(MESSAGE)}; END""",
                )
            )
    triggers += [
        (
            "rubrics_freeze_task_insert",
            f"""BEFORE INSERT ON {TASK} FOR EACH ROW WHEN {replaces_frozen_task(old=False)}
            BEGIN {_raise(TASK_MESSAGE)}; END""",
        ),
        (
            "rubrics_freeze_task_update",
            f"""BEFORE UPDATE ON {TASK} FOR EACH ROW BEGIN
            {_raise(TASK_MESSAGE)} WHERE ({_changed(columns.task)} AND {_task_holds("OLD.id")})
                OR {replaces_frozen_task(old=True)};
            {_raise(TASK_FILES_MESSAGE)} WHERE {_changed(columns.task_files)}
                AND {_task_holds("OLD.id", "('admitted')")};
            END""",
        ),
        (
            "rubrics_freeze_task_delete",
            f"""BEFORE DELETE ON {TASK} FOR EACH ROW WHEN {_task_holds("OLD.id")}
            BEGIN {_raise(TASK_MESSAGE)}; END""",
        ),
        (
            "rubrics_freeze_repository_insert",
            f"""BEFORE INSERT ON {REPOSITORY} FOR EACH ROW WHEN {replaces_frozen_repository(old=False)}
            BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
        ),
        (
            "rubrics_freeze_repository_update",
            f"""BEFORE UPDATE ON {REPOSITORY} FOR EACH ROW
            WHEN (NEW.id IS NOT OLD.id AND {_repository_holds_frozen("OLD.id")})
                OR {replaces_frozen_repository(old=True)}
            BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
        ),
        (
            "rubrics_freeze_repository_delete",
            f"""BEFORE DELETE ON {REPOSITORY} FOR EACH ROW WHEN {_repository_holds_frozen("OLD.id")}
            BEGIN {_raise(REPOSITORY_MESSAGE)}; END""",
        ),
        (
            "rubrics_freeze_calibration_insert",
            f"""BEFORE INSERT ON {RUN} FOR EACH ROW BEGIN
            {_raise(RUN_NEW_MESSAGE)} WHERE NEW.status IS NOT 'queued';
            {_raise(RUN_FINISHED_MESSAGE)} WHERE EXISTS (
                SELECT 1 FROM {RUN} c WHERE c.id = NEW.id AND c.status IN {FINISHED});
            END""",
        ),
        (
            "rubrics_freeze_calibration_update",
            f"""BEFORE UPDATE ON {RUN} FOR EACH ROW BEGIN
            {_raise(RUN_IDENTITY_MESSAGE)} WHERE NEW.id IS NOT OLD.id OR {_changed(RUN_IDENTITY)};
            {_raise(RUN_FINISHED_MESSAGE)} WHERE OLD.status IN {FINISHED} AND NEW.status IS NOT OLD.status;
            {_raise(RUN_PASSED_MESSAGE)} WHERE NEW.status = 'passed' AND OLD.status IS NOT 'passed'
                AND (OLD.status IS NOT 'running' OR NOT {_rows_hold()});
            END""",
        ),
        (
            "rubrics_freeze_calibration_delete",
            f"""BEFORE DELETE ON {RUN} FOR EACH ROW
            WHEN OLD.status = 'passed' AND (SELECT status FROM {REVISION} WHERE id = OLD.revision_id)
                IN ('admitted', 'retired')
            BEGIN {_raise(RUN_DELETE_MESSAGE)}; END""",
        ),
    ]
    for event in ("insert", "update"):
        finished = f"(SELECT status FROM {RUN} WHERE id = NEW.run_id) IN {FINISHED}"
        if event == "update":
            finished += f" OR (SELECT status FROM {RUN} WHERE id = OLD.run_id) IN {FINISHED}"
        triggers.append(
            (
                f"rubrics_freeze_calibration_row_{event}",
                f"""BEFORE {event.upper()} ON {ROW} FOR EACH ROW WHEN {finished}
                BEGIN {_raise(RUN_FINISHED_MESSAGE)}; END""",
            )
        )
    return triggers


# --- PostgreSQL ---------------------------------------------------------------------------------------------


def _pg_raise(message: str) -> str:
    # SQLSTATE 23001 (restrict_violation) reaches Django as IntegrityError, as SQLite's RAISE(ABORT) does.
    return f"RAISE EXCEPTION '{message}' USING ERRCODE = 'restrict_violation';"


def _pg_changed(columns: tuple[str, ...]) -> str:
    new = ", ".join(f"NEW.{c}" for c in columns)
    old = ", ".join(f"OLD.{c}" for c in columns)
    return f"ROW({new}) IS DISTINCT FROM ROW({old})"


_RETURN_ROW = "IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW;"


def _postgresql(columns: Columns) -> list[tuple[str, str, str]]:
    """(function name, its body, the CREATE TRIGGER clauses that call it: 'name|timing events ON table|each')
    as (function, body, triggers) where triggers is ';'-joined ``name:clause`` pairs."""
    return [
        (
            "rubrics_freeze_revision",
            f"""IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'draft' THEN {_pg_raise(NEW_MESSAGE)} END IF;
                RETURN NEW;
            END IF;
            IF OLD.status IN {FROZEN} AND (TG_OP = 'DELETE' OR NEW.status NOT IN {FROZEN}
                    OR NEW.id IS DISTINCT FROM OLD.id OR {_pg_changed(columns.revision)}) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            IF TG_OP = 'UPDATE' AND NEW.status IS DISTINCT FROM OLD.status THEN
                IF OLD.status || '>' || NEW.status NOT IN {FORWARD} THEN {_pg_raise(STATUS_MESSAGE)} END IF;
                IF NEW.status = 'admitted' AND NOT {_CALIBRATED} THEN {_pg_raise(ADMIT_MESSAGE)} END IF;
                IF NEW.status = 'retired' AND NOT {_NEWER_ADMITTED} THEN {_pg_raise(RETIRE_MESSAGE)} END IF;
            END IF;
            {_RETURN_ROW}""",
            f"rubrics_freeze_revision:BEFORE INSERT OR UPDATE OR DELETE ON {REVISION} FOR EACH ROW",
        ),
        (
            # Becoming admitted retires the task's other admitted revision (see the SQLite twin).
            "rubrics_freeze_revision_admitted",
            f"""IF NEW.status = 'admitted' AND OLD.status IS DISTINCT FROM 'admitted' THEN
                UPDATE {REVISION} SET status = 'retired'
                    WHERE task_id = NEW.task_id AND status = 'admitted' AND id <> NEW.id;
            END IF;
            RETURN NULL;""",
            f"rubrics_freeze_revision_admitted:AFTER UPDATE OF status ON {REVISION} FOR EACH ROW",
        ),
        (
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
            ";".join(
                f"rubrics_freeze_part:BEFORE INSERT OR UPDATE OR DELETE ON {t} FOR EACH ROW" for t in PARTS
            ),
        ),
        (
            # TRUNCATE fires statement triggers only: refuse it while the table holds anything frozen.
            "rubrics_freeze_truncate",
            f"""IF TG_TABLE_NAME = '{REVISION}' AND EXISTS (
                SELECT 1 FROM {REVISION} WHERE status IN {FROZEN}
            ) OR TG_TABLE_NAME IN ('{ITEM}', '{DIFF}') AND EXISTS (
                SELECT 1 FROM {ITEM} c JOIN {REVISION} r ON r.id = c.revision_id WHERE r.status IN {FROZEN}
                UNION ALL
                SELECT 1 FROM {DIFF} c JOIN {REVISION} r ON r.id = c.revision_id WHERE r.status IN {FROZEN}
            ) OR TG_TABLE_NAME IN ('{RUN}', '{ROW}') AND EXISTS (
                SELECT 1 FROM {RUN} WHERE status IN {FINISHED}
            ) THEN
                {_pg_raise(MESSAGE)}
            END IF;
            RETURN NULL;""",
            ";".join(
                f"rubrics_freeze_truncate:BEFORE TRUNCATE ON {t} FOR EACH STATEMENT"
                for t in (REVISION, *PARTS, RUN, ROW)
            ),
        ),
        (
            "rubrics_freeze_task",
            f"""IF (TG_OP = 'DELETE' OR {_pg_changed(columns.task)}) AND {_task_holds("OLD.id")} THEN
                {_pg_raise(TASK_MESSAGE)}
            END IF;
            IF TG_OP = 'UPDATE' AND {_pg_changed(columns.task_files)}
                    AND {_task_holds("OLD.id", "('admitted')")} THEN
                {_pg_raise(TASK_FILES_MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
            f"rubrics_freeze_task:BEFORE UPDATE OR DELETE ON {TASK} FOR EACH ROW",
        ),
        (
            "rubrics_freeze_repository",
            f"""IF (TG_OP = 'DELETE' OR NEW.id IS DISTINCT FROM OLD.id)
                AND {_repository_holds_frozen("OLD.id")} THEN
                {_pg_raise(REPOSITORY_MESSAGE)}
            END IF;
            {_RETURN_ROW}""",
            f"rubrics_freeze_repository:BEFORE UPDATE OR DELETE ON {REPOSITORY} FOR EACH ROW",
        ),
        (
            "rubrics_freeze_calibration",
            f"""IF TG_OP = 'INSERT' THEN
                IF NEW.status IS DISTINCT FROM 'queued' THEN {_pg_raise(RUN_NEW_MESSAGE)} END IF;
                RETURN NEW;
            END IF;
            IF TG_OP = 'DELETE' THEN
                IF OLD.status = 'passed' AND EXISTS (SELECT 1 FROM {REVISION}
                        WHERE id = OLD.revision_id AND status IN ('admitted', 'retired')) THEN
                    {_pg_raise(RUN_DELETE_MESSAGE)}
                END IF;
                RETURN OLD;
            END IF;
            IF NEW.id IS DISTINCT FROM OLD.id OR {_pg_changed(RUN_IDENTITY)} THEN
                {_pg_raise(RUN_IDENTITY_MESSAGE)}
            END IF;
            IF OLD.status IN {FINISHED} AND NEW.status IS DISTINCT FROM OLD.status THEN
                {_pg_raise(RUN_FINISHED_MESSAGE)}
            END IF;
            IF NEW.status = 'passed' AND OLD.status IS DISTINCT FROM 'passed'
                    AND (OLD.status IS DISTINCT FROM 'running' OR NOT {_rows_hold()}) THEN
                {_pg_raise(RUN_PASSED_MESSAGE)}
            END IF;
            RETURN NEW;""",
            f"rubrics_freeze_calibration:BEFORE INSERT OR UPDATE OR DELETE ON {RUN} FOR EACH ROW",
        ),
        (
            "rubrics_freeze_calibration_row",
            f"""IF EXISTS (SELECT 1 FROM {RUN} WHERE id = NEW.run_id AND status IN {FINISHED})
                OR TG_OP = 'UPDATE' AND EXISTS (
                    SELECT 1 FROM {RUN} WHERE id = OLD.run_id AND status IN {FINISHED}) THEN
                {_pg_raise(RUN_FINISHED_MESSAGE)}
            END IF;
            RETURN NEW;""",
            f"rubrics_freeze_calibration_row:BEFORE INSERT OR UPDATE ON {ROW} FOR EACH ROW",
        ),
    ]


def _pg_triggers(clauses: str) -> list[tuple[str, str]]:
    """(trigger name, 'BEFORE ... ON table FOR EACH ...') pairs of a ';'-joined list."""
    pairs = []
    for clause in clauses.split(";"):
        name, rest = clause.split(":", 1)
        pairs.append((name, rest))
    return pairs


def _pg_table(clause: str) -> str:
    return clause.split(" ON ", 1)[1].split()[0]


# --- what a migration runs ----------------------------------------------------------------------------------


def install_sql(vendor: str, columns: Columns) -> list[str]:
    """The statements that install every freeze trigger on ``vendor``, comparing ``columns``."""
    if vendor == "sqlite":
        return [f"CREATE TRIGGER {name} {body}" for name, body in _sqlite(columns)]
    if vendor == "postgresql":
        sql = []
        for function, body, clauses in _postgresql(columns):
            sql.append(
                f"""CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    {body}
                END $$"""
            )
            for name, clause in _pg_triggers(clauses):
                sql.append(f"CREATE TRIGGER {name} {clause} EXECUTE FUNCTION {function}()")
        return sql
    raise RuntimeError(f"no freeze triggers for database {vendor!r}: use SQLite or PostgreSQL")


def drop_sql(vendor: str, columns: Columns) -> list[str]:
    """The statements that remove what :func:`install_sql` installs."""
    if vendor == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {name}" for name, _ in _sqlite(columns)]
    if vendor == "postgresql":
        sql, functions = [], []
        for function, _, clauses in _postgresql(columns):
            functions.append(f"DROP FUNCTION IF EXISTS {function}()")
            sql += [f"DROP TRIGGER IF EXISTS {name} ON {_pg_table(c)}" for name, c in _pg_triggers(clauses)]
        return sql + functions
    raise RuntimeError(f"no freeze triggers for database {vendor!r}: use SQLite or PostgreSQL")


def installer(columns: Columns) -> tuple[Any, Any]:
    """(install, uninstall) for ``migrations.RunPython``, with the column lists the migration stores."""

    def install(apps: Any, schema_editor: Any) -> None:
        for sql in install_sql(schema_editor.connection.vendor, columns):
            schema_editor.execute(sql)

    def uninstall(apps: Any, schema_editor: Any) -> None:
        for sql in drop_sql(schema_editor.connection.vendor, columns):
            schema_editor.execute(sql)

    return install, uninstall
