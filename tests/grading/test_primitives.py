"""One of each primitive: the atomic write and the SQLite store base, and guards that no copy comes back."""

from __future__ import annotations

import re
import sqlite3
import stat
from pathlib import Path

import pytest

from grading.admission.store import AdmissionStore
from grading.atomic import write_atomic, write_new
from grading.errors import InputError
from grading.judge.cache import SqliteCache
from grading.sqlite_store import SqliteStore

ROOT = Path(__file__).resolve().parents[2]


def sources_matching(pattern: str, *, allowed: set[str]) -> list[str]:
    found = re.compile(pattern)
    return [
        rel
        for package in ("grading", "rubrics_app")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (rel := str(path.relative_to(ROOT))) not in allowed
        and found.search(path.read_text(encoding="utf-8"))
    ]


def test_the_write_replaces_whole_with_a_readable_mode_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    target.write_bytes(b"old")
    write_atomic(target, b"new contents")
    assert target.read_bytes() == b"new contents"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # mkstemp alone would leave 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_a_failed_write_names_the_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        write_atomic(tmp_path, b"x")
    with pytest.raises(InputError, match=r"missing/out\.txt: cannot write"):
        write_atomic(tmp_path / "missing" / "out.txt", b"x")
    target = tmp_path / "kept.txt"
    target.write_bytes(b"old")

    class Boom(Exception):
        pass

    class Exploding(bytes):
        def __buffer__(self, flags: int) -> memoryview:
            raise Boom

    with pytest.raises(Boom):
        write_atomic(target, Exploding(b"new"))
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


class Notes(SqliteStore):
    what = "notes store"

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT NOT NULL UNIQUE)")


def test_the_store_base_creates_writes_in_one_transaction_and_counts(tmp_path: Path) -> None:
    store = Notes(tmp_path / "deep" / "notes.sqlite3")
    store._write("INSERT INTO notes (text) VALUES (?)", ("a",))
    with pytest.raises(sqlite3.IntegrityError):
        store._write("INSERT INTO notes (text) VALUES (?)", ("a",))
    store._write("INSERT INTO notes (text) VALUES (?)", ("b",))  # the failed write was rolled back
    assert Notes(store.path)._count("notes") == 2


@pytest.mark.parametrize(("store", "what"), [(Notes, "notes store"), (SqliteCache, "judge cache"),
                                             (AdmissionStore, "admission store")])  # fmt: skip
def test_a_file_that_is_not_sqlite_names_the_file_and_the_store(
    tmp_path: Path, store: type[SqliteStore], what: str
) -> None:
    path = tmp_path / "not.sqlite3"
    path.write_bytes(b"this is not a database, it is text" * 100)
    with pytest.raises(InputError, match=f"not a usable {what} \\(SQLite\\)") as err:
        store(path)
    assert err.value.file == str(path)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(InputError, match=f"cannot create the {what}"):
        store(blocked / "store.sqlite3")


def test_one_atomic_write_and_one_sqlite_store_base() -> None:
    assert issubclass(SqliteCache, SqliteStore) and issubclass(AdmissionStore, SqliteStore)
    # grading/draft/files.py moves a staged directory of files into place, a different operation.
    assert (
        sources_matching(r"mkstemp|os\.replace\(", allowed={"grading/atomic.py", "grading/draft/files.py"})
        == []
    )
    assert sources_matching(r"sqlite3\.connect\(", allowed={"grading/sqlite_store.py"}) == []


def test_write_new_makes_a_file_once_and_never_replaces_it(tmp_path: Path) -> None:
    target = tmp_path / "secret_key"
    assert write_new(target, b"first\n", mode=0o600) is True
    assert target.read_bytes() == b"first\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    # A second maker (another process starting at the same moment) keeps the first file, whole.
    assert write_new(target, b"second\n", mode=0o600) is False
    assert target.read_bytes() == b"first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret_key"]  # no staged file left behind
    with pytest.raises(InputError, match="cannot write"):
        write_new(tmp_path / "missing" / "key", b"x")
