"""Starting Celery jobs: a Job row the pages poll, and its task sent once that row is committed."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from rubrics_app.models import Job, JobKind, Repository, RevisionStatus, Role, RubricRevision, TransitionError
from rubrics_app.tasks import check_repository_evidence, export_revision_to_checkout, validate_revision


def _user(by: Any) -> Any:
    return by if getattr(by, "is_authenticated", False) else None


@transaction.atomic
def start_validation(revision: RubricRevision, by: Any) -> Job:
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
    revision: RubricRevision, by: Any, *, private: bool = False, branch: str | None = None
) -> Job:
    if revision.task.repository.role_of(by) != Role.MAINTAINER:
        raise PermissionDenied("only a maintainer of this repository may export")
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
def start_evidence_check(repository: Repository, by: Any) -> Job:
    """`by=None` is the command line or the periodic job."""
    if by is not None and repository.role_of(by) != Role.MAINTAINER:
        raise PermissionDenied("only a maintainer of this repository may check evidence")
    job = Job.objects.create(kind=JobKind.CHECK_EVIDENCE, repository=repository, created_by=_user(by))
    check_repository_evidence.delay_on_commit(job.pk)
    return job
