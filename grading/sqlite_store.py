"""The base of the command line's SQLite files (the judge cache, the admission store).

One file, shared safely by concurrent processes: the schema is created (and older layouts brought up to
date) once when the store opens, each operation opens one short connection in autocommit mode, and each
write is one ``BEGIN IMMEDIATE`` transaction that waits (busy timeout) for the others. A file that is not
SQLite, or a directory that cannot be created, is an InputError naming the file and the store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from grading.errors import InputError


class SqliteStore:
    """Subclasses name themselves (``what``) and create their schema (:meth:`_create`)."""

    what: ClassVar[str] = "store"

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as conn:
                self._create(conn)
        except sqlite3.DatabaseError as exc:
            raise InputError(path, f"not a usable {self.what} (SQLite): {exc}") from None
        except OSError as exc:
            raise InputError(path, f"cannot create the {self.what}: {exc.strerror or exc}") from None

    def _create(self, conn: sqlite3.Connection) -> None:
        """Create the tables and indexes, and add what an older layout lacks (idempotent)."""
        raise NotImplementedError

    def _configure(self, conn: sqlite3.Connection) -> None:
        """Settings for each connection (pragmas), before it is used."""

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            self._configure(conn)
            yield conn
        finally:
            conn.close()

    def _write(self, sql: str, params: Sequence[Any]) -> None:
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(sql, params)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _count(self, table: str) -> int:
        with self._connect() as conn:
            (n,) = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()  # table: a class constant
        return int(n)
