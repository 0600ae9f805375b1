"""Calibration through a real Celery worker process, on the configured broker (filesystem by default, Redis
when CELERY_BROKER_URL says so) and database, with the real SDKs against the local fake server: the
`calibrate` command end to end (a worker killed mid-calibration: test_calibration_killed_worker.py)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.injection import PAYLOAD_KINDS
from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationRun,
    CalibrationStatus,
    Job,
    JobStatus,
    Repository,
    RevisionStatus,
)
from rubrics_app.services.judges import set_judges
from tests.app.conftest import ALT_DIFF, ORACLE_DIFF, MakeRevision
from tests.app.test_calibration import calibration_replies
from tests.app.test_celery_worker import CELERY, ROOT, WAIT_SECONDS, database_url
from tests.grading.judge.fake_servers import FakeProviderServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProviderServer]:
    server = FakeProviderServer().start()
    server.reply_builder = calibration_replies
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def celery_worker(log: Path, provider: FakeProviderServer, url: str) -> Iterator[subprocess.Popen[bytes]]:
    queue = celery_app.conf.task_default_queue
    assert queue.startswith("rubrics-test-")  # never the demo's queue
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rubrics_app.settings",
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "RUBRICS_VAR_DIR": str(settings.VAR_DIR),
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "PYTHONWARNINGS": "ignore",
        # Keys only from the worker's environment: the fake server stands in for both providers.
        "ANTHROPIC_BASE_URL": provider.anthropic_base_url,
        "ANTHROPIC_API_KEY": "test-anthropic-key",
        "OPENAI_BASE_URL": provider.openai_base_url,
        "OPENAI_API_KEY": "test-openai-key",
    }
    command = [
        str(CELERY),
        "-A",
        "rubrics_app",
        "worker",
        "--pool=solo",
        "-c",
        "1",
        "-Q",
        queue,
        "-l",
        "INFO",
    ]
    command += [
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"calib-{os.getpid()}@%h",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while b"ready." not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the celery worker did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    provider: FakeProviderServer,
) -> Iterator[Path]:
    log = tmp_path_factory.mktemp("calibration-worker") / "worker.log"
    with django_db_blocker.unblock():
        url = database_url()
    with celery_worker(log, provider, url):
        yield log


def calibrate_command(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("calibrate", *args, stdout=out, stderr=io.StringIO())
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def use_fake_providers(repository: Repository, maintainer: User) -> None:
    set_judges(
        repository,
        by=Actor.member(maintainer),
        judge="anthropic:claude-sonnet-4-5-20250929",
        second_judge="openai:gpt-4o-2024-08-06",
    )


def test_calibrate_waits_for_the_worker_and_admits(
    worker: Path,
    provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
) -> None:
    use_fake_providers(repository, maintainer)
    revision = make_revision(RevisionStatus.APPROVED)
    before = len(provider.model_calls())
    code, out = calibrate_command(
        "--repository", repository.name, "--task", "fix_fraction_gt1", "--wait", "--timeout", "120",
        "--no-injection-suite",
    )  # fmt: skip
    assert code == 0, f"{out}\n{worker.read_text(errors='replace')}"
    assert "ok   lazy_comment calib/lazy.diff + reviewer comment" in out
    assert "admitted: fix_fraction_gt1 revision 1" in out and "kappa" in out
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
    run = CalibrationRun.objects.get(revision=revision)
    assert run.status == CalibrationStatus.PASSED and run.rows.count() == 5
    assert run.job is not None and Job.objects.get(pk=run.job.pk).status == JobStatus.DONE
    assert len(provider.model_calls()) - before == run.calls == 10  # both judges, every row


def test_calibrate_runs_the_injection_suite_by_default(
    worker: Path,
    provider: FakeProviderServer,
    make_revision: MakeRevision,
    maintainer: User,
    repository: Repository,
) -> None:
    use_fake_providers(repository, maintainer)
    revision = make_revision(RevisionStatus.APPROVED)
    before = len(provider.model_calls())
    code, out = calibrate_command(
        "--repository", repository.name, "--task", "fix_fraction_gt1", "--wait", "--timeout", "300"
    )
    assert code == 0, f"{out}\n{worker.read_text(errors='replace')}"
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
    assert len(provider.model_calls()) - before == run.calls == 2 * (5 + 2 * kinds)


def test_calibrate_exits_1_when_a_row_fails_and_2_on_bad_input(
    worker: Path, make_revision: MakeRevision, maintainer: User, repository: Repository, task: Any
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
    assert code == 1, f"{out}\n{worker.read_text(errors='replace')}"
    assert "FAIL lazy calib/lazy.diff" in out and "not admitted" in out
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
