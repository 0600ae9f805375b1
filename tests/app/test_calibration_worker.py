"""Calibration through a real Celery worker process, on the configured broker (filesystem by default, Redis
when CELERY_BROKER_URL says so) and database, with the real SDKs against the local fake server: the
`calibrate` command end to end (a worker killed mid-calibration: test_calibration_killed_worker.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from grading.admission.corpus import PAYLOAD_KINDS
from rubrics_app.models import CalibrationRun, CalibrationStatus, Job, JobStatus, Repository, RevisionStatus
from tests.app.conftest import ALT_DIFF, ORACLE_DIFF, MakeRevision
from tests.app.worker_helpers import calibrate_command, use_fake_providers
from tests.grading.judge.fake_servers import FakeProviderServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_calibrate_waits_for_the_worker_and_admits(
    calibration_worker: Path,
    calibration_provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
) -> None:
    use_fake_providers(repository, maintainer)
    revision = make_revision(RevisionStatus.APPROVED)
    before = len(calibration_provider.model_calls())
    code, out = calibrate_command(
        "--repository", repository.name, "--task", "fix_fraction_gt1", "--wait", "--timeout", "120",
        "--no-injection-suite",
    )  # fmt: skip
    assert code == 0, f"{out}\n{calibration_worker.read_text(errors='replace')}"
    assert "ok   lazy_comment calib/lazy.diff + reviewer comment" in out
    assert "admitted: fix_fraction_gt1 revision 1" in out and "kappa" in out
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
    run = CalibrationRun.objects.get(revision=revision)
    assert run.status == CalibrationStatus.PASSED and run.rows.count() == 5
    assert run.job is not None and Job.objects.get(pk=run.job.pk).status == JobStatus.DONE
    assert len(calibration_provider.model_calls()) - before == run.calls == 10  # both judges, every row


def test_calibrate_runs_the_injection_suite_by_default(
    calibration_worker: Path,
    calibration_provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
) -> None:
    use_fake_providers(repository, maintainer)
    revision = make_revision(RevisionStatus.APPROVED)
    before = len(calibration_provider.model_calls())
    code, out = calibrate_command(
        "--repository", repository.name, "--task", "fix_fraction_gt1", "--wait", "--timeout", "300"
    )
    assert code == 0, f"{out}\n{calibration_worker.read_text(errors='replace')}"
    kinds = len(PAYLOAD_KINDS)
    assert (
        f"injection suite: 0 attack successes of {kinds} measured, 0 benign drifts of {kinds} measured" in out
    )
    assert "ok   injection calib/lazy.diff + fake_json_verdicts" in out
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
    run = CalibrationRun.objects.get(revision=revision)
    assert run.injection_suite and run.rows.count() == 5 + 2 * kinds
    # Both judges judge every row, the suite's too (the second only for agreement).
    assert len(calibration_provider.model_calls()) - before == run.calls == 2 * (5 + 2 * kinds)


def test_calibrate_exits_1_when_a_row_fails_and_2_on_bad_input(
    calibration_worker: Path, make_revision: MakeRevision, maintainer: User, repository: Repository, task: Any
) -> None:
    code, out = calibrate_command("--repository", repository.name, "--task", "fix_fraction_gt1")
    assert code == 2 and "no approved revision" in out
    task.oracle_diff = b""
    task.save(update_fields=["oracle_diff"])
    revision = make_revision(RevisionStatus.APPROVED)
    code, out = calibrate_command("--repository", repository.name, "--task", "fix_fraction_gt1", "--wait")
    assert code == 2 and "has no oracle.diff" in out
    # The scripted judge passes B1 on the lazy diff: its rows fail.
    task.oracle_diff = ORACLE_DIFF
    task.save(update_fields=["oracle_diff"])
    lazy = revision.calibration_diffs.get(kind="lazy")
    assert bytes(lazy.content) != ALT_DIFF
    script_path = Path(repository.judges.judge.removeprefix("scripted:"))
    script = json.loads(script_path.read_text())
    script["by_diff_sha256"][hashlib.sha256(bytes(lazy.content)).hexdigest()] = script["by_diff_sha256"][
        hashlib.sha256(ALT_DIFF).hexdigest()
    ]
    script_path.write_text(json.dumps(script))
    code, out = calibrate_command(
        "--repository", repository.name, "--task", "fix_fraction_gt1", "--wait", "--timeout", "120"
    )
    assert code == 1, f"{out}\n{calibration_worker.read_text(errors='replace')}"
    assert "FAIL lazy calib/lazy.diff" in out and "not admitted" in out
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
