"""Holes in the freeze found with raw SQL, closed by migration 0006: SQLite's REPLACE, PostgreSQL's TRUNCATE,
a status moved backwards, the task of a frozen revision edited, and deletes with SQLite's foreign keys off.

Each test writes around the model methods (raw cursor) and runs on SQLite by default and on PostgreSQL
when DATABASE_URL points at it; the vendor-specific holes are skipped on the other vendor.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationDiff,
    Repository,
    RevisionStatus,
    RubricItem,
    RubricRevision,
    Task,
)
from rubrics_app.services.rubrics.files import ImportFailed, TaskFiles
from rubrics_app.services.rubrics.imports import import_task_files
from tests.app.conftest import CALIBRATION_FILES, MakeRevision, calibrate, rubric_data
from tests.app.sql_helpers import refused as sql_refused

REVISION = "rubrics_app_rubricrevision"
ITEM = "rubrics_app_rubricitem"
DIFF = "rubrics_app_calibrationdiff"

FROZEN = "never edited"
BACKWARDS = "moves only forward"
TASK_FROZEN = "task holds an approved, admitted or retired rubric revision"
REPOSITORY_FROZEN = "repository holds an approved, admitted or retired rubric revision"

sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="a hole of SQLite's")
postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="a hole of PostgreSQL's")


def refused(sql: str, params: Any = (), message: str = FROZEN) -> bool:
    return sql_refused(sql, params, message)


def make(status: str, make_revision: MakeRevision) -> RubricRevision:
    if status == RevisionStatus.RETIRED:
        retired = make_revision(RevisionStatus.ADMITTED)
        make_revision(RevisionStatus.ADMITTED)  # supersedes it
        retired.refresh_from_db()
        assert retired.status == RevisionStatus.RETIRED
        return retired
    return make_revision(status)


@pytest.fixture(params=[RevisionStatus.APPROVED, RevisionStatus.ADMITTED, RevisionStatus.RETIRED])
def frozen_revision(request: pytest.FixtureRequest, make_revision: MakeRevision) -> RubricRevision:
    return make(request.param, make_revision)


def columns(table: str) -> list[str]:
    with connection.cursor() as cursor:
        return [c.name for c in connection.introspection.get_table_description(cursor, table)]


def replace_sql(table: str, **overrides: str) -> str:
    """REPLACE INTO table SELECT <the row, with some columns overridden> FROM table WHERE id = %s."""
    names = columns(table)
    selected = ", ".join(overrides.get(name, name) for name in names)
    return f"REPLACE INTO {table} ({', '.join(names)}) SELECT {selected} FROM {table} WHERE id = %s"


# --- SQLite: REPLACE deletes without firing DELETE triggers ------------------------------------------------


@sqlite_only
def test_the_app_turns_recursive_triggers_and_foreign_keys_on(db: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA recursive_triggers")
        assert cursor.fetchone() == (1,)
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone() == (1,)


@sqlite_only
@pytest.mark.parametrize("overrides", [{"intent": "'HACKED'"}, {"status": "'draft'"}, {}])
def test_replace_into_a_frozen_revision_is_refused(
    frozen_revision: RubricRevision, overrides: dict[str, str]
) -> None:
    assert refused(replace_sql(REVISION, **overrides), [frozen_revision.pk])
    fresh = RubricRevision.objects.get(pk=frozen_revision.pk)
    assert (fresh.status, fresh.intent) == (frozen_revision.status, frozen_revision.intent)


@sqlite_only
def test_replace_into_items_and_diffs_of_a_frozen_revision_is_refused(
    frozen_revision: RubricRevision, draft_revision: RubricRevision
) -> None:
    item = frozen_revision.items.get(item_id="B1")
    diff = frozen_revision.calibration_diffs.get(kind="lazy")
    assert refused(replace_sql(ITEM, criterion="'HACKED'"), [item.pk])
    # Taken out of the frozen revision into a draft, by id.
    assert refused(replace_sql(ITEM, revision_id=str(draft_revision.pk)), [item.pk])
    assert refused(replace_sql(DIFF, content="X'00'"), [diff.pk])
    assert RubricItem.objects.get(pk=item.pk).criterion == item.criterion
    assert bytes(CalibrationDiff.objects.get(pk=diff.pk).content) == bytes(diff.content)


@sqlite_only
def test_a_draft_cannot_replace_a_frozen_revision_by_taking_its_number(
    frozen_revision: RubricRevision, make_revision: MakeRevision
) -> None:
    draft = make_revision(RevisionStatus.DRAFT)
    sql = f"UPDATE OR REPLACE {REVISION} SET number = %s WHERE id = %s"
    assert refused(sql, [frozen_revision.number, draft.pk])
    assert RubricRevision.objects.filter(pk=frozen_revision.pk).exists()


@sqlite_only
def test_replace_into_the_task_of_a_frozen_revision_is_refused(frozen_revision: RubricRevision) -> None:
    task = frozen_revision.task
    assert refused(replace_sql("rubrics_app_task", spec_prompt="'HACKED'"), [task.pk], TASK_FROZEN)
    assert Task.objects.get(pk=task.pk).spec_prompt == task.spec_prompt


@sqlite_only
def test_replace_on_a_draft_is_still_allowed(draft_revision: RubricRevision) -> None:
    assert not refused(replace_sql(REVISION, intent="'rewritten'"), [draft_revision.pk])
    assert RubricRevision.objects.get(pk=draft_revision.pk).intent == "rewritten"


# --- PostgreSQL: TRUNCATE fires no row trigger -------------------------------------------------------------


@pytest.fixture
def truncatable() -> None:
    # The test's own rows leave deferred foreign-key checks pending, and PostgreSQL will not truncate a
    # table with pending trigger events: run them now.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


@postgresql_only
@pytest.mark.parametrize(
    "statement",
    [
        f"TRUNCATE {ITEM} CASCADE",
        f"TRUNCATE {DIFF}",
        f"TRUNCATE {REVISION} CASCADE",
        "TRUNCATE rubrics_app_task CASCADE",
        "TRUNCATE rubrics_app_repository CASCADE",
    ],
)
def test_truncate_is_refused_while_anything_is_frozen(
    frozen_revision: RubricRevision, truncatable: None, statement: str
) -> None:
    assert refused(statement)
    assert frozen_revision.items.count() == 5
    assert frozen_revision.calibration_diffs.count() == 2


@postgresql_only
def test_truncate_of_drafts_only_is_allowed(draft_revision: RubricRevision, truncatable: None) -> None:
    assert not refused(f"TRUNCATE {ITEM}, {DIFF} CASCADE")
    assert not RubricItem.objects.exists()


# --- status moves only forward -----------------------------------------------------------------------------

STATUSES = [RevisionStatus.DRAFT, RevisionStatus.APPROVED, RevisionStatus.ADMITTED, RevisionStatus.RETIRED]
FORWARD = {("draft", "approved"), ("approved", "admitted"), ("admitted", "retired")}


@pytest.mark.parametrize("old", STATUSES)
@pytest.mark.parametrize("new", [*STATUSES, "x"])
def test_status_moves_only_forward_one_step(
    make_revision: MakeRevision, maintainer: Any, old: str, new: str
) -> None:
    revision = make(old, make_revision)
    if (old, new) == ("approved", "admitted"):
        calibrate(revision, maintainer)  # admitted means calibrated: what decides here is the order only
    sql = f"UPDATE {REVISION} SET status = %s WHERE id = %s"
    if (old, new) == ("admitted", "retired"):
        # Forward, but a revision retires only as a newer one is admitted (test_freeze_module).
        assert refused(sql, [new, revision.pk], "retires only when a newer revision of its task is admitted")
        assert RubricRevision.objects.get(pk=revision.pk).status == old
    elif old == new or (old, new) in FORWARD:
        assert not refused(sql, [new, revision.pk])
        assert RubricRevision.objects.get(pk=revision.pk).status == new
    else:
        message = FROZEN if old != RevisionStatus.DRAFT and new in ("draft", "x") else BACKWARDS
        assert refused(sql, [new, revision.pk], message)
        assert RubricRevision.objects.get(pk=revision.pk).status == old


@pytest.mark.parametrize("status", [RevisionStatus.APPROVED, RevisionStatus.ADMITTED, RevisionStatus.RETIRED])
def test_a_revision_is_created_only_as_a_draft(draft_revision: RubricRevision, status: str) -> None:
    names = [n for n in columns(REVISION) if n != "id"]
    selected = ", ".join("%s" if n == "status" else n for n in names)
    sql = f"INSERT INTO {REVISION} ({', '.join(names)}) SELECT {selected.replace('number', 'number + 100')} "
    sql += f"FROM {REVISION} WHERE id = %s"
    # An admitted one is refused by whichever trigger runs first: 0006's, or 0011's (admitted means
    # calibrated, and no calibration run can name a revision not inserted yet).
    with pytest.raises(IntegrityError) as exc, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, [status, draft_revision.pk])
    assert "created as a draft" in str(exc.value) or (
        status == RevisionStatus.ADMITTED and "admitted only through a passing calibration" in str(exc.value)
    )


# --- the task of a frozen revision -------------------------------------------------------------------------


TASK_CHANGES: list[tuple[str, Any]] = [
    ("task_id", "renamed"),
    ("spec_prompt", "Something else entirely."),
    ("issue_prompt", "another issue"),
    ("gate", json.dumps(["pass", "lint"])),
    ("base_commit", "f" * 40),
    ("base_date", "2020-01-01"),
]


@pytest.mark.parametrize(("column", "value"), TASK_CHANGES)
def test_the_task_of_a_frozen_revision_keeps_what_its_rubric_means(
    frozen_revision: RubricRevision, column: str, value: Any
) -> None:
    task = frozen_revision.task
    sql = f"UPDATE rubrics_app_task SET {column} = %s WHERE id = %s"
    assert refused(sql, [value, task.pk], TASK_FROZEN)
    assert getattr(Task.objects.get(pk=task.pk), column) == getattr(task, column)


def test_the_task_of_a_frozen_revision_cannot_move_to_another_repository(
    frozen_revision: RubricRevision, other_repository: Repository
) -> None:
    task = frozen_revision.task
    sql = "UPDATE rubrics_app_task SET repository_id = %s WHERE id = %s"
    assert refused(sql, [other_repository.pk, task.pk], TASK_FROZEN)


@pytest.mark.parametrize(("column", "value"), TASK_CHANGES)
def test_a_task_with_drafts_only_is_editable(draft_revision: RubricRevision, column: str, value: Any) -> None:
    sql = f"UPDATE rubrics_app_task SET {column} = %s WHERE id = %s"
    assert not refused(sql, [value, draft_revision.task_id])


def test_what_does_not_change_a_rubric_s_meaning_stays_editable(frozen_revision: RubricRevision) -> None:
    sql = "UPDATE rubrics_app_task SET source_pr_url = %s WHERE id = %s"
    assert not refused(sql, ["https://example.com/pr/2", frozen_revision.task_id])


def test_deleting_the_task_or_repository_of_a_frozen_revision_is_refused(
    frozen_revision: RubricRevision,
) -> None:
    task = frozen_revision.task
    assert refused("DELETE FROM rubrics_app_task WHERE id = %s", [task.pk], TASK_FROZEN)
    assert refused(
        "DELETE FROM rubrics_app_repository WHERE id = %s", [task.repository_id], REPOSITORY_FROZEN
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.filter(pk=task.pk).delete()  # the ORM's cascade hits the revision first
    assert Task.objects.filter(pk=task.pk).exists()


def test_importing_a_task_json_that_changes_a_frozen_task_is_a_problem(
    frozen_revision: RubricRevision, maintainer: Any
) -> None:
    task = frozen_revision.task
    task_json = {"id": task.task_id, "prompt": "A different prompt.", "gate": task.gate}
    files = TaskFiles(
        directory=f"tasks/{task.task_id}",
        rubric=json.dumps(rubric_data(task=task.task_id)).encode(),
        task_json=json.dumps(task_json).encode(),
        files=CALIBRATION_FILES,
    )
    with pytest.raises(ImportFailed) as failed:
        import_task_files(task.repository, [files], Actor.member(maintainer))
    [problem] = failed.value.problems
    assert (problem.file, problem.path) == (f"tasks/{task.task_id}/task.json", "spec_prompt")
    assert "frozen" in problem.message
    assert task.revisions.count() == RubricRevision.objects.filter(task=task).count()
    assert Task.objects.get(pk=task.pk).spec_prompt == task.spec_prompt

    # The same task.json as stored imports as a new draft.
    task_json["prompt"] = task.spec_prompt
    files.task_json = json.dumps(task_json).encode()
    [draft] = import_task_files(task.repository, [files], Actor.member(maintainer))
    assert draft.status == RevisionStatus.DRAFT and draft.task_id == task.pk


# --- SQLite with its foreign keys off, in a connection of its own ----------------------------------------


@sqlite_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_deletes_are_refused_with_foreign_keys_off_in_a_raw_connection(make_revision: MakeRevision) -> None:
    revision = make_revision(RevisionStatus.ADMITTED)
    task = revision.task
    raw = sqlite3.connect(connection.settings_dict["NAME"], timeout=20, isolation_level=None)
    try:
        assert raw.execute("PRAGMA foreign_keys").fetchone() == (0,)
        assert raw.execute("PRAGMA recursive_triggers").fetchone() == (0,)
        for sql, value in (
            ("DELETE FROM rubrics_app_task WHERE id = ?", task.pk),
            ("DELETE FROM rubrics_app_repository WHERE id = ?", task.repository_id),
            (f"DELETE FROM {REVISION} WHERE id = ?", revision.pk),
            (f"DELETE FROM {ITEM} WHERE revision_id = ?", revision.pk),
            # REPLACE without recursive_triggers: the INSERT triggers refuse it all the same.
            (replace_sql(REVISION, intent="'HACKED'").replace("%s", "?"), revision.pk),
            (replace_sql("rubrics_app_task", spec_prompt="'HACKED'").replace("%s", "?"), task.pk),
        ):
            with pytest.raises(sqlite3.IntegrityError):
                raw.execute(sql, [value])
    finally:
        raw.close()
    assert Task.objects.filter(pk=task.pk).exists()
    fresh = RubricRevision.objects.get(pk=revision.pk)
    assert (fresh.intent, fresh.items.count()) == (revision.intent, 5)


# --- PostgreSQL: the app's role, as docs/deployment.md sets it up, cannot lift the triggers ---------------


@postgresql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_a_role_that_does_not_own_the_tables_cannot_lift_the_freeze(make_revision: MakeRevision) -> None:
    import psycopg
    from psycopg import sql

    frozen = make_revision(RevisionStatus.ADMITTED)
    draft = make_revision(RevisionStatus.DRAFT)
    settings = connection.settings_dict
    role = f"rubrics_app_test_{os.getpid()}"
    grants = [
        sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)),
        sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(settings["NAME"]), sql.Identifier(role)
        ),
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(
            sql.Identifier(role)
        ),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(sql.Identifier(role)),
    ]
    with connection.cursor() as cursor:
        for statement in grants:
            cursor.execute(statement.as_string(cursor.connection))
    try:
        app = psycopg.connect(
            host=settings["HOST"] or "127.0.0.1",
            port=settings["PORT"] or 5432,
            dbname=settings["NAME"],
            user=role,
            autocommit=True,
        )
        with app:
            for attack in (
                f"ALTER TABLE {REVISION} DISABLE TRIGGER ALL",
                "SET session_replication_role = replica",
                f"TRUNCATE {ITEM}",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    app.execute(attack)
            with pytest.raises(psycopg.errors.RestrictViolation):
                app.execute(f"UPDATE {REVISION} SET intent = 'HACKED' WHERE id = %s", [frozen.pk])
            # What the app does every day, it may.
            app.execute(f"UPDATE {REVISION} SET intent = 'edited' WHERE id = %s", [draft.pk])
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)).as_string(cursor.connection)
            )
            cursor.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)).as_string(cursor.connection))
    assert RubricRevision.objects.get(pk=frozen.pk).intent == frozen.intent
    assert RubricRevision.objects.get(pk=draft.pk).intent == "edited"
