"""Mutants of the oracle through a real Celery worker process and the real Anthropic SDK against the local
fake server: ``manage.py calibrate --mutants --wait`` prints them after the rows, stores their counts, and
the exit code is admission's alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from rubrics_app.access import Actor
from rubrics_app.models import CalibrationRun, CalibrationStatus, Repository, RevisionStatus, Task
from rubrics_app.services.rubrics.task_files import set_task_files
from tests.app.calibration_helpers import multi_file_oracle
from tests.app.conftest import MakeRevision
from tests.app.worker_helpers import calibrate_command, use_fake_providers
from tests.grading.judge.fake_servers import FakeProviderServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_calibrate_with_mutants_through_the_worker(
    calibration_worker: Path,
    calibration_provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
    task: Task,
    tmp_path: Path,
) -> None:
    use_fake_providers(repository, maintainer)
    set_task_files(task, {"oracle.diff": multi_file_oracle(tmp_path)}, by=Actor.member(maintainer))
    revision = make_revision(RevisionStatus.APPROVED)
    before = len(calibration_provider.model_calls())
    code, out = calibrate_command(
        "--repository",
        repository.name,
        "--task",
        task.task_id,
        "--mutants",
        "--no-injection-suite",
        "--wait",
        "--timeout",
        "120",
    )
    # The fake judge passes B1 wherever a ValueError is raised: every mutant keeps one, so none is caught,
    # and the rubric is admitted all the same.
    assert code == 0, f"{out}\n{calibration_worker.read_text(errors='replace')}"
    assert "admitted: fix_fraction_gt1 revision 1" in out
    assert "mutants (an authoring aid, never used to admit): 3 judged, 0 caught, 0 marked harmless" in out
    assert out.count("MERGEABLE ") == 3 and "MERGEABLE revert-file:" in out and "MERGEABLE one-place:" in out
    run = CalibrationRun.objects.get(revision=revision)
    assert run.status == CalibrationStatus.PASSED and run.with_mutants
    assert (run.mutants_total, run.mutants_caught, run.mutants_harmless) == (3, 0, 0)
    # Both judges on the five rows, the primary alone on the mutants, through the real SDKs.
    assert len(calibration_provider.model_calls()) - before == run.calls == 13
    assert {m.kind for m in run.mutants.all()} == {"revert-file", "one-place"}
    assert all(m.verdicts and m.calls == 1 for m in run.mutants.all())
