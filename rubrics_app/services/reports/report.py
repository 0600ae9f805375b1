"""The report page's data: the report ``grading.report.report_from_sums`` computes from the repository's
runs as the database sums them (``services.reports.sums``), cached; and what the page shows beside it (the
filters and their choices, the training cutoffs, the blockers' criteria, the queue's label target).

Caching: the report is cached under a key made of everything it depends on: the runs' count and newest id,
the report rows' count and newest id (a row is only ever written whole, under a new id), the human
verdicts, the tasks' base dates and prompts, the revisions' statuses, the primary judge (which grade is
current depends on it and on the admitted revisions), the training cutoffs and the filters.
Any change gives a new key, so a cached report is never stale; the key costs a few small queries. The key
also holds a digest of the code that computes the report (``grading`` and these services), so a deploy
that changes a computation or the report's shape never serves a report of the code before.

Kept ready: a repository's whole report (no filters) is also stored in the database (``ReportSnapshot``),
where every process and machine finds it. A job that changes the runs (an import, a sweep) sends
:func:`keep_report_ready` once it is committed, and a worker computes the report for the new key and
stores it: the page's first view then reads it. Until it is stored, the page shows the stored report of
the key before, saying it is being updated (:func:`page_report`), so a label never makes a reader wait for
the report to be computed; the downloads, and the page when nothing is stored, compute the report of the
current key (never one of an older key without saying so). ``manage.py prepare_report`` does the same on
demand, after a deploy or a migration.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
import zlib
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache as once
from pathlib import Path
from typing import Any, Literal

from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.template.defaultfilters import pluralize
from pydantic import BaseModel, ValidationError

import grading
from grading import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_SEED,
    InputError,
    LabelTarget,
    Report,
    parse_date,
    report_from_sums,
    report_label_target,
)
from rubrics_app.celery import app
from rubrics_app.models import (
    AgentRun,
    ItemKind,
    ReportRow,
    ReportSnapshot,
    Repository,
    RubricItem,
    Task,
)
from rubrics_app.services.reports.sums import (
    Decoded,
    Tasks,
    draws_by_grade,
    labelled_runs,
    labels_by_grade,
    report_state,
    report_sums,
)

FILTERS = ("task", "arm", "model", "prompt_style")
PROMPT_STYLES = ("spec", "issue")
CACHE_SECONDS = 24 * 3600  # the key changes with the data; this only bounds how long an unused one stays
# How long the page shows the stored report of an earlier key while a worker computes the new one; past it
# (no worker took the job) the page computes the report itself.
UPDATING_SECONDS = 120
_CACHE_VERSION = "report-v6"  # the cached value's shape (the code digest below covers the report's own)
# The code a report depends on: every module of the grading package, this package (the report, the
# database's sums) and services/report_rows.py (the rows they read).
_REPORT_CODE = (
    Path(grading.__file__).resolve().parent,
    Path(__file__).resolve().parent,
    Path(__file__).resolve().parents[1] / "report_rows.py",
)

log = logging.getLogger(__name__)


class ReportResult(BaseModel):
    """A report and what the page shows beside it; stored (``ReportSnapshot``) as its JSON."""

    report: Report
    runs: int  # runs in the report
    ungraded: int  # runs under the filters with no grade yet: not in the report
    # run id -> grade pk, of the runs in a disagreement (the page links them to the queue)
    grade_of_run: dict[str, int] = {}


def clean_filters(raw: Any) -> dict[str, str]:
    """The filters of a request's query string: known names, non-empty, at most 200 characters."""
    filters = {name: str(raw.get(name, ""))[:200] for name in FILTERS if raw.get(name)}
    if filters.get("prompt_style") not in (*PROMPT_STYLES, None):
        del filters["prompt_style"]
    return filters


def cutoff_dates(repository: Repository, notes: list[str]) -> dict[str, date] | None:
    """The repository's training cutoffs as dates; None when there are none, so the report has no
    contamination split (as ``rubric report`` without ``--cutoffs``). The form saves only dates; a value
    written some other way (the admin) that is not one is left out, with a note."""
    if not repository.training_cutoffs:
        return None
    dates: dict[str, date] = {}
    for model, value in repository.training_cutoffs.items():
        try:
            dates[model] = parse_date(value, "training cutoffs", model)
        except InputError as exc:
            notes.append(f"{exc}: left out of the contamination split")
    return dates


# --- the cache key --------------------------------------------------------------------------------------


