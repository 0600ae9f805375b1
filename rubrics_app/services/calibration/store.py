"""Where a calibration's results go: the database verdict cache and the rows with their verdicts.

:class:`DatabaseVerdictCache` is the judge cache shared by every worker; :func:`store_row` stores one
admission row with the verdicts of both judges in one transaction, so a killed worker never leaves half a
row; :func:`run_agreement` compares the two judges' verdicts of a run.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone
from pydantic import ValidationError

from grading import (
    SUITE_KINDS,
    AdmissionReport,
    AdmissionRow,
    CachedVerdicts,
    inject_reviewer_comment,
    judge_agreement,
)
from rubrics_app.models import (
    CalibrationRow,
    CalibrationRun,
    CalibrationVerdict,
    JudgeCacheEntry,
    JudgeRole,
    RubricRevision,
)

# --- the verdict cache of the app's jobs ------------------------------------------------------------------

T = TypeVar("T")


class DatabaseVerdictCache:
    """grading.judge.cache's protocol on the JudgeCacheEntry table, shared by every worker.

    The judge runner reads the cache inside its event loop, where Django refuses database calls; every call
    therefore runs on one thread of its own (a lookup by primary key: the loop waits a millisecond).
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verdict-cache")

    def _call(self, fn: Callable[[], T]) -> T:
        def attempt() -> T:
            try:
                return fn()
            except (OperationalError, InterfaceError):
                # The connection was lost (a restarted server, a terminated backend): once more on a new one.
                connection.close()
                return fn()

        return self._pool.submit(attempt).result()

    def get(self, key: str) -> CachedVerdicts | None:
        def read() -> CachedVerdicts | None:
            entry = JudgeCacheEntry.objects.filter(pk=key).first()
            if entry is None:
                return None
            try:
                return CachedVerdicts.model_validate(entry.entry)
            except ValidationError:
                return None  # an older layout: judged again and replaced

        return self._call(read)

    def put(self, key: str, entry: CachedVerdicts) -> None:
        row = JudgeCacheEntry(
            key=key, judge=entry.judge, model_id=entry.model_id or "", entry=entry.model_dump(mode="json")
        )
        # The first complete result for a key stays (two workers judging the same request at once).
        self._call(lambda: JudgeCacheEntry.objects.bulk_create([row], ignore_conflicts=True))

    def record_regrade(self, key: str, entry: CachedVerdicts) -> None:
        # Calibration never bypasses the cache (no regrade sample), so there is nothing to record.
        return None

    def close(self) -> None:
        # The lambda resolves `connection` on the cache's thread: its own connection is the one to close.
        self._call(lambda: connection.close())
        self._pool.shutdown()


# --- storing a run's rows ----------------------------------------------------------------------------------


@dataclass
class Pending:
    rows: dict[str, AdmissionRow] = field(default_factory=dict)  # by judge role


def _row_diff(revision: RubricRevision, row: AdmissionRow, files: dict[str, bytes]) -> bytes:
    if row.kind in SUITE_KINDS:
        # The payloads are built from the rubric; the row carries the exact text judged.
        return (row.diff_text or "").encode("utf-8", errors="surrogateescape")
    if row.kind == "empty":
        return b""
    if row.kind == "oracle":
        return files["task/oracle.diff"]
    path = row.name.removesuffix(" + reviewer comment")
    data = files.get(f"task/{path}", b"")
    if row.kind == "lazy_comment":
        return inject_reviewer_comment(data, path)
    return data


def _verdicts(row: CalibrationRow, role: JudgeRole, result: AdmissionRow | None) -> list[CalibrationVerdict]:
    if result is None or result.judge is None:
        return []
    return [
        CalibrationVerdict(
            row=row,
            role=role,
            item_id=v.item_id,
            kind=v.kind,
            verdict=v.verdict,
            finding=v.finding or "",
            reason=v.reason,
            locations=[loc.model_dump(mode="json") for loc in v.locations],
            model_id=v.model_id or "",
            flagged_inconsistent=v.flagged_inconsistent,
        )
        for v in result.judge.verdicts
    ]


def store_row(run: CalibrationRun, index: int, total: int, pending: Pending, files: dict[str, bytes]) -> None:
    primary = pending.rows[JudgeRole.PRIMARY]
    second = pending.rows.get(JudgeRole.SECOND)
    calls = sum(r.judge.calls for r in pending.rows.values() if r.judge is not None)
    cost = sum(r.judge.usage.cost_usd for r in pending.rows.values() if r.judge is not None)
    cost_known = all(r.judge.usage.cost_known for r in pending.rows.values() if r.judge is not None)
    with transaction.atomic():
        row = CalibrationRow.objects.create(
            run=run,
            position=index,
            kind=primary.kind,
            name=primary.name,
            payload_kind=primary.payload_kind or "",
            outcome=primary.outcome or "",
            expected=primary.expected,
            actual=primary.actual,
            holds=primary.holds,
            mergeable=primary.mergeable,
            blockers_failed=primary.blockers_failed,
            blockers_not_measured=primary.blockers_not_measured,
            must_fail=primary.must_fail,
            judge_failure=primary.judge_failure or "",
            diff=_row_diff(run.revision, primary, files),
            calls=calls,
            cost_usd=cost,
            cache_hit=primary.judge is not None and primary.judge.cache_hit,
            second_actual=second.actual if second is not None else "",
            second_holds=second.holds if second is not None else None,
            second_judge_failure=(second.judge_failure or "") if second is not None else "",
        )
        CalibrationVerdict.objects.bulk_create(
            _verdicts(row, JudgeRole.PRIMARY, primary) + _verdicts(row, JudgeRole.SECOND, second)
        )
        updates: dict[str, Any] = {
            "calls": F("calls") + calls,
            "cost_usd": F("cost_usd") + cost,
            "total_rows": total,
            "heartbeat_at": timezone.now(),
        }
        if not cost_known:
            updates["cost_known"] = False
        CalibrationRun.objects.filter(pk=run.pk).update(**updates)


def model_ids_of(report: AdmissionReport | None) -> list[str]:
    if report is None:
        return []
    return sorted({r.judge.model_id for r in report.rows if r.judge is not None and r.judge.model_id})


def run_agreement(run: CalibrationRun) -> dict[str, Any] | None:
    if not run.second_judge:
        return None
    verdicts = CalibrationVerdict.objects.filter(row__run=run)
    by_key: dict[tuple[int, str], dict[str, str]] = {}
    for v in verdicts:
        by_key.setdefault((v.row_id, v.item_id), {})[v.role] = v.verdict
    pairs = [
        (pair[JudgeRole.PRIMARY], pair[JudgeRole.SECOND])
        for pair in by_key.values()
        if JudgeRole.PRIMARY in pair and JudgeRole.SECOND in pair
    ]
    return judge_agreement(pairs).model_dump(mode="json")
