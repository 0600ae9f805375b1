"""A real Celery worker process, against the configured broker (filesystem by default, Redis when
CELERY_BROKER_URL says so) and the test database (a file for SQLite; PostgreSQL when DATABASE_URL says so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rubrics_app.access import Actor
from rubrics_app.models import Job, JobKind, JobStatus, RevisionStatus
from rubrics_app.services.rubrics import exports
from rubrics_app.services.rubrics.exports import export_revision_to_checkout
from tests.app.conftest import RUBRIC, MakeRevision
from tests.app.worker_helpers import admitted_in_checkout, wait_for
from tests.gitrepo import GitRepo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_the_worker_exports_an_admitted_revision_into_the_checkout(
    worker: Path, make_revision: MakeRevision, git_repo: GitRepo, maintainer: Any
) -> None:
    revision = admitted_in_checkout(make_revision, git_repo)

    job = exports.start_export(revision, Actor.member(maintainer), branch="rubrics/from-worker")
    assert job.status == JobStatus.QUEUED  # sent on commit; the worker has it now

    job = wait_for(job, worker)
    assert job.status == JobStatus.DONE, job.error
    assert job.result is not None
    assert job.result["paths"][0] == "tasks/fix_fraction_gt1/rubric.json"
    assert job.result["commit"] == git_repo.git("rev-parse", "rubrics/from-worker").strip()
    assert job.started_at is not None and job.finished_at is not None and job.progress == 100
    assert git_repo.git("branch", "--show-current").strip() == "main"  # the checkout did not move
    assert not (git_repo.path / "tasks").exists()
    assert git_repo.git("show", "rubrics/from-worker:tasks/fix_fraction_gt1/rubric.json").startswith(
        '{\n  "schema"'
    )


def test_a_failing_job_is_marked_failed_with_its_reason(
    worker: Path, make_revision: MakeRevision, maintainer: Any
) -> None:
    revision = make_revision(RevisionStatus.ADMITTED)
    repository = revision.task.repository
    repository.checkout_path = "/nonexistent/checkout"
    repository.save()
    job = wait_for(exports.start_export(revision, Actor.member(maintainer)), worker)
    assert job.status == JobStatus.FAILED
    assert job.error == "checkout path /nonexistent/checkout is not a directory"
    assert RUBRIC["task"] == revision.task.task_id


def test_a_job_already_claimed_is_not_run_twice(
    worker: Path, make_revision: MakeRevision, maintainer: Any
) -> None:
    revision = make_revision(RevisionStatus.ADMITTED)
    repository = revision.task.repository
    repository.checkout_path = "/nonexistent/checkout"  # the export fails at once: it ran
    repository.save()
    taken = Job.objects.create(
        kind=JobKind.EXPORT_REVISION, repository=repository, revision=revision, status=JobStatus.RUNNING
    )
    export_revision_to_checkout.delay(taken.pk)  # e.g. a redelivered message
    later = wait_for(exports.start_export(revision, Actor.member(maintainer)), worker)  # runs after it
    assert later.status == JobStatus.FAILED
    taken.refresh_from_db()
    assert (taken.status, taken.result, taken.error, taken.started_at) == (JobStatus.RUNNING, None, "", None)
    assert f"job {taken.pk} was not queued" in worker.read_text()
