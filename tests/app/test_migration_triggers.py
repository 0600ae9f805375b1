"""A fresh database built from the migrations has the triggers of the stored snapshot, and the freeze triggers
among them are what rubrics_app.freeze writes now.

The snapshot (tests/app/triggers/<vendor>.sql) is what `manage.py migrate` leaves on an empty database: a
migration that installs, drops or rewrites a trigger changes it. After such a migration, write the snapshot
again and read its diff (docs/architecture.md):

    RUBRICS_WRITE_TRIGGER_SNAPSHOT=1 .venv/bin/pytest tests/app/test_migration_triggers.py
    (and the same with DATABASE_URL pointing at PostgreSQL)

Runs on SQLite by default and on PostgreSQL when DATABASE_URL points at it; each builds its own empty database
(a temporary file, or a PostgreSQL database named after the test database) and drops it after.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from rubrics_app import freeze

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "triggers"
WRITE = "RUBRICS_WRITE_TRIGGER_SNAPSHOT"

# (kind, name, SQL as the database keeps it): kind is "trigger" or, on PostgreSQL, "function".
Objects = list[tuple[str, str, str]]


def _migrate(database_url: str) -> None:
    env = {**os.environ, "DATABASE_URL": database_url}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"migrate on a fresh database failed:\n{done.stderr[-4000:]}"


def _sqlite_objects(tmp_path: Path) -> Objects:
    import sqlite3
    from contextlib import closing

    path = tmp_path / "fresh.sqlite3"
    _migrate(f"sqlite:///{path}")
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    return [("trigger", f"{name} ON {table}", sql) for name, table, sql in rows]


_PG_OBJECTS = """
    SELECT 'trigger', t.tgname || ' ON ' || c.relname, pg_get_triggerdef(t.oid)
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'function', p.proname, p.prosrc
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' AND p.prorettype = 'trigger'::regtype
"""


def _postgresql_objects() -> Iterator[Objects]:
    import psycopg
    from psycopg import sql

    params = connection.get_connection_params()
    name = f"{settings.DATABASES['default']['NAME']}_fresh"[:63]
    admin = {key: value for key, value in params.items() if key in ("host", "port", "user", "password")}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as db:
        db.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        user = params.get("user", "")
        password = f":{params['password']}" if params.get("password") else ""
        url = f"postgres://{user}{password}@{params.get('host', '')}:{params.get('port', 5432)}/{name}"
        _migrate(url)
        with psycopg.connect(dbname=name, **admin) as db:
            yield [(kind, name_, text) for kind, name_, text in db.execute(_PG_OBJECTS).fetchall()]
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **admin) as db:
            db.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Objects]:
    """The triggers (and PostgreSQL trigger functions) of an empty database after `manage.py migrate`."""
    if connection.vendor == "sqlite":
        yield _sqlite_objects(tmp_path_factory.mktemp("fresh"))
    elif connection.vendor == "postgresql":
        yield from _postgresql_objects()
    else:
        pytest.fail(f"no trigger snapshot for database {connection.vendor!r}: use SQLite or PostgreSQL")


def normalised(objects: Objects) -> str:
    """One block per object, sorted by kind and name: a header line, then its SQL a line per line, each line's
    surrounding whitespace and the empty lines left out (indentation comes from the Python source)."""
    blocks = []
    for kind, name, text in sorted(objects):
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        blocks.append("\n".join([f"-- {kind} {name}", *lines]))
    return "\n\n".join(blocks) + "\n"


def test_a_fresh_database_has_the_triggers_of_the_snapshot(fresh: Objects) -> None:
    snapshot = SNAPSHOTS / f"{connection.vendor}.sql"
    now = normalised(fresh)
    if os.environ.get(WRITE) == "1":
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(now)
    stored = snapshot.read_text() if snapshot.exists() else ""
    if now != stored:
        diff = "".join(
            difflib.unified_diff(
                stored.splitlines(keepends=True),
                now.splitlines(keepends=True),
                f"{snapshot.relative_to(ROOT)} (stored)",
                "fresh database (migrate)",
            )
        )
        pytest.fail(
            f"the triggers the migrations install differ from {snapshot.relative_to(ROOT)}; if a new "
            f"migration meant this, write the snapshot again ({WRITE}=1, see docs/architecture.md):\n{diff}",
            pytrace=False,
        )


def _freeze_now(vendor: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> SQL as the database keeps it, for what freeze.py writes with the models' columns."""
    objects = {}
    for statement in freeze.install_sql(vendor, freeze.model_columns()):
        if vendor == "sqlite":
            match = re.match(r"CREATE TRIGGER (\w+) \w+ (?:INSERT|UPDATE|DELETE)[\w ]*? ON (\w+)", statement)
            assert match, statement
            objects[("trigger", f"{match[1]} ON {match[2]}")] = statement
        elif statement.startswith("CREATE OR REPLACE FUNCTION"):
            function = re.match(r"CREATE OR REPLACE FUNCTION (\w+)\(\)", statement)
            assert function, statement
            objects[("function", function[1])] = statement.split("$$")[1]
        else:
            trigger = re.match(r"CREATE TRIGGER (\w+) .*? ON (\w+)", statement)
            assert trigger, statement
            objects[("trigger", f"{trigger[1]} ON {trigger[2]}")] = ""  # PostgreSQL rewrites the clause
    return objects


def test_the_migrations_install_the_freeze_triggers_freeze_writes_now(fresh: Objects) -> None:
    # A new content column, an edit to freeze.py or a new payload kind in grading fails this until a new
    # migration installs the SQL freeze.py writes, literally.
    installed: dict[tuple[str, str], Any] = {(kind, name): text for kind, name, text in fresh}
    now = _freeze_now(connection.vendor)
    assert set(now) <= set(installed), f"not installed: {sorted(set(now) - set(installed))}"
    differ = [key for key, text in now.items() if text and installed[key] != text]
    assert not differ, f"installed by the migrations, but freeze.py now writes otherwise: {differ}"
