"""The verdict cache (§4 "Caching") and the regrade sample (§9 same-judge repeat agreement).

Key: sha256 of the fully rendered request body (the backend's exact body, with the fence nonce replaced by
a placeholder), plus the full model id and the decoding parameters. Anything the judge sees or how it
decodes changes the key. Only complete, validated results are stored; a judge failure never is.

For the command line the cache is one SQLite file, by default
``$XDG_CACHE_HOME/mergeability-grading/judge-cache.sqlite3`` (``~/.cache/...`` without XDG_CACHE_HOME),
overridden by ``$RUBRIC_JUDGE_CACHE`` or ``--cache PATH``. It is safe for several processes at once:
WAL journal, a busy timeout, and ``INSERT OR IGNORE`` so the first complete result for a key stays.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ValidationError

from grading.judge.backend import Backend, JudgeRequest
from grading.judge.models import ItemVerdict, JudgeResult, TreeItemRecord, Usage
from grading.judge.prompt import NONCE_PLACEHOLDER, with_nonce
from grading.paths import user_cache_file
from grading.sqlite_store import SqliteStore
from grading.words import counted

CACHE_ENV = "RUBRIC_JUDGE_CACHE"
# Bumped when the key's recipe changes, so old entries stop matching instead of matching wrongly.
KEY_VERSION = 1


class CachedVerdicts(BaseModel):
    """A complete judge result as stored: what a hit gives back instead of a call."""

    judge: str
    model_id: str | None
    verdicts: list[ItemVerdict]
    consistency_flags: int = 0
    rejudged: int = 0
    usage: Usage = Usage()  # what the original calls used; a hit itself costs nothing
    created: str = ""
    tree: list[TreeItemRecord] = []  # a tree-judged item: its budget and tool transcript, for audit


class RepeatAgreement(BaseModel):
    """Same-judge repeat agreement over the regrades recorded in a cache (§9)."""

    pairs: int = 0  # regrades that had a stored verdict set for the same key
    items: int = 0  # item verdicts compared
    agreeing: int = 0

    @property
    def rate(self) -> float | None:
        return self.agreeing / self.items if self.items else None


def repeat_agreement(results: Iterable[JudgeResult]) -> RepeatAgreement:
    """Same-judge repeat agreement over the results of one command: each result that bypassed the cache
    (a regrade) and found verdicts already stored for its key, compared item by item."""
    out = RepeatAgreement()
    for result in results:
        if result.previous_verdicts is None or result.failure is not None:
            continue
        compared = [(result.previous_verdicts[v.item_id], v.verdict) for v in result.verdicts
                    if v.item_id in result.previous_verdicts]  # fmt: skip
        out.pairs += 1
        out.items += len(compared)
        out.agreeing += sum(1 for a, b in compared if a == b)
    return out


def describe_repeat_agreement(results: list[JudgeResult]) -> str | None:
    """The line a command prints after regrading (``--regrade-sample`` or ``--no-cache``), else None."""
    regraded = [r for r in results if r.cache_bypass is not None]
    if not regraded:
        return None
    agreement = repeat_agreement(regraded)
    if agreement.rate is None:
        return (
            f"repeat agreement: not measured ({counted(len(regraded), 'diff')} judged again, "
            "none with verdicts already in the cache to compare)"
        )
    return (
        f"repeat agreement: {agreement.agreeing}/{agreement.items} item verdicts the same "
        f"({agreement.rate:.1%}) over {counted(agreement.pairs, 'diff')} judged again"
    )


class VerdictCache(Protocol):
    def get(self, key: str) -> CachedVerdicts | None: ...

    def put(self, key: str, entry: CachedVerdicts) -> None: ...

    def record_regrade(self, key: str, entry: CachedVerdicts) -> None: ...


def cache_key(backend: Backend, request: JudgeRequest) -> str:
    """sha256 of the rendered request body with the nonce as a placeholder, the model id and decoding."""
    body = backend.render(with_nonce(request, NONCE_PLACEHOLDER))
    payload = {"v": KEY_VERSION, "model": backend.model, "decoding": backend.decoding, "body": body}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def in_regrade_sample(key: str, rate: float, seed: int = 0) -> bool:
    """Seeded, per-key choice: the same key and seed are always in (or out of) the sample."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def default_cache_path(env: dict[str, str] | None = None) -> Path:
    """``$RUBRIC_JUDGE_CACHE``, else under ``$XDG_CACHE_HOME``, else under ``~/.cache``."""
    return user_cache_file(CACHE_ENV, "judge-cache.sqlite3", env)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class MemoryCache:
    """An in-process cache (tests, the web app's own storage wraps the same protocol)."""

    def __init__(self) -> None:
        self.entries: dict[str, CachedVerdicts] = {}
        self.regrades: list[tuple[str, CachedVerdicts]] = []

    def get(self, key: str) -> CachedVerdicts | None:
        return self.entries.get(key)

    def put(self, key: str, entry: CachedVerdicts) -> None:
        self.entries.setdefault(key, entry)

    def record_regrade(self, key: str, entry: CachedVerdicts) -> None:
        self.regrades.append((key, entry))


