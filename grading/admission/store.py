"""What ``rubric check`` keeps: its report (:class:`AdmissionReport`, one :class:`AdmissionRow` per judged
workspace) and the SQLite store of reports by content hash that ``rubric grade`` asks whether a rubric is
admitted (:func:`is_admitted`). Running admission is :mod:`grading.admission.check`.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from grading.admission.injection import InjectionSummary, RowOutcome
from grading.judge.models import JudgeResult, Usage
from grading.paths import user_cache_file
from grading.sqlite_store import SqliteStore

RowKind = Literal["empty", "oracle", "lazy", "lazy_comment", "alt", "injection", "benign"]
STORE_ENV = "RUBRIC_ADMISSION_STORE"


class AdmissionRow(BaseModel):
    """One workspace judged for admission, with what it must be and what it was."""

    kind: RowKind
    name: str  # the diff's path relative to the task directory, or "(empty diff)"
    expected: str
    actual: str
    holds: bool
    mergeable: bool | None
    in_scope: bool
    integrity_ok: bool
    blockers_failed: list[str] = []
    blockers_not_measured: list[str] = []
    must_fail: list[str] = []  # blockers this row must fail (lazy rows)
    judge_failure: str | None = None
    judge: JudgeResult | None = None
    payload_kind: str | None = (
        None  # injection and benign rows: the payload kind (grading.admission.injection)
    )
    outcome: RowOutcome | None = None  # injection and benign rows: what the payload did
    # The diff judged, on the rows given to ``on_row`` (for callers that store it, as the app does); never
    # in a report's rows nor written into a stored report.
    diff_text: str | None = Field(default=None, exclude=True)


class AdmissionReport(BaseModel):
    """``rubric check``'s result: every row, admitted only when every row holds."""

    task: str
    judge: str
    scripted: bool
    key: str  # the content hash the report is stored under (:func:`admission_key`)
    rubric_sha256: str = ""  # sha256 of the rubric.json bytes; empty in reports stored before it was kept
    admitted: bool
    rows: list[AdmissionRow]
    from_store: bool = False  # True when this report was read back, no judge call made
    calls: int = 0
    usage: Usage = Usage()
    tree_calls: int = 0  # the tree judge (needs_tree blockers), counted apart
    tree_usage: Usage = Usage()
    injection: InjectionSummary | None = None  # when the injection suite ran

    @property
    def attack_successes(self) -> int | None:
        return None if self.injection is None else self.injection.attack_successes


# --- the store of admission reports ------------------------------------------------------------------------


def default_store_path(env: dict[str, str] | None = None) -> Path:
    """``$RUBRIC_ADMISSION_STORE``, else under ``$XDG_CACHE_HOME`` (absolute only), else ``~/.cache``."""
    return user_cache_file(STORE_ENV, "admission.sqlite3", env)


_STORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS admissions (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    judge TEXT NOT NULL,
    admitted INTEGER NOT NULL,
    report TEXT NOT NULL,
    created TEXT NOT NULL,
    rubric_sha256 TEXT,
    attack_successes INTEGER
)
"""
# Columns added since the first layout, each with the statement that adds it to an older store:
# rubric_sha256 (NULL: never matches, so provisional), attack_successes (NULL: the suite did not run).
_STORE_MIGRATIONS = {
    "rubric_sha256": "ALTER TABLE admissions ADD COLUMN rubric_sha256 TEXT",
    "attack_successes": "ALTER TABLE admissions ADD COLUMN attack_successes INTEGER",
}
_STORE_INDEX = "CREATE INDEX IF NOT EXISTS admissions_rubric_judge ON admissions (rubric_sha256, judge)"


class AdmissionStore(SqliteStore):
    """Admission reports by content hash, in one SQLite file (safe for concurrent processes)."""

    what = "admission store"

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute(_STORE_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(admissions)")}
        for column, statement in _STORE_MIGRATIONS.items():
            if column not in columns:
                conn.execute(statement)
        conn.execute(_STORE_INDEX)

    def get(self, key: str) -> AdmissionReport | None:
        with self._connect() as conn:
            row = conn.execute("SELECT report FROM admissions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return AdmissionReport.model_validate_json(row[0])
        except ValidationError:
            return None  # an older layout: treated as absent and replaced by the next report

    def put(self, report: AdmissionReport) -> None:
        created = datetime.now(UTC).isoformat(timespec="seconds")
        self._write(
            "INSERT OR REPLACE INTO admissions (key, task, judge, admitted, report, created, "
            "rubric_sha256, attack_successes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                report.key,
                report.task,
                report.judge,
                int(report.admitted),
                report.model_dump_json(),
                created,
                report.rubric_sha256 or None,
                report.attack_successes,
            ),
        )

    def admits(self, rubric_sha256: str, judge: str) -> bool:
        """Whether a passing ``rubric check`` of this rubric content (sha256 of its bytes) with this judge
        spec is stored, and no injection suite of the same content and judge found an attack success (a
        payload that talked this judge out of a blocker undoes an admission without the suite). Until then,
        results graded with the rubric are provisional (§6)."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT 1 FROM admissions WHERE rubric_sha256 = ? AND judge = ? AND admitted = 1 "
                "AND NOT EXISTS (SELECT 1 FROM admissions WHERE rubric_sha256 = ? AND judge = ? "
                "AND attack_successes > 0) LIMIT 1",
                (rubric_sha256, judge, rubric_sha256, judge),
            ).fetchone()
        return row is not None

    def count(self) -> int:
        return self._count("admissions")


def is_admitted(rubric_sha256: str, judge: str, store: AdmissionStore | Path | None = None) -> bool:
    """Whether ``rubric check`` admitted this rubric content (:func:`grading.schema.rubric_sha256` of the
    rubric.json bytes) with this judge spec (``anthropic:<model-id>``...). ``store`` is a store or its path;
    by default the command line's store (``$RUBRIC_ADMISSION_STORE``, else under ``$XDG_CACHE_HOME``)."""
    if not isinstance(store, AdmissionStore):
        path = store if store is not None else default_store_path()
        if not path.exists():
            return False  # no check was ever stored there; asking creates nothing
        store = AdmissionStore(path)
    return store.admits(rubric_sha256, judge)
