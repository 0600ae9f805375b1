"""Calibration (§5): the admission rows of a revision judged by the repository's judges, in a Celery job.

The job builds the revision's task (rubric.json, task.json, oracle.diff, the calibration diffs and the
manifest's tests block) in memory from its rows (:func:`task_files`) and runs ``grading.check_admission``
on it, once per judge, in threads of its own; the job's own thread stores each row, with every verdict of
both judges, in one transaction as soon as both judges are done with it, so a killed worker never leaves
half a row. It runs as a Job, and the Job is its one state machine (``services.jobs``): the Job's claim is
the lock, its heartbeat says the worker is alive, and the job reaper queues again a job whose worker was lost
(the next worker takes the run over, keeping the rows stored before) or fails it; a failed job fails its
run in the same transaction (:func:`job_failed`, the task's ``on_failed``). Calibrating again answers the
rows already judged from the verdict cache, with no calls.

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
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models.functions import Coalesce
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
    JudgeRole,
    JudgeSetting,
    RevisionStatus,
    Role,
    RubricRevision,
    TransitionError,
    deciding_current_grades,
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
from rubrics_app.services.jobs import JobFailed, job_task, send
from rubrics_app.services.jobs import run as run_job
from rubrics_app.services.reports.report import report_changed

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
    job is failed, and with it the run (:func:`job_failed`), so the next start makes a new one."""
    with transaction.atomic():
        run, created = new_run(revision, by, admit=admit, injection_suite=injection_suite, mutants=mutants)
        if created and run.job is not None:
            send(calibrate_revision, run.job.pk)
    return run


def admit_with(revision: RubricRevision, run: CalibrationRun, by: Actor) -> RubricRevision | None:
    """Admit ``revision`` on the strength of ``run``; returns the revision this retired, if any."""
    by.require(Role.MAINTAINER, revision.task.repository)
    user = by.user if getattr(by.user, "is_authenticated", False) else None
    # The task's runs: their grades against this revision are current now, not the retired one's.
    with deciding_current_grades(tasks=[revision.task_id]):
        retired = run.admit(revision, by=user)
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


def job_failed(job_id: int, error: str) -> None:
    """The ``on_failed`` of the calibration job: its run, if unfinished, ends as an error with the job's
    reason, in the transaction that failed the job (services.jobs calls it wherever a job fails: its body
    raised, its message was not sent, the reaper gave up on its lost worker). Rows stored before are kept;
    calibrating again answers them from the verdict cache."""
    CalibrationRun.objects.filter(
        job_id=job_id, status__in=[CalibrationStatus.QUEUED, CalibrationStatus.RUNNING]
    ).update(
        status=CalibrationStatus.ERROR,
        reason=f"the calibration job failed ({error or 'no reason given'}); the rows stored before are kept: "
        "calibrate again, and the rows already judged come from the cache",
        finished_at=timezone.now(),
    )


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
    """Judge every admission row of a started run (status RUNNING) and store it as it finishes. The Job
    that runs it beats for it (services.jobs): the run has no heartbeat of its own.

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
        primary, second, settings = _judges(run, backends)
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
        _collect(run, results, len(threads), len(roles), files, stored_mutants, reports, errors, on_stored)
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


def _judges(
    run: CalibrationRun, backends: tuple[Backend, Backend | None] | None
) -> tuple[Backend, Backend | None, JudgeSettings]:
    """The run's primary and second judge (``backends`` when given) and the judge settings;
    CalibrationError when a judge spec or the price table is bad."""
    try:
        primary, second = backends or (
            _backend(run.judge, run.decoding),
            _backend(run.second_judge, run.second_decoding) if run.second_judge else None,
        )
        return primary, second, JudgeSettings(prices=load_price_table())
    except InputError as exc:
        raise CalibrationError(str(exc)) from None


def _collect(
    run: CalibrationRun,
    results: queue.Queue[tuple[str, Any, Any]],
    threads: int,
    roles: int,
    files: dict[str, bytes],
    stored_mutants: set[int],
    reports: dict[str, AdmissionReport],
    errors: list[str],
    on_stored: Callable[[int], None] | None,
) -> None:
    """What the judging threads put, until each has put its end: a row is stored once every judge has
    judged it (and no judge has failed), a report or an error kept under the judge's role."""
    pending: dict[int, Pending] = {}
    # Rows a lost worker stored before the run was taken over stay as they are (whole rows).
    stored = set(CalibrationRow.objects.filter(run=run).values_list("position", flat=True))
    finished = 0
    while finished < threads:
        what, role, payload = results.get()  # each thread puts its end, whatever happens
        if what in oracle_mutants.MESSAGES:
            finished += oracle_mutants.handle(run, what, payload, stored_mutants)
        elif what == "row":
            index, total, row = payload
            entry = pending.setdefault(index, Pending())
            entry.rows[role] = row
            if not errors and len(entry.rows) == roles and index not in stored:
                store_row(run, index, total, entry, files)
                if on_stored is not None:
                    on_stored(index)
        elif what == "error":
            errors.append(f"{role} judge: {payload}")
            finished += 1
        else:
            reports[role] = payload
            finished += 1


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
            return run  # failed meanwhile (its job failed): the reason there stands
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