def _digest(rows: Any) -> str:
    return hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()


@once
def code_digest() -> str:
    """sha256 of the source of the code that computes a report (read once per process)."""
    digest = hashlib.sha256()
    for root in _REPORT_CODE:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(f"{path.relative_to(root.parent)}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _cache_key(repository: Repository, state: dict[str, Any], filters: dict[str, str]) -> str:
    parts = [state, filters, DEFAULT_BOOTSTRAP, DEFAULT_SEED, code_digest()]
    return f"{_CACHE_VERSION}:{repository.pk}:{_digest(parts)}"


# --- rows -> GradedRun ----------------------------------------------------------------------------------


def _runs_query(repository: Repository, filters: dict[str, str]) -> QuerySet[AgentRun]:
    query = AgentRun.objects.filter(task__repository=repository)
    if filters.get("task"):
        query = query.filter(task__task_id=filters["task"])
    if "arm" in filters:
        query = query.filter(arm=filters["arm"])
    if "model" in filters:
        query = query.filter(model=filters["model"])
    return query


def _ungraded(repository: Repository, filters: dict[str, str]) -> int:
    query = _runs_query(repository, filters).filter(grades=None)
    if filters.get("prompt_style"):
        # Counted by the run's own style only: the task's is applied in Python for graded runs.
        query = query.filter(prompt_style__in=[filters["prompt_style"], ""])
    return query.count()


def _current(repository: Repository, filters: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The report's cache key and the state it is made of (every grade has its report row: the one grade
    writer, ``services.runs.store.writing_grades``, writes it in the grade's transaction)."""
    state = report_state(repository)
    return _cache_key(repository, state, filters), state


def repository_report(repository: Repository, filters: dict[str, str]) -> ReportResult:
    """The report of the repository's graded runs under the filters: from this process's cache when nothing
    changed, else (no filters) the one a worker kept ready for the same key, else computed here."""
    key, state = _current(repository, filters)
    ready = _ready(key, filters)
    if ready is not None:
        return ready
    result = _computed(repository, filters, state)
    _remember(key, result)
    return result


@dataclass(frozen=True)
class PageReport:
    """What the report page shows: the report, and when it is the stored report of an earlier key (the
    runs, labels or cutoffs changed since and a worker is computing the new one), when that one was made."""

    result: ReportResult
    updating_since: datetime | None = None


def page_report(repository: Repository, filters: dict[str, str]) -> PageReport:
    """The report for the page, which never makes a reader wait for the report to be computed when a stored
    one can answer: as :func:`repository_report`, except that the whole report (no filters), when the
    worker has not stored the one of the current key yet, is the repository's stored report of an earlier
    key, marked as being updated, while the job that stores the new one is on its way (sent by the change,
    or now by the page: once per key and process). Computed here as before when there is no stored report,
    when it does not validate (another code's shape), when the job cannot be sent, or when it was sent
    over :data:`UPDATING_SECONDS` ago and has still not stored it (no worker is running)."""
    key, state = _current(repository, filters)
    held = _recalled(key)
    if held is not None:
        return PageReport(held)
    if not filters:
        # One query for the repository's stored report, whichever key it is of (it keeps one).
        row = ReportSnapshot.objects.filter(repository=repository).order_by("-pk")
        found = row.values_list("key", "created_at", "report_json").first()
        stored = _read(found[0], found[2]) if found is not None else None
        if found is not None and stored is not None:
            if found[0] == key:
                _remember(key, stored)
                return PageReport(stored)
            if _job_on_its_way(repository, key):
                return PageReport(stored, found[1])
    result = _computed(repository, filters, state)
    _remember(key, result)
    return PageReport(result)


def _ready(key: str, filters: dict[str, str]) -> ReportResult | None:
    """The report of ``key`` from this process's memory, else (no filters) the stored one, else None."""
    held = _recalled(key)
    if held is not None or filters:
        return held
    stored = _stored(key)
    if stored is not None:
        _remember(key, stored)
    return stored


# This process's reports, by key, the newest few. The cache holds a token per key, not the report: Django's
# local-memory cache pickles what it holds, and pickling a report of 100,000 runs (25,000 disagreements)
# took longer than reading it from the stored row, on every first view. A report held here is shared by the
# requests of this process, and nothing changes a report once it is made. The token keeps the cache's
# meaning: a cleared or expired cache entry is a report this process no longer has.
_HELD: OrderedDict[str, tuple[str, ReportResult]] = OrderedDict()
_HELD_COUNT = 8
_HELD_LOCK = threading.Lock()


def _remember(key: str, result: ReportResult) -> None:
    token = uuid.uuid4().hex
    with _HELD_LOCK:
        _HELD[key] = (token, result)
        _HELD.move_to_end(key)
        while len(_HELD) > _HELD_COUNT:
            _HELD.popitem(last=False)
    cache.set(key, token, CACHE_SECONDS)


def _recalled(key: str) -> ReportResult | None:
    token = cache.get(key)
    with _HELD_LOCK:
        held = _HELD.get(key)
    return held[1] if held is not None and isinstance(token, str) and held[0] == token else None


def _job_on_its_way(repository: Repository, key: str) -> bool:
    """Whether a worker is (as far as this process knows) computing the report of ``key``: sends
    :func:`keep_report_ready` the first time this process asks for that key, and says no once it was sent
    :data:`UPDATING_SECONDS` ago (no worker took it) or could not be sent (the broker is down)."""
    sent_key = f"{key}:sent"
    now = time.time()
    if cache.add(sent_key, now, UPDATING_SECONDS * 2):
        try:
            keep_report_ready.delay(repository.pk)
        except Exception:
            log.exception("could not send keep_report_ready for repository %s", repository.pk)
            cache.set(sent_key, now - UPDATING_SECONDS, UPDATING_SECONDS * 2)  # the page computes it
            return False
        return True
    sent = cache.get(sent_key)
    return isinstance(sent, float) and now - sent < UPDATING_SECONDS


def _computed(repository: Repository, filters: dict[str, str], state: dict[str, Any]) -> ReportResult:
    sums, grade_of_run, notes = report_sums(repository, filters, state)
    cutoffs = cutoff_dates(repository, notes)
    report = report_from_sums(sums, cutoffs=cutoffs, bootstrap=DEFAULT_BOOTSTRAP, seed=DEFAULT_SEED)
    ungraded = _ungraded(repository, filters)
    if ungraded:
        notes.append(
            f"{ungraded} run{pluralize(ungraded)} {'has' if ungraded == 1 else 'have'} no grade yet "
            "(no metrics.json imported): not in this report"
        )
    # The app's own warnings travel with the report, so the downloads say them too (the command line
    # refuses such input instead: there is nothing of it to compare).
    report.warnings[:0] = notes
    runs = sum(p.runs for p in sums.parts)
    return ReportResult(report=report, runs=runs, ungraded=ungraded, grade_of_run=grade_of_run)


# --- the report kept ready ------------------------------------------------------------------------------


def _stored(key: str) -> ReportResult | None:
    data = ReportSnapshot.objects.filter(key=key).values_list("report_json", flat=True).first()
    return None if data is None else _read(key, data)


def _read(key: str, data: bytes | memoryview) -> ReportResult | None:
    """A stored report's row read back, or None (logged) when it does not decompress or validate."""
    try:
        # Data read through its model, whoever wrote the row: anything that does not validate is absent.
        return ReportResult.model_validate_json(zlib.decompress(data))
    except (zlib.error, ValidationError):  # the page computes the report; the next job replaces the row
        log.exception("report snapshot %s could not be read", key)
        return None


def stored_form(result: ReportResult) -> bytes:
    """The bytes ``ReportSnapshot.report_json`` holds: the result's JSON, compressed (a tenth of its size)."""
    return zlib.compress(result.model_dump_json().encode(), 1)


Prepared = Literal["stored", "stored already", "changed meanwhile"]


def prepare_report(repository: Repository) -> Prepared:
    """Compute the repository's report (no filters) for its current key and store it for every process,
    unless it is stored already. A repository keeps one stored report: storing it and deleting the others
    is one transaction, holding the repository's row lock, so no reader ever sees two, and two workers
    storing at once take turns. When the runs changed while it was computed (its key is no longer the
    current one), it is not stored ("changed meanwhile"): the job that changed them sends its own."""
    key, state = _current(repository, {})
    if ReportSnapshot.objects.filter(key=key).exists():
        return "stored already"
    result = _computed(repository, {}, state)
    data = stored_form(result)
    with transaction.atomic():
        list(Repository.objects.select_for_update().filter(pk=repository.pk).values_list("pk", flat=True))
        if _current(repository, {})[0] != key:
            return "changed meanwhile"
        if ReportSnapshot.objects.filter(key=key).exists():
            return "stored already"
        ReportSnapshot.objects.filter(repository=repository).delete()
        ReportSnapshot.objects.create(repository=repository, key=key, report_json=data)
    _remember(key, result)
    return "stored"


@app.task(name="rubrics_app.tasks.keep_report_ready", ignore_result=True)
def keep_report_ready(repository_pk: int) -> None:
    """Celery task: :func:`prepare_report` of the repository, if it still exists."""
    repository = Repository.objects.filter(pk=repository_pk).first()
    if repository is not None:
        prepare_report(repository)


def report_changed(repository_pk: int) -> None:
    """Send :func:`keep_report_ready` once the current transaction commits. A failure to send (the broker
    is down) is logged, never raised: the page then computes the report itself."""

    def send() -> None:
        try:
            keep_report_ready.delay(repository_pk)
        except Exception:
            log.exception("could not send keep_report_ready for repository %s", repository_pk)

    transaction.on_commit(send)


def label_target(repository: Repository) -> LabelTarget | None:
    """The review queue's target (grading.power): how many more labelled runs would bring the corrected
    mergeable rate of the repository's report to ±5 points. Computed without the report
    (:func:`cheap_label_target`, equal to the report's) and cached apart under the report's key: never
    read from a cached report, whose reading (a grade per run) costs more than computing the target."""
    state = report_state(repository)
    target_key = f"{_cache_key(repository, state, {})}:label-target"
    target = cache.get(target_key)
    if isinstance(target, LabelTarget):
        return target
    target = cheap_label_target(repository, state)
    cache.set(target_key, target, CACHE_SECONDS)
    return target


# A measured run (grading's GradedRun.measured, which the rates count) as a condition on its report row:
# mergeable decided and whether it passed the tests known. GradedRun takes both from the row unchanged.
MEASURED = Q(mergeable__isnull=False, test_pass__isnull=False)


def cheap_label_target(repository: Repository, state: dict[str, Any] | None = None) -> LabelTarget | None:
    """The report's label target (``repository_report(...).report.label_target``) without the report: the
    per-task sums of the measured runs in one aggregate query over the current grades' report rows (an
    index-only scan), and the few labelled runs, through grading's own function
    (``grading.report_label_target``)."""
    state = state or report_state(repository)
    tasks = Tasks.of(state)
    current = ReportRow.objects.filter(repository=repository, current=True).order_by()
    sums = (
        current.filter(MEASURED)
        .values("task_id")
        .annotate(
            # Counts of a column of the index (not of the pk), so the index alone answers (report_row_sums).
            measured=Count("task"),
            passed=Count("task", filter=Q(test_pass=True)),
            mergeable=Count("task", filter=Q(mergeable=True)),
        )
        .values_list("task_id", "measured", "passed", "mergeable")
    )
    per_task = [
        (n, passed, merged) for _, n, passed, merged in sorted(sums, key=lambda row: tasks.by_pk[row[0]][0])
    ]
    labelled = labelled_runs(current, labels_by_grade(state), tasks, Decoded(), draws_by_grade(state))
    return report_label_target(per_task, labelled)


def filter_choices(repository: Repository) -> dict[str, list[str]]:
    """The tasks, arms and models that have runs (two queries: the distinct (task, arm, model) of the runs,
    by task pk, which the runs' unique index answers without joining the tasks; then the tasks' ids)."""
    tasks = Task.objects.filter(repository=repository)
    rows = set(
        AgentRun.objects.filter(task__in=tasks.values("pk"))
        .values_list("task_id", "arm", "model")
        .order_by()
        .distinct()
    )
    names = dict(tasks.filter(pk__in={r[0] for r in rows}).values_list("pk", "task_id"))
    return {
        "task": sorted({names[r[0]] for r in rows}),
        "arm": sorted({r[1] for r in rows}),
        "model": sorted({r[2] for r in rows}),
        "prompt_style": list(PROMPT_STYLES),
    }


def blocker_criteria(repository: Repository, task_ids: list[str]) -> dict[str, dict[str, str]]:
    """Per task, each blocker id's criterion, for the failed-blocker histograms: the newest revision's
    text where revisions differ (one query over the tasks' blockers)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    rows = (
        RubricItem.objects.filter(
            revision__task__repository=repository, revision__task__task_id__in=task_ids, kind=ItemKind.BLOCKER
        )
        .order_by("revision__task_id", "revision__number")
        .values_list("revision__task__task_id", "item_id", "criterion")
    )
    for task_id, item_id, criterion in rows:
        out[task_id][item_id] = criterion
    return dict(out)
