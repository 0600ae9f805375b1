"""Celery jobs. Each takes a Job id, claims the row with a conditional QUEUED -> RUNNING update (so a
redelivered message never runs a job twice), loads its objects, calls grading/ through the services, and saves
the result on the Job row that the pages poll. Send them with ``delay_on_commit`` (see services/jobs.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from rubrics_app.celery import app
from rubrics_app.models import CalibrationRun, Job, JobStatus, RubricRevision, TransitionError
from rubrics_app.services import calibration
from rubrics_app.services.calibration import CalibrationError
from rubrics_app.services.import_export import ExportError, write_to_checkout

log = logging.getLogger(__name__)

# Failures a maintainer can act on; their message is shown as is. Anything else is a bug and is logged.
EXPECTED_FAILURES = (
    ExportError,
    TransitionError,
    PermissionDenied,
    RubricRevision.DoesNotExist,
    CalibrationError,
    CalibrationRun.DoesNotExist,
)


def _claim(job_id: int) -> Job | None:
    claimed = Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    return Job.objects.select_related("revision__task__repository", "created_by").get(pk=job_id)


def _run(job_id: int, body: Callable[[Job], dict[str, Any]]) -> None:
    job = _claim(job_id)
    if job is None:
        log.info("job %s was not queued (already taken or gone); skipping", job_id)
        return
    try:
        result = body(job)
    except EXPECTED_FAILURES as exc:
        _finish(job, JobStatus.FAILED, error=str(exc))
    except Exception as exc:
        log.exception("job %s failed", job_id)
        _finish(job, JobStatus.FAILED, error=f"internal error: {type(exc).__name__}: {exc}")
        raise
    else:
        _finish(job, JobStatus.DONE, result=result)


def _finish(job: Job, status: JobStatus, *, result: dict[str, Any] | None = None, error: str = "") -> None:
    Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(
        status=status, result=result, error=error, progress=100, finished_at=timezone.now()
    )


def _validate(job: Job) -> dict[str, Any]:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    errors = revision.validation_errors()
    return {
        "valid": not errors,
        "errors": [
            {
                "path": e.path,
                "message": e.message,
                "field": e.field,
                "item_pk": e.item_pk,
                "diff_pk": e.diff_pk,
            }
            for e in errors
        ],
    }


def _export(job: Job) -> dict[str, Any]:
    revision = job.revision
    if revision is None:
        raise ExportError("the revision of this job is gone")
    private = bool(job.params.get("private", False))
    branch = job.params.get("branch") or None
    exported = write_to_checkout(revision, private=private, branch=branch, by=job.created_by)
    return {
        "root": str(exported.root),
        "paths": exported.paths,
        "branch": exported.branch,
        "commit": exported.commit,
    }


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def validate_revision(job_id: int) -> None:
    """Check a revision against grading.schema and store the errors, mapped to fields, on the job."""
    _run(job_id, _validate)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def export_revision_to_checkout(job_id: int) -> None:
    """Write an admitted revision into its repository's checkout (or private path), optionally on a branch."""
    _run(job_id, _export)


def _calibrate(job: Job) -> dict[str, Any]:
    run = CalibrationRun.objects.get(job=job)
    if not calibration.claim(run):
        raise CalibrationError(f"calibration #{run.pk} is {run.status}, not queued: not run again")
    run = calibration.run_calibration(run.pk)
    run.revision.refresh_from_db()
    return {
        "calibration": run.pk,
        "status": run.status,
        "admitted": run.revision.status == "admitted",
        "calls": run.calls,
        "cost_usd": run.cost_usd,
    }


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def calibrate_revision(job_id: int) -> None:
    """Judge a revision's admission rows (§5) with the repository's judges, storing each row as it finishes;
    admit the revision when it passes and the run was started by "Admit"."""
    _run(job_id, _calibrate)
