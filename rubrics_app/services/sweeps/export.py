"""A sweep's export: when a sweep with ``export`` ends, the report's runs in its scope (its task, arm and
model as the report's filters) as run folders in a zip, each with its run.json and its current grade's
metrics.json, the tasks, labels, cutoffs and provenance: the report page's runs.zip download
(``services.reports.downloads.runs_export``), so ``rubric report`` on the unpacked folders reproduces the
app's report. Stored as the sweep job's file (models.JobFile), which the job page links for download and
``manage.py sweep --export FILE`` writes to FILE.

A step of the sweep job after its grading (``sweeps.run``), never part of it: a sweep that stopped (the spend
cap, a failure) writes no export."""

from __future__ import annotations

import hashlib

from grading import download_name
from rubrics_app.models import JobFile, Sweep
from rubrics_app.services.reports.downloads import download_provenance, runs_export
from rubrics_app.services.reports.report import repository_report

CONTENT_TYPE = "application/zip"


def sweep_filters(sweep: Sweep) -> dict[str, str]:
    """The sweep's scope as the report's filters (a sweep of a revision: the revision's task)."""
    task = sweep.task if sweep.task is not None else (sweep.revision.task if sweep.revision else None)
    given = {"task": task.task_id if task is not None else "", "arm": sweep.arm, "model": sweep.model}
    return {name: value for name, value in given.items() if value}


def write_export(sweep: Sweep) -> JobFile:
    """The export of ``sweep`` stored as its job's file (replacing one written before: a job the reaper sent
    again writes it again)."""
    assert sweep.job is not None
    repository = sweep.repository
    filters = sweep_filters(sweep)
    provenance = download_provenance(repository, filters, repository_report(repository, filters).report)
    data = runs_export(repository, filters, provenance)
    name = download_name(repository.name, f"sweep-{sweep.pk}-runs", filters, "zip")
    file, _ = JobFile.objects.update_or_create(
        job=sweep.job,
        name=name,
        defaults={
            "content_type": CONTENT_TYPE,
            "data": data,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
    )
    return file


def export_of(sweep: Sweep) -> JobFile | None:
    """The export the sweep's job wrote (None: not asked for, or not written yet)."""
    return JobFile.objects.filter(job_id=sweep.job_id, content_type=CONTENT_TYPE).first()
