"""The evidence check as a Celery job on a real worker: `check_evidence --send --wait`, the periodic job."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from rubrics_app.models import EvidenceChange, Job, JobKind, JobStatus, Repository, RevisionStatus, Task
from rubrics_app.services.rubrics.rereview import check_evidence_everywhere
from tests.app.conftest import MakeRevision, rubric_data
from tests.app.worker_helpers import wait_for
from tests.gitrepo import GitRepo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


@pytest.fixture
def changed_checkout(
    git_repo: GitRepo, repository: Repository, task: Task, make_revision: MakeRevision
) -> GitRepo:
    git_repo.write("src/fraction.py", "def fraction(x):\n    return x\n")
    base = git_repo.commit("base")
    Task.objects.filter(pk=task.pk).update(base_commit=base)
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(git_repo.path))
    task.refresh_from_db()
    data = rubric_data(task=task.task_id)
    data["blockers"][0]["evidence"] = "src/fraction.py:2"
    make_revision(RevisionStatus.ADMITTED, data=data, task=task)
    git_repo.write("src/fraction.py", "def fraction(x):\n    return min(x, 1)\n")
    git_repo.commit("upstream")
    return git_repo


def test_check_evidence_send_wait_runs_on_the_worker_and_prints_the_result(
    worker: Path,
    changed_checkout: GitRepo,
    repository: Repository,
) -> None:
    out = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("check_evidence", "--repository", repository.name, "--send", "--wait", stdout=out)
    assert exc.value.returncode == 1 and "1 open evidence change, 1 new" in str(exc.value)
    assert "  - " + "    return x" in out.getvalue() and "  + " + "    return min(x, 1)" in out.getvalue()
    job = Job.objects.get(kind=JobKind.CHECK_EVIDENCE)
    assert job.status == JobStatus.DONE and job.result is not None and job.result["open"] == 1
    assert EvidenceChange.objects.get().new_text == "    return min(x, 1)"


def test_the_periodic_job_checks_every_repository_with_a_checkout(
    worker: Path,
    changed_checkout: GitRepo,
    repository: Repository,
    other_repository: Repository,
) -> None:
    check_evidence_everywhere()
    job = Job.objects.get(kind=JobKind.CHECK_EVIDENCE)  # other_repository has no checkout: not checked
    assert job.repository == repository
    job = wait_for(job, worker)
    assert job.status == JobStatus.DONE, job.error
    assert EvidenceChange.objects.count() == 1


def test_a_failing_check_is_a_failed_job(worker: Path, repository: Repository) -> None:
    Repository.objects.filter(pk=repository.pk).update(checkout_path="/nonexistent/checkout")
    with pytest.raises(CommandError) as exc:
        call_command(
            "check_evidence", "--repository", repository.name, "--send", "--wait", stdout=io.StringIO()
        )
    assert exc.value.returncode == 2 and "not a directory" in str(exc.value)