_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    model_id TEXT,
    entry TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS regrades (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    entry TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS regrades_key ON regrades (key);
"""


class SqliteCache(SqliteStore):
    """The command line's cache: one SQLite file, shared safely by concurrent processes."""

    what = "judge cache"

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)

    def _configure(self, conn: sqlite3.Connection) -> None:
        # By default the last connection to close checkpoints the WAL and deletes it: 10-20 ms of fsyncs
        # for every verdict written. The WAL is checkpointed as it grows instead. In WAL mode NORMAL syncs
        # at checkpoints, not at every commit: a verdict written just before a power loss may be lost (and
        # judged again), never corrupted.
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
        conn.execute("PRAGMA synchronous=NORMAL")

    def get(self, key: str) -> CachedVerdicts | None:
        with self._connect() as conn:
            row = conn.execute("SELECT entry FROM verdicts WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return CachedVerdicts.model_validate_json(row[0])
        except ValidationError:
            # An entry of an older layout: a miss; dropping it lets the next complete result take its place.
            self._write("DELETE FROM verdicts WHERE key = ?", (key,))
            return None

    def put(self, key: str, entry: CachedVerdicts) -> None:
        entry = entry.model_copy(update={"created": entry.created or _now()})
        # The first complete result for a key stays: a concurrent writer of the same key is ignored.
        self._write(
            "INSERT OR IGNORE INTO verdicts (key, judge, model_id, entry, created) VALUES (?, ?, ?, ?, ?)",
            (key, entry.judge, entry.model_id, entry.model_dump_json(), entry.created),
        )

    def record_regrade(self, key: str, entry: CachedVerdicts) -> None:
        entry = entry.model_copy(update={"created": entry.created or _now()})
        self._write(
            "INSERT INTO regrades (key, entry, created) VALUES (?, ?, ?)",
            (key, entry.model_dump_json(), entry.created),
        )

    def count(self) -> int:
        return self._count("verdicts")

    def repeat_agreement(self) -> RepeatAgreement:
        """Compare every recorded regrade with the stored verdicts for its key, item by item."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT r.entry, v.entry FROM regrades r JOIN verdicts v ON v.key = r.key"
            ).fetchall()
        out = RepeatAgreement()
        for regrade_json, stored_json in rows:
            try:
                regrade = CachedVerdicts.model_validate_json(regrade_json)
                stored = CachedVerdicts.model_validate_json(stored_json)
            except ValidationError:
                continue
            first = {v.item_id: v.verdict for v in stored.verdicts}
            compared = [(first[v.item_id], v.verdict) for v in regrade.verdicts if v.item_id in first]
            out.pairs += 1
            out.items += len(compared)
            out.agreeing += sum(1 for a, b in compared if a == b)
        return out
