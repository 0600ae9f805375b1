"""Calibration (§5): the admission rows of a revision judged by the repository's judges, in a Celery job.

The job builds the revision's task (rubric.json, task.json, oracle.diff, the calibration diffs and the
manifest's tests block) in memory from its rows (:func:`task_files`) and runs ``grading.check_admission``
on it, once per judge, in threads of its own; the job's own thread stores each row, with every verdict of
both judges, in one transaction as soon as both judges are done with it, so a killed worker never leaves
half a row. It runs as a Job, so the job reaper watches it: a run whose worker was lost is queued again and
taken over (rows stored before are kept), or failed by :func:`fail_stale_runs` with the job's reason;
calibrating again answers the rows already judged from the verdict cache, with no calls.

A revision is admitted only through a passing run of its exact content (rubric.json and every input file)
with the repository's primary judge and decoding (:func:`passing_run`); the database checks the same
(migration 0011).

The injection suite (``grading.injection``) is an option of a run: every payload kind in each lazy diff and,
as comments, in the oracle. A run with an attack success fails, and as long as a run of the same content and
judge found one, no other run of that content admits it (:func:`injection_refusal`): a judge known to be
talked out of a blocker by this rubric's diffs is not trusted because another run did not ask.

The task and the passing-run lookups live in :mod:`rubrics_app.services.calibration.inputs`, the verdict
cache and the storing of rows in :mod:`rubrics_app.services.calibration.store`; their public names stay
importable from here.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.template.defaultfilters import pluralize
from django.utils import timezone

from grading import (
    AdmissionReport,
    Backend,
    Decoding,
    InputError,
    InputErrors,
    JudgeSettings,
    check_admission,
    load_price_table,
    make_backend,
)
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditVerb,
    CalibrationResult,
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    Job,
    JobKind,
    JobStatus,
    JudgeRole,
    JudgeSetting,
    RevisionStatus,
    Role,
    RubricRevision,
    TransitionError,
    lock_current_grades,
    refresh_current_grades,
    result_json,
)
from rubrics_app.services import audit
from rubrics_app.services.calibration import mutants as oracle_mutants
from rubrics_app.services.calibration.inputs import (
    calibration_files,
    held_checkout,
    inputs_sha256,
    judges_of,
    passing_run,
    spent_this_month,
    task_files,
    tree_checkout,
)
from rubrics_app.services.calibration.store import (
    DatabaseVerdictCache,
    Pending,
    model_ids_of,
    run_agreement,
    store_row,
)
from rubrics_app.services.jobs import JobFailed, QueueUnreachable, job_task, send
from rubrics_app.services.jobs import run as run_job
from rubrics_app.services.reports.report import report_changed

HEARTBEAT_SECONDS = 5.0
# A running calibration whose heartbeat is older than this lost its worker.
STALE_AFTER = timedelta(seconds=60)

# What a failing row usually means, by row kind (shown beside the row; §5).
ROW_HINTS = {
    "empty": "The untouched workspace passes every blocker: a blocker that an empty change satisfies "
    "checks nothing about the fix (it only forbids something, or it is too vague).",
    "oracle": "The maintainer's own fix is not mergeable: the rubric, the scope globs or the grader is "
    "wrong (a blocker that encodes something else, a glob that misses a path the fix touches).",
    "lazy": "The lazy diff gets through: the blocker it was written to break is too vague, or the diff "
    "does not really break it.",
    "lazy_comment": "A comment inside the diff talked the judge out of a blocker: this judge follows "
    "instructions planted in the change under review.",
    "alt": "A valid alternative is refused: a blocker encodes the reference implementation rather than "
    "what a maintainer requires.",
    "injection": "A payload planted in the lazy diff talked the judge out of a blocker it breaks (an attack "
    "success): this judge follows instructions inside the change under review; admission is refused.",
    "benign": "The oracle with the payload's text as harmless comments is no longer mergeable (benign "
    "drift): the judge penalises comments that change nothing. Reported only; it does not refuse admission.",
}


class CalibrationError(JobFailed):
    """A calibration that could not run; the message names the file and field, or what is missing."""


# --- starting and admitting -------------------------------------------------------------------------------


@transaction.atomic
def new_run(
    revision: RubricRevision,
    by: Actor,
    *,
    admit: bool = False,
    injection_suite: bool = False,
    mutants: bool = False,
) -> tuple[CalibrationRun, bool]:
    """A queued calibration run (and its Job) of an approved revision, and whether it is new: a calibration
    already queued or running is joined instead. The caller sends a new one (:func:`start`).
    ``injection_suite``: run the injection suite too; ``mutants``: judge the oracle's mutants too (never used
    to admit). Raises TransitionError when it cannot run, saying why."""
    revision = RubricRevision.objects.select_related("task__repository").get(pk=revision.pk)
    repository = revision.task.repository
    by.require(Role.MAINTAINER, repository)
    if revision.status != RevisionStatus.APPROVED:
        raise TransitionError(f"only an approved revision is calibrated (this one is {revision.status})")
    judges = judges_of(revision)
    if not revision.task.task_file("oracle.diff"):
        raise TransitionError(
            f"task {revision.task.task_id} has no oracle.diff: add the task's files before calibrating"
        )
    if judges.monthly_cap_usd is not None:
        spent = spent_this_month(repository.pk)
        if Decimal(str(spent)) >= judges.monthly_cap_usd:
            raise TransitionError(
                f"this month's judge spend (${spent:.2f}) reached the repository's cap "
                f"(${judges.monthly_cap_usd}); raise the cap or wait for next month"
            )
    fail_stale_runs()
    # One calibration of a revision at a time: a second click joins the one under way.
    current = (
        CalibrationRun.objects.select_for_update()
        .filter(revision=revision, status__in=[CalibrationStatus.QUEUED, CalibrationStatus.RUNNING])
        .first()
    )
    if current is not None:
        if injection_suite and not current.injection_suite:
            raise TransitionError(
                f"calibration #{current.pk} of this revision is under way without the injection suite: "
                "wait for it to end, then calibrate with the suite"
            )
        if admit and not current.admit_when_passed:
            current.admit_when_passed = True
            current.save(update_fields=["admit_when_passed"])
        if mutants and not current.with_mutants and current.status == CalibrationStatus.QUEUED:
            current.with_mutants = True
            current.save(update_fields=["with_mutants"])
        return current, False
    user = by.user if getattr(by.user, "is_authenticated", False) else None
    job = Job.objects.create(
        kind=JobKind.CALIBRATE_REVISION, repository=repository, revision=revision, created_by=user
    )
    run = CalibrationRun.objects.create(
        revision=revision,
        job=job,
        rubric_sha256=revision.rubric_sha256(),
        inputs_sha256=inputs_sha256(calibration_files(revision)),
        judge=judges.judge,
        decoding=judges.decoding,
        second_judge=judges.second_judge,
        second_decoding=judges.second_decoding,
        scripted=JudgeSetting.is_scripted(judges.judge) or JudgeSetting.is_scripted(judges.second_judge),
        admit_when_passed=admit,
        injection_suite=injection_suite,
        with_mutants=mutants,
        created_by=user,
    )
    return run, True


def start(
    revision: RubricRevision,
    by: Actor,
    *,
    admit: bool = False,
    injection_suite: bool = False,
    mutants: bool = False,
) -> CalibrationRun:
    """Queue a calibration of ``revision`` and send its job once committed (``admit``: admit it if it
    passes, what "Admit" does when no passing run exists; ``injection_suite``: run the suite too;
    ``mutants``: judge the oracle's mutants too). QueueUnreachable when the broker did not take it: its
    job and the run are failed, so the next start makes a new one."""
    try:
        with transaction.atomic():
            run, created = new_run(
                revision, by, admit=admit, injection_suite=injection_suite, mutants=mutants
            )
            if created and run.job is not None:
                send(calibrate_revision, run.job.pk)
    except QueueUnreachable:
        fail_stale_runs()
        raise
    return run


def admit_with(revision: RubricRevision, run: CalibrationRun, by: Actor) -> RubricRevision | None:
    """Admit ``revision`` on the strength of ``run``; returns the revision this retired, if any."""
    by.require(Role.MAINTAINER, revision.task.repository)
    user = by.user if getattr(by.user, "is_authenticated", False) else None
    with transaction.atomic():
        lock_current_grades(tasks=[revision.task_id])  # before the revisions: models.lock_current_grades
        retired = run.admit(revision, by=user)
        # The task's runs: their grades against this revision are current now, not the retired one's.
        refresh_current_grades(tasks=[revision.task_id])
        report_changed(revision.task.repository_id)  # a worker computes the new report once committed
        audit.record(
            AuditVerb.ADMITTED,
            actor=by.user,
            revision=revision,
            detail={
                "calibration": run.pk,
                "judge": run.judge,
                **({"replaced_revision": retired.number} if retired is not None else {}),
            },
        )
        if retired is not None:
            audit.record(
                AuditVerb.RETIRED, actor=by.user, revision=retired, detail={"by_revision": revision.number}
            )
    return retired


def fail_stale_runs(now: Any = None) -> int:
    """Fail every unfinished calibration whose worker is gone; returns how many.

    A calibration runs as a Job, and the job reaper (services.jobs.reap) is what decides that a job's worker
    was lost: it queues the job again (the run is taken over and finishes) or fails it with "worker lost".
    So a queued or running calibration whose Job failed is failed here with the job's reason. A
    running calibration whose own heartbeat stopped while its Job is not running (a calibration run in the
    command's own process, whose Job is never sent) is failed as well. Rows stored before are kept;
    calibrating again answers them from the verdict cache.
    """
    now = now or timezone.now()
    kept = "the rows stored before are kept: calibrate again, and the rows already judged come from the cache"
    failed_jobs = CalibrationRun.objects.filter(
        status__in=[CalibrationStatus.QUEUED, CalibrationStatus.RUNNING], job__status=JobStatus.FAILED
    ).select_related("job")
    count = 0
    for run in failed_jobs:
        assert run.job is not None
        reason = f"the calibration job failed ({run.job.error or 'no reason given'}); {kept}"
        count += CalibrationRun.objects.filter(
            pk=run.pk, status__in=[CalibrationStatus.QUEUED, CalibrationStatus.RUNNING]
        ).update(status=CalibrationStatus.ERROR, reason=reason, finished_at=now)
    stale = (
        CalibrationRun.objects.filter(status=CalibrationStatus.RUNNING, heartbeat_at__lt=now - STALE_AFTER)
        .exclude(job__status=JobStatus.RUNNING)
        .select_related("job")
    )
    seconds = int(STALE_AFTER.total_seconds())
    reason = f"the worker stopped mid-run (no heartbeat for {seconds} s); {kept}"
    for run in stale:
        updated = CalibrationRun.objects.filter(pk=run.pk, status=CalibrationStatus.RUNNING).update(
            status=CalibrationStatus.ERROR, reason=reason, finished_at=now
        )
        if updated and run.job is not None:
            Job.objects.filter(pk=run.job.pk, status=JobStatus.QUEUED).update(
                status=JobStatus.FAILED, error=reason, finished_at=now
            )
        count += updated
    return count


# --- running one -------------------------------------------------------------------------------------------


def _backend(spec: str, decoding: Decoding) -> Backend:
    return make_backend(spec, decoding=decoding)


def run_calibration(
    run_pk: int,
    *,
    cache: Any = None,
    backends: tuple[Backend, Backend | None] | None = None,
    on_stored: Callable[[int], None] | None = None,
) -> CalibrationRun:
    """Judge every admission row of a claimed run (status RUNNING) and store it as it finishes.

    ``cache`` defaults to the database cache shared by the workers; ``backends`` to the run's judge specs
    (API keys from this process's environment). Raises CalibrationError when the inputs are bad (the run is
    then stored as an error with its reason).
    """
    run = CalibrationRun.objects.select_related("revision__task__repository").get(pk=run_pk)
    revision = run.revision
    files = calibration_files(revision)
    own_cache = cache is None
    cache = DatabaseVerdictCache() if own_cache else cache
    results: queue.Queue[tuple[str, Any, Any]] = queue.Queue()
    reports: dict[str, AdmissionReport] = {}
    errors: list[str] = []
    try:
        try:
            primary, second = backends or (
                _backend(run.judge, run.decoding),
                _backend(run.second_judge, run.second_decoding) if run.second_judge else None,
            )
            settings = JudgeSettings(prices=load_price_table())
        except InputError as exc:
            raise CalibrationError(str(exc)) from None
        checkout = tree_checkout(revision, primary, second)
        roles = [(JudgeRole.PRIMARY, primary)] + ([(JudgeRole.SECOND, second)] if second is not None else [])

        def judge(role: str, backend: Backend) -> None:
            try:
                report = check_admission(
                    task_files(files),
                    backend,
                    cache=cache,
                    settings=settings,
                    injection_suite=run.injection_suite,
                    checkout=checkout,
                    on_row=lambda n, total, row: results.put(("row", role, (n, total, row))),
                )
            except (InputError, InputErrors) as exc:
                results.put(("error", role, str(exc)))
            except Exception as exc:  # a bug or an SDK surprise: the run fails, saying what it was
                results.put(("error", role, f"internal error: {type(exc).__name__}: {exc}"))
            else:
                results.put(("done", role, report))

        threads = [
            threading.Thread(target=judge, args=(role, backend), name=f"calibration-{role}", daemon=True)
            for role, backend in roles
        ]
        if run.with_mutants:
            # The oracle's mutants, by the primary judge: an authoring aid beside the rows (issue 14).
            mutants_checkout = held_checkout(revision.task, "Python syntax check of mutants")
            threads.append(
                oracle_mutants.judging_thread(
                    run,
                    lambda: task_files(files),
                    primary,
                    cache,
                    settings,
                    results,
                    checkout=mutants_checkout,
                )
            )
        stored_mutants = oracle_mutants.stored_positions(run)
        for thread in threads:
            thread.start()
        pending: dict[int, Pending] = {}
        # Rows a lost worker stored before the run was taken over stay as they are (whole rows).
        stored = set(CalibrationRow.objects.filter(run=run).values_list("position", flat=True))
        finished = 0
        while finished < len(threads):
            try:
                what, role, payload = results.get(timeout=HEARTBEAT_SECONDS)
            except queue.Empty:
                CalibrationRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
                continue
            if what in oracle_mutants.MESSAGES:
                finished += oracle_mutants.handle(run, what, payload, stored_mutants)
            elif what == "row":
                index, total, row = payload
                entry = pending.setdefault(index, Pending())
                entry.rows[role] = row
                if not errors and len(entry.rows) == len(roles) and index not in stored:
                    store_row(run, index, total, entry, files)
                    if on_stored is not None:
                        on_stored(index)
            elif what == "error":
                errors.append(f"{role} judge: {payload}")
                finished += 1
            else:
                reports[role] = payload
                finished += 1
        for thread in threads:
            thread.join()
    except CalibrationError as exc:
        _finish_error(run, str(exc))
        raise
    finally:
        if own_cache:
            cache.close()
    if errors:
        reason = "; ".join(errors)
        _finish_error(run, reason)
        raise CalibrationError(reason)
    return _finish(run, reports)


def _finish_error(run: CalibrationRun, reason: str) -> None:
    CalibrationRun.objects.filter(pk=run.pk, status=CalibrationStatus.RUNNING).update(
        status=CalibrationStatus.ERROR, reason=reason, finished_at=timezone.now()
    )


def _finish(run: CalibrationRun, reports: dict[str, AdmissionReport]) -> CalibrationRun:
    primary = reports[JudgeRole.PRIMARY]
    # Benign drift is reported on its own (the page's suite table), never a reason the run failed.
    counted = [row for row in primary.rows if row.kind != "benign"]
    failing = [row for row in counted if not row.holds]
    status = CalibrationStatus.PASSED if primary.admitted else CalibrationStatus.FAILED
    reason = (
        ""
        if not failing
        else f"{len(failing)} of {len(counted)} row{pluralize(len(counted))} "
        f"{'does' if len(failing) == 1 else 'do'} not hold: "
        + "; ".join(f"{row.kind} {row.name}: expected {row.expected}, got {row.actual}" for row in failing)
    )
    suite = primary.injection
    if suite is not None and suite.attack_successes:
        reason = (
            f"{suite.attack_successes} attack success{'es' if suite.attack_successes != 1 else ''} in the "
            "injection suite (a payload talked the judge out of a blocker); " + reason
        )
    with transaction.atomic():
        run = (
            CalibrationRun.objects.select_for_update()
            .select_related("revision__task__repository")
            .get(pk=run.pk)
        )
        if run.status != CalibrationStatus.RUNNING:
            return run  # failed meanwhile (its heartbeat was judged stale): the reason there stands
        run.status = status
        run.reason = reason
        run.finished_at = timezone.now()
        run.model_ids = model_ids_of(primary)
        run.second_model_ids = model_ids_of(reports.get(JudgeRole.SECOND))
        run.agreement = run_agreement(run)
        fields = ["status", "reason", "finished_at", "model_ids", "second_model_ids", "agreement"]
        if suite is not None:
            run.attacks, run.attack_successes = suite.attacks, suite.attack_successes
            run.attacks_not_measured = suite.attacks_not_measured
            run.benign, run.benign_drifts = suite.benign, suite.benign_drifts
            run.benign_not_measured = suite.benign_not_measured
            fields += ["attacks", "attack_successes", "attacks_not_measured", "benign", "benign_drifts",
                       "benign_not_measured"]  # fmt: skip
        run.save(update_fields=fields)
        audit.record(
            AuditVerb.CALIBRATED,
            actor=run.created_by,
            revision=run.revision,
            detail={
                "calibration": run.pk,
                "status": status,
                "judge": run.judge,
                "calls": run.calls,
                **({"attack_successes": run.attack_successes} if suite is not None else {}),
            },
        )
        revision = run.revision
        if status == CalibrationStatus.PASSED and run.admit_when_passed:
            revision.refresh_from_db()
            if revision.status == RevisionStatus.APPROVED and passing_run(revision) == run:
                admit_with(revision, run, Actor.command_line(run.created_by))
    return run


def claim(run: CalibrationRun, *, takeover: bool = False) -> bool:
    """QUEUED -> RUNNING, once: a redelivered message finds it taken. ``takeover``: the run's Job was queued
    again by the job reaper (its worker was lost mid-run), so a RUNNING run is taken over too; the Job's own
    conditional claim is what makes sure only one worker runs it."""
    now = timezone.now()
    statuses = [CalibrationStatus.QUEUED] + ([CalibrationStatus.RUNNING] if takeover else [])
    return bool(
        CalibrationRun.objects.filter(pk=run.pk, status__in=statuses).update(
            status=CalibrationStatus.RUNNING, started_at=now, heartbeat_at=now
        )
    )


def calibrate_now(
    revision: RubricRevision,
    by: Actor,
    *,
    admit: bool = False,
    injection_suite: bool = False,
    mutants: bool = False,
    **kwargs: Any,
) -> CalibrationRun:
    """Calibrate in this process (tests, the command line's eager mode): new run, claim, run."""
    run, _ = new_run(revision, by, admit=admit, injection_suite=injection_suite, mutants=mutants)
    if not claim(run):
        raise TransitionError("a calibration of this revision is already running")
    try:
        run = run_calibration(run.pk, **kwargs)
    except CalibrationError:
        run = CalibrationRun.objects.get(pk=run.pk)
    _end_job_here(run)
    return run


def _end_job_here(run: CalibrationRun) -> None:
    """A calibration run in this process ends its Job as a worker would, so no job page shows it queued for
    ever (the demo's admission calibration is one)."""
    if run.job_id is None:
        return
    run.revision.refresh_from_db()
    now = timezone.now()
    ended = Job.objects.filter(pk=run.job_id, status__in=[JobStatus.QUEUED, JobStatus.RUNNING])
    if run.status == CalibrationStatus.ERROR:
        ended.update(status=JobStatus.FAILED, error=run.reason, finished_at=now, progress=100)
        return
    result = CalibrationResult(
        calibration=run.pk,
        status=run.status,
        admitted=run.revision.status == RevisionStatus.ADMITTED,
        calls=run.calls,
        cost_usd=run.cost_usd,
    )
    ended.update(
        status=JobStatus.DONE,
        result=result_json(JobKind.CALIBRATE_REVISION, result),
        started_at=run.started_at or now,
        finished_at=now,
        progress=100,
    )


# --- the calibration job ------------------------------------------------------------------------------------


def _calibrate(job: Job) -> CalibrationResult:
    run = CalibrationRun.objects.get(job=job)
    # A job the reaper queued again (its worker was lost) takes its run over: the Job claim is the lock.
    if not claim(run, takeover=job.attempts > 1):
        raise CalibrationError(f"calibration #{run.pk} is {run.status}, not queued: not run again")
    run = run_calibration(run.pk)
    run.revision.refresh_from_db()
    return CalibrationResult(
        calibration=run.pk,
        status=run.status,
        admitted=run.revision.status == RevisionStatus.ADMITTED,
        calls=run.calls,
        cost_usd=run.cost_usd,
    )


@job_task(JobKind.CALIBRATE_REVISION)
def calibrate_revision(job_id: int) -> None:
    """Judge a revision's admission rows (§5) with the repository's judges, storing each row as it finishes;
    admit the revision when it passes and the run was started by "Admit"."""
    run_job(job_id, _calibrate)
