"""Sweeps: grade every agent run of a repository (or of a task, an arm, a model) with the repository's judges,
in a Celery job (docs/sweeps.md).

Each run is graded exactly as ``rubric grade`` grades it, by grading's in-memory ``grade`` on the revision's
rubric.json and task.json, the repository's manifest, the task's oracle_grade.json and tests_base.txt, and the
run's files (git_dir_changes.txt included), built from the rows (no folder): scope, integrity (every part the
command line measures, from the same inputs), the gate, the primary judge on every run, the second judge on
every run or on a sample (fixed by the diff), the regrade sample bypassing the verdict cache. The target is
each task's admitted revision, or one chosen approved revision, and then every result is provisional.

Each run's grade is stored in a transaction of its own as soon as it is graded (RunGrade, JudgeGrade and
ItemVerdict rows, source = sweep, keyed by run, rubric content and primary judge), with the sweep's
progress and cost, so a sweep stopped at any point keeps every whole grade and no half of one. A run that
already has a grade under its key is skipped without a call; one whose sweep grade was a judge failure is
graded again and its grade replaced. A worker lost mid-sweep is handled by the job reaper: the job is
queued again and the next worker skips the runs already stored.

Judge calls go through ``grading.judge.limits``: per-provider concurrency and rate (settings
SWEEP_PROVIDER_LIMITS), and the repository's monthly spend cap, checked before every call against an
upper estimate of its cost; the sweep stops, with its reason, before the cap would be passed.

A batch sweep (the repository's choice, or ``sweep --batch``) sends the same calls through the provider's
batch API (``grading.ThreadBatchBackend``): up to SWEEP_BATCH_SIZE runs wait for their judge at once, their
calls go as one batch, and the job polls it (every SWEEP_BATCH_POLL_SECONDS) while its heartbeat beats as
for any job. Each run is stored as its answer arrives; a call the batch did not answer (expired, errored) is
that run's judge failure, graded again by the next sweep. Calls are priced, and reserved against the cap, at
the batch price.

Which runs a sweep grades and the files grading reads for each are built in sweep_inputs.py; the judges it
calls, behind the provider limits and the spend cap, in sweep_judges.py. This module starts, runs and stores.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F, Q
from django.template.defaultfilters import pluralize

from grading import (
    Backend,
    BudgetExceeded,
    InputError,
    JudgeSettings,
    LimitedBackend,
    RunMetrics,
    check_second_judge,
    grade,
    load_price_table,
    make_backend,
    provider_of,
    read_metrics,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    GradeSource,
    Job,
    JobKind,
    JudgeSetting,
    Repository,
    RevisionStatus,
    Role,
    RubricRevision,
    RunGrade,
    Sweep,
    SweepResult,
    Task,
)
from rubrics_app.services.calibration.inputs import spent_this_month, tree_checkout
from rubrics_app.services.calibration.store import DatabaseVerdictCache
from rubrics_app.services.jobs import JobFailed, job_task, run, send
from rubrics_app.services.reports.report import report_changed
from rubrics_app.services.runs.store import writing_grades
from rubrics_app.services.sweeps.export import write_export
from rubrics_app.services.sweeps.inputs import (
    Admission,
    Target,
    TaskBytes,
    graded_already,
    load_run,
    run_label,
    run_model,
    sweep_targets,
    task_bytes,
)
from rubrics_app.services.sweeps.judges import (
    batched,
    judge_backend,
    provider_limit,
    spend_budget,
    unpriced_specs,
)


class SweepError(JobFailed):
    """A sweep that could not start or had to stop; the message says why and what to do."""


# --- starting -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRequest:
    task: Task | None = None
    arm: str = ""
    model: str = ""
    revision: RubricRevision | None = None  # None: each task's admitted revision
    second_sample: float | None = None  # None: settings.SWEEP_SECOND_JUDGE_SAMPLE
    regrade_sample: float | None = None  # None: settings.SWEEP_REGRADE_SAMPLE
    batch: bool | None = None  # None: the repository's choice (JudgeSetting.sweep_batch)
    export: bool = False  # when the job ends, the runs in its scope as a zip (services.sweeps.export)


def _rate(value: float | None, default: float, name: str) -> float:
    rate = default if value is None else value
    if not 0.0 <= rate <= 1.0:  # also refuses NaN
        raise SweepError(f"{name}: must be between 0 and 1")
    return rate


@transaction.atomic
def new_sweep(repository: Repository, by: Actor, request: SweepRequest) -> Sweep:
    """A queued sweep and its Job. SweepError (or PermissionDenied) when it cannot run, saying why; nothing
    is stored then."""
    by.require(Role.MAINTAINER, repository)
    judges = repository.judge_setting()
    if judges is None:
        raise SweepError(f"repository {repository.name} has no judges set: set them first")
    revision = request.revision
    task = request.task
    if task is not None and task.repository_id != repository.pk:
        raise SweepError(f"task {task.task_id} is not a task of {repository.name}")
    if revision is not None:
        if revision.task.repository_id != repository.pk:
            raise SweepError(f"revision {revision.pk} is not a revision of {repository.name}")
        if revision.status not in (RevisionStatus.APPROVED, RevisionStatus.ADMITTED):
            raise SweepError(
                f"revision {revision.number} of {revision.task.task_id} is {revision.status}: a sweep grades "
                "against an approved or admitted revision"
            )
        if task is not None and task.pk != revision.task_id:
            raise SweepError(
                f"revision {revision.pk} is a revision of {revision.task.task_id}, not {task.task_id}"
            )
    if judges.second_judge:
        try:
            check_second_judge(judges.judge, judges.second_judge)
        except InputError as exc:
            raise SweepError(exc.message) from None
    if judges.sweep_batch if request.batch is None else request.batch:
        for spec in (s for s in (judges.judge, judges.second_judge) if s):
            try:
                make_backend(spec, batch=True, api_key="not-used-for-checking")
            except InputError as exc:
                raise SweepError(f"a batch sweep: {spec}: {exc.message}") from None
    if judges.monthly_cap_usd is not None:
        unpriced = unpriced_specs([judges.judge, judges.second_judge], load_price_table())
        if unpriced:
            raise SweepError(
                f"no price for {', '.join(unpriced)}, so the monthly spend cap cannot be kept: add the model "
                "to the price table (RUBRIC_JUDGE_PRICES) or clear the cap"
            )
        spent = spent_this_month(repository.pk)
        if Decimal(str(spent)) >= judges.monthly_cap_usd:
            raise SweepError(
                f"this month's judge spend (${spent:.2f}) reached the repository's cap "
                f"(${judges.monthly_cap_usd}); raise the cap or wait for next month"
            )
    sweep = Sweep(
        repository=repository,
        task=task if task is not None else (revision.task if revision is not None else None),
        arm=request.arm,
        model=request.model,
        revision=revision,
        judge=judges.judge,
        decoding=judges.decoding,
        second_judge=judges.second_judge,
        second_decoding=judges.second_decoding,
        second_sample=_rate(request.second_sample, settings.SWEEP_SECOND_JUDGE_SAMPLE, "second judge sample"),
        regrade_sample=_rate(request.regrade_sample, settings.SWEEP_REGRADE_SAMPLE, "regrade sample"),
        scripted=JudgeSetting.is_scripted(judges.judge) or JudgeSetting.is_scripted(judges.second_judge),
        batch=judges.sweep_batch if request.batch is None else request.batch,
        export=request.export,
        provisional=revision is not None and revision.status != RevisionStatus.ADMITTED,
        created_by=by.user if getattr(by.user, "is_authenticated", False) else None,
    )
    targets, no_revision = sweep_targets(sweep)
    if not targets:
        what = sweep.scope_label()
        if no_revision:
            raise SweepError(
                f"no run to grade ({what}): {no_revision} run{pluralize(no_revision)} "
                f"{'belongs' if no_revision == 1 else 'belong'} to tasks with no admitted revision; "
                "admit one, or choose an approved revision"
            )
        raise SweepError(f"no run to grade ({what}): import runs first")
    sweep.job = Job.objects.create(kind=JobKind.SWEEP, repository=repository, created_by=sweep.created_by)
    sweep.total_runs = len(targets)
    sweep.no_revision_runs = no_revision
    sweep.save()
    return sweep


@transaction.atomic
def start(repository: Repository, by: Actor, request: SweepRequest | None = None) -> Sweep:
    """Queue a sweep and send its job once committed."""
    sweep = new_sweep(repository, by, request or SweepRequest())
    send(sweep_runs, sweep.job_id)
    return sweep


def recent_sweeps(repository: Repository, *, task: Task | None = None, count: int = 5) -> list[Sweep]:
    """The latest sweeps of a repository (or those that graded one task's runs), for its page."""
    found = Sweep.objects.filter(repository=repository).select_related("job", "task")
    if task is not None:
        found = found.filter(Q(task=task) | Q(task__isnull=True))
    return list(found[:count])


# --- storing ------------------------------------------------------------------------------------------------


def _with_reconnect[T](fn: Callable[[], T]) -> T:
    """``fn`` once more on a fresh connection when the database failed under it (a restarted server, a
    terminated backend, a closed connection). Whatever ``fn`` wrote in its transaction was rolled back with
    it; a second failure is the caller's."""
    try:
        return fn()
    except DatabaseError:
        if connection.in_atomic_block:
            raise
        connection.close()
        return fn()


@dataclass
class _Stored:
    created: bool
    judge_failure: bool
    calls: int
    cost: float


def _store(sweep: Sweep, target: Target, metrics: RunMetrics, replace: bool) -> _Stored:
    raw = metrics.to_json_dict()
    encoded = json.dumps(raw, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    imported = read_metrics(encoded.encode(), strict=True)  # as the run import reads a metrics.json
    results = [r for r in (metrics.details.judge, metrics.details.second_judge) if r is not None]
    calls = sum(r.calls for r in results)
    cost = sum(r.usage.cost_usd for r in results)
    cost_known = all(r.usage.cost_known for r in results)

    def store() -> _Stored:
        # The one grade writer: the report row, queue pairs and current grade of what is written here are
        # refreshed in this transaction (a replaced judge failure may have been the run's newest grade).
        with writing_grades(runs=[target.run_pk]) as grades:
            run = AgentRun.objects.select_related("task").get(pk=target.run_pk)
            if replace:
                grades.delete(
                    RunGrade.objects.filter(
                        run=run,
                        rubric_sha256=metrics.rubric_sha256 or "",
                        source=GradeSource.SWEEP,
                        judge_failure=True,
                    )
                )
            try:
                with transaction.atomic():
                    grade, created = grades.store(
                        run,
                        imported,
                        raw,
                        hashlib.sha256(encoded.encode()).hexdigest(),
                        GradeSource.SWEEP,
                        revision=target.revision,
                        provisional=sweep.provisional,
                    )
            except IntegrityError:
                created, failed = False, False  # another sweep stored this run's grade first
            else:
                failed = grade.judge_failure
            updates: dict[str, Any] = {
                "done_runs": F("done_runs") + 1,
                "graded_runs": F("graded_runs") + int(created),
                "judge_failures": F("judge_failures") + int(created and failed),
                "calls": F("calls") + calls,
                "cost_usd": F("cost_usd") + cost,
            }
            if not cost_known:
                updates["cost_known"] = False
            Sweep.objects.filter(pk=sweep.pk).update(**updates)
            done, total = Sweep.objects.filter(pk=sweep.pk).values_list("done_runs", "total_runs").get()
            Job.objects.filter(pk=sweep.job_id).update(progress=min(99, 100 * done // max(total, 1)))
            return _Stored(created, created and failed, calls, cost)

    return _with_reconnect(store)


def _count_done(sweep: Sweep, count: int) -> None:
    if count:
        _with_reconnect(lambda: Sweep.objects.filter(pk=sweep.pk).update(done_runs=F("done_runs") + count))


# --- running one --------------------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    sweep: Sweep
    graded: int = 0
    already_graded: int = 0
    judge_failures: int = 0
    problems: list[str] = field(default_factory=list)  # runs that could not be graded (bad input)

    def result(self) -> SweepResult:
        sweep = self.sweep
        return SweepResult(
            sweep=sweep.pk,
            total=sweep.total_runs,
            graded=self.graded,
            already_graded=self.already_graded,
            judge_failures=self.judge_failures,
            no_revision=sweep.no_revision_runs,
            calls=sweep.calls,
            cost_usd=sweep.cost_usd,
            provisional=sweep.provisional,
            problems=self.problems,
        )


def run_sweep(
    sweep_pk: int,
    *,
    cache: Any = None,
    backends: tuple[Backend, Backend | None] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> SweepOutcome:
    """Grade every run of a sweep whose Job this worker claimed, storing each grade as it is done.

    ``cache`` defaults to the database verdict cache the workers share; ``backends`` to the sweep's judge
    specs (API keys from this process's environment); both are wrapped in the provider limits and the
    spend budget. ``on_stored(run_pk)`` is called after each grade is committed. Raises SweepError when the
    sweep has to stop (spend cap, lost database), with the grades stored so far kept.
    """
    sweep = Sweep.objects.select_related("repository", "revision__task__repository", "task").get(pk=sweep_pk)
    targets, no_revision = sweep_targets(sweep)
    done, retry = graded_already(sweep, targets)
    # A job taken over after a lost worker counts again from here: the runs stored before are "done" now.
    Sweep.objects.filter(pk=sweep.pk).update(
        total_runs=len(targets), no_revision_runs=no_revision, done_runs=len(done)
    )
    sweep.refresh_from_db()
    outcome = SweepOutcome(sweep, already_graded=len(done))
    todo = [t for t in targets if t.run_pk not in done]
    if not todo:
        return outcome
    judges = _sweep_judges(sweep, backends)
    own_cache = cache is None
    grading = _Grading(sweep, judges, DatabaseVerdictCache() if own_cache else cache, retry, on_stored)
    try:
        grading.grade_all(todo, outcome)
    finally:
        if own_cache:
            grading.cache.close()
    sweep.refresh_from_db()
    _raise_if_stopped(sweep, grading.stop, grading.database_error)
    return outcome


@dataclass
class _SweepJudges:
    """The sweep's judges behind the provider limits and the spend budget, and how many runs go at once."""

    raw_primary: Backend  # as given (the tree judge's checkout is chosen by these)
    raw_second: Backend | None
    primary: LimitedBackend
    second: LimitedBackend | None
    settings: JudgeSettings
    threads: int


def _sweep_judges(sweep: Sweep, backends: tuple[Backend, Backend | None] | None) -> _SweepJudges:
    """The sweep's judges (``backends``, or those of its judge specs), limited and priced; SweepError when a
    spec is not usable or the spend cap cannot be kept."""
    prices = load_price_table()
    budget = spend_budget(sweep.repository)
    try:
        raw_primary, raw_second = backends or (
            judge_backend(sweep.judge, sweep.decoding, sweep.batch),
            judge_backend(sweep.second_judge, sweep.second_decoding, sweep.batch)
            if sweep.second_judge
            else None,
        )
    except InputError as exc:
        raise SweepError(str(exc)) from None
    if budget is not None and (
        missing := unpriced_specs([raw_primary.spec, raw_second.spec if raw_second else ""], prices)
    ):
        raise SweepError(f"no price for {', '.join(missing)}: the monthly spend cap cannot be kept")

    def limited(backend: Backend) -> LimitedBackend:
        return LimitedBackend(
            backend, provider_limit(provider_of(backend.spec)), budget=budget, prices=prices
        )

    primary = limited(batched(raw_primary))
    second = limited(batched(raw_second)) if raw_second is not None else None
    threads = max(provider_limit(provider_of(b.spec)).spec.concurrency for b in (primary, second) if b)
    if primary.batch:
        # A run waiting for its batch holds a thread and no provider slot: a batch is as large as the
        # runs waiting at once.
        threads = settings.SWEEP_BATCH_SIZE
    judge_settings = JudgeSettings(prices=prices, regrade_sample=sweep.regrade_sample)
    return _SweepJudges(raw_primary, raw_second, primary, second, judge_settings, threads)


class _Grading:
    """The runs of one sweep graded on a thread pool, each grade stored as it comes; ``stop`` (the spend
    cap) and ``database_error`` say why it stopped early."""

    def __init__(
        self,
        sweep: Sweep,
        judges: _SweepJudges,
        cache: Any,
        retry: set[int],
        on_stored: Callable[[int], None] | None,
    ) -> None:
        self.sweep = sweep
        self.judges = judges
        self.cache = cache
        self.retry = retry
        self.on_stored = on_stored
        self.admission = Admission(not sweep.provisional)
        self.stop: str | None = None
        self.database_error: str | None = None
        self.tasks: dict[tuple[int, str], TaskBytes] = {}  # per revision and prompt style
        self.checkouts: dict[int, Path | None] = {}  # per revision: where the tree judge reads

    def grade_one(self, task: TaskBytes, run: AgentRun, diff: bytes, checkout: Path | None) -> RunMetrics:
        judges = self.judges
        return grade(
            task.files(),
            run_model(run, diff),
            judges.primary,
            judges.second,
            cache=self.cache,
            settings=judges.settings,
            admissions=self.admission,
            second_sample=self.sweep.second_sample,
            checkout=checkout,
        )

    def grade_all(self, todo: list[Target], outcome: SweepOutcome) -> None:
        threads = self.judges.threads
        with ThreadPoolExecutor(
            max_workers=min(threads, len(todo)), thread_name_prefix=f"sweep-{self.sweep.pk}"
        ) as pool:
            pending: dict[Future[RunMetrics], Target] = {}
            queue = list(reversed(todo))
            while queue or pending:
                while queue and self.stop is None and self.database_error is None and len(pending) < threads:
                    target = queue.pop()
                    future = self.submit(pool, target)
                    if future is None:
                        break
                    pending[future] = target
                if not pending:
                    break
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in finished:
                    self.finish(pending.pop(future), future, outcome)

    def submit(self, pool: ThreadPoolExecutor, target: Target) -> Future[RunMetrics] | None:
        """The run's grading sent to the pool; None when its rows could not be read (``database_error``)."""
        try:
            run, diff = _with_reconnect(partial(load_run, target.run_pk))
        except DatabaseError as exc:
            self.database_error = str(exc)
            return None
        key = (target.revision.pk, "issue" if run.prompt_style == "issue" else "spec")
        if key not in self.tasks:
            self.tasks[key] = task_bytes(target.revision, run.prompt_style)
        if target.revision.pk not in self.checkouts:
            self.checkouts[target.revision.pk] = tree_checkout(
                target.revision, self.judges.raw_primary, self.judges.raw_second
            )
        return pool.submit(self.grade_one, self.tasks[key], run, diff, self.checkouts[target.revision.pk])

    def finish(self, target: Target, future: Future[RunMetrics], outcome: SweepOutcome) -> None:
        """A graded run stored and counted (or why not: the cap, bad input, the database)."""
        try:
            metrics = future.result()
        except BudgetExceeded as exc:
            self.stop = self.stop or str(exc)
            return
        except InputError as exc:
            outcome.problems.append(f"run {run_label(target)}: {exc}")
            _count_done(self.sweep, 1)
            return
        except DatabaseError as exc:  # the verdict cache's connection, twice
            self.database_error = self.database_error or str(exc)
            return
        if self.database_error is not None:
            return
        try:
            stored = _store(self.sweep, target, metrics, replace=target.run_pk in self.retry)
        except DatabaseError as exc:
            self.database_error = str(exc)
            return
        if stored.created:
            outcome.graded += 1
            outcome.judge_failures += int(stored.judge_failure)
        else:
            outcome.already_graded += 1
        if self.on_stored is not None:
            self.on_stored(target.run_pk)


def _raise_if_stopped(sweep: Sweep, stop: str | None, database_error: str | None) -> None:
    """SweepError saying why the sweep stopped early and what was kept, if it did."""
    if database_error is not None:
        raise SweepError(
            f"the database connection failed mid-sweep ({database_error.strip()}); the {sweep.graded_runs} "
            f"grade{pluralize(sweep.graded_runs)} stored before {'is' if sweep.graded_runs == 1 else 'are'} "
            "kept: sweep again to grade the rest"
        )
    if stop is not None:
        raise SweepError(
            f"{stop}. {sweep.done_runs} of {sweep.total_runs} run{pluralize(sweep.total_runs)} "
            f"{'is' if sweep.done_runs == 1 else 'are'} graded and kept; raise the cap or "
            "wait for next month, then sweep again (graded runs are skipped)"
        )


def sweep_now(repository: Repository, by: Actor, request: SweepRequest | None = None, **kwargs: Any) -> Sweep:
    """Create the sweep and run its job in this process (tests, the demo), with the ``cache`` or
    ``on_stored`` of :func:`run_sweep`: the Job is not sent but run here through the job protocol
    (``jobs.run``: the same claim, heartbeat and end as on a worker). Eager mode is Celery's own
    (CELERY_TASK_ALWAYS_EAGER), through :func:`start`."""
    sweep = new_sweep(repository, by, request or SweepRequest())
    run(sweep.job_id, lambda job: run_sweep(sweep.pk, **kwargs).result())
    sweep.refresh_from_db()
    return sweep


# --- the sweep job ------------------------------------------------------------------------------------------


def _sweep(job: Job) -> SweepResult:
    # A job the reaper queued again (its worker was lost) runs the same sweep: the Job claim is the lock,
    # and the runs graded before are skipped.
    sweep = job.sweep
    try:
        result = run_sweep(sweep.pk).result()
    finally:
        # Grades were stored as they came, whether the sweep finished or not: a worker computes the new
        # report once (not once per grade).
        report_changed(sweep.repository_id)
    if sweep.export:
        write_export(sweep)  # a step after the grading: the report's runs in the sweep's scope, as files
    return result


@job_task(JobKind.SWEEP)
def sweep_runs(job_id: int) -> None:
    """Grade the runs of a sweep with the repository's judges, storing each run's grade as it is done."""
    run(job_id, _sweep)