def _start_run(run: CalibrationRun) -> bool:
    """QUEUED -> RUNNING, or a RUNNING run taken over: the run's Job was queued again by the job reaper (its
    worker was lost mid-run). The Job's conditional claim (services.jobs) is the lock that makes sure only
    one worker runs it; a finished run is not run again."""
    return bool(
        CalibrationRun.objects.filter(
            pk=run.pk, status__in=[CalibrationStatus.QUEUED, CalibrationStatus.RUNNING]
        ).update(status=CalibrationStatus.RUNNING, started_at=Coalesce("started_at", timezone.now()))
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
    """Calibrate in this process (tests, the demo), with the ``cache``, ``backends`` or ``on_stored`` of
    :func:`run_calibration`: the run's Job is not sent but run here through the job protocol
    (``services.jobs.run``: the same claim, heartbeat and end as on a worker). Eager mode is Celery's own
    (CELERY_TASK_ALWAYS_EAGER), through :func:`start`."""
    run, created = new_run(revision, by, admit=admit, injection_suite=injection_suite, mutants=mutants)
    if not created:
        raise TransitionError("a calibration of this revision is already running")
    return run_here(run, **kwargs)


def run_here(run: CalibrationRun, **kwargs: Any) -> CalibrationRun:
    """Run a queued calibration's job in this process through the job protocol, as a worker would (with the
    ``cache``, ``backends`` or ``on_stored`` of :func:`run_calibration`); the run as it ended."""
    if run.job_id is None:
        raise TransitionError(f"calibration #{run.pk} has no job to run")
    run_job(run.job_id, lambda job: _calibrate(job, **kwargs))
    run.refresh_from_db()
    return run


# --- the calibration job ------------------------------------------------------------------------------------


def _calibrate(job: Job, **kwargs: Any) -> CalibrationResult:
    run = CalibrationRun.objects.get(job=job)
    # A job the reaper queued again (its worker was lost) takes its run over: the Job claim is the lock.
    if not _start_run(run):
        raise CalibrationError(f"calibration #{run.pk} is {run.status}, not queued: not run again")
    run = run_calibration(run.pk, **kwargs)
    run.revision.refresh_from_db()
    return CalibrationResult(
        calibration=run.pk,
        status=run.status,
        admitted=run.revision.status == RevisionStatus.ADMITTED,
        calls=run.calls,
        cost_usd=run.cost_usd,
    )


@job_task(JobKind.CALIBRATE_REVISION, on_failed=job_failed)
def calibrate_revision(job_id: int) -> None:
    """Judge a revision's admission rows (§5) with the repository's judges, storing each row as it finishes;
    admit the revision when it passes and the run was started by "Admit"."""
    run_job(job_id, _calibrate)
