"""Starting Celery jobs: a Job row the pages poll, and its task sent once that row is committed."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from rubrics_app.access import Actor
from rubrics_app.models import Job, JobKind, Repository, RevisionStatus, Role, RubricRevision, TransitionError
from rubrics_app.tasks import check_repository_evidence, export_revision_to_checkout, validate_revision


def _user(by: Actor) -> Any:
    return by.user if getattr(by.user, "is_authenticated", False) else None


@transaction.atomic
def start_validation(revision: RubricRevision, by: Actor) -> Job:
    by.require(Role.MAINTAINER, revision.task.repository)
    job = Job.objects.create(
        kind=JobKind.VALIDATE_REVISION,
        repository=revision.task.repository,
        revision=revision,
        created_by=_user(by),
    )
    validate_revision.delay_on_commit(job.pk)
    return job


@transaction.atomic
def start_export(
    revision: RubricRevision, by: Actor, *, private: bool = False, branch: str | None = None
) -> Job:
    by.require(Role.MAINTAINER, revision.task.repository)
    if revision.status != RevisionStatus.ADMITTED:
        raise TransitionError("only an admitted revision is exported")
    job = Job.objects.create(
        kind=JobKind.EXPORT_REVISION,
        repository=revision.task.repository,
        revision=revision,
        created_by=_user(by),
        params={"private": private, "branch": branch},
    )
    export_revision_to_checkout.delay_on_commit(job.pk)
    return job


@transaction.atomic
def start_evidence_check(repository: Repository, by: Actor) -> Job:
    """``by``: a maintainer, or the command line or the periodic job (``Actor.command_line()``)."""
    by.require(Role.MAINTAINER, repository)
    job = Job.objects.create(kind=JobKind.CHECK_EVIDENCE, repository=repository, created_by=_user(by))
    check_repository_evidence.delay_on_commit(job.pk)
    return job
