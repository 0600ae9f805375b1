"""Jobs never hang: a job whose worker is killed (kill -9) is reaped and run again by another worker, with
real worker processes on the configured broker and database; and the reaper's decisions, in process."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import ExportResult, Job, JobKind, JobStatus, RubricRevision
from rubrics_app.services.jobs import finish, reap
from rubrics_app.services.rubrics import exports
from tests.app.conftest import MakeRevision
from tests.app.worker_helpers import CELERY, ROOT, WAIT_SECONDS, admitted_in_checkout, database_url, wait_for
from tests.gitrepo import GitRepo

# Short enough for a test, in the proportions of the defaults (lost after several missed beats).
FAST_JOBS = {"JOB_HEARTBEAT_SECONDS": "1", "JOB_LOST_AFTER_SECONDS": "4", "JOB_REAP_EVERY_SECONDS": "1"}


class Worker:
    """A celery worker in a process group of its own, so kill -9 takes its children (git) with it."""

    def __init__(self, log: Path, env: dict[str, str], args: list[str]) -> None:
        self.log = log
        queue = celery_app.conf.task_default_queue
        assert queue.startswith("rubrics-test-")  # never the demo's queue
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "rubrics_app.settings",
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "RUBRICS_VAR_DIR": str(settings.VAR_DIR),
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "PYTHONWARNINGS": "ignore",
            **FAST_JOBS,
            **env,
        }
        command = [str(CELERY), "-A", "rubrics_app", "worker", "--pool=solo", "-c", "1", "-Q", queue]
        command += ["-l", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat", *args]
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + WAIT_SECONDS
        while b"ready." not in log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the celery worker did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def wait_until(what: str, check: Any, log: Path) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen; worker log:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_a_job_whose_worker_is_killed_is_run_again_by_another_worker(
    make_revision: MakeRevision,
    git_repo: GitRepo,
    maintainer: User,
    tmp_path: Path,
    workers: list[Worker],
) -> None:
    revision = admitted_in_checkout(make_revision, git_repo)
    repository = revision.task.repository

    # The first worker finds a git that never returns, so the export is mid-run when the worker dies.
    stuck = tmp_path / "stuck-bin"
    stuck.mkdir()
    inside = tmp_path / "inside-git"
    (stuck / "git").write_text(f'#!/bin/sh\ntouch "{inside}"\nexec sleep 600\n')
    (stuck / "git").chmod(0o755)
    first = Worker(tmp_path / "first.log", {"PATH": f"{stuck}:{os.environ['PATH']}"}, [])
    workers.append(first)

    job = exports.start_export(revision, Actor.member(maintainer), branch="rubrics/after-a-lost-worker")
    wait_until("the job reaching git", inside.exists, first.log)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (JobStatus.RUNNING, 1)
    started = job.heartbeat_at
    assert started is not None
    wait_until(
        "a heartbeat",
        lambda: Job.objects.get(pk=job.pk).heartbeat_at > started,  # type: ignore[operator]
        first.log,
    )

    first.kill()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING  # nobody is left to say otherwise

    # A second worker: its reaper finds the job lost and queues it again, and the worker runs it.
    second = Worker(tmp_path / "second.log", {}, [])
    workers.append(second)
    job = wait_for(job, second.log)
    assert job.status == JobStatus.DONE, job.error
    assert job.attempts == 2
    assert job.result is not None
    assert job.result["commit"] == git_repo.git("rev-parse", "rubrics/after-a-lost-worker").strip()
    assert f"job {job.pk}: worker lost; queued again (attempt 2)" in second.log.read_text()

    client = Client()
    client.force_login(maintainer)
    page = client.get(reverse("rubrics:job_detail", args=[repository.pk, job.pk])).content.decode()
    assert "Attempt 2 (an earlier worker was lost)." in page


# --- the reaper's decisions, in process ------------------------------------------------------------------


def running_job(revision: RubricRevision, *, beat_seconds_ago: float, attempts: int = 1) -> Job:
    beat = timezone.now() - timedelta(seconds=beat_seconds_ago)
    return Job.objects.create(
        kind=JobKind.EXPORT_REVISION,
        repository=revision.task.repository,
        revision=revision,
        status=JobStatus.RUNNING,
        started_at=beat,
        heartbeat_at=beat,
        attempts=attempts,
    )


def test_a_job_with_a_fresh_heartbeat_is_left_alone(draft_revision: RubricRevision) -> None:
    job = running_job(draft_revision, beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS / 2)
    assert reap().requeued == reap().failed == []
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING


def test_a_lost_job_is_queued_again_and_sent(
    draft_revision: RubricRevision, django_capture_on_commit_callbacks: Any
) -> None:
    job = running_job(draft_revision, beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS + 1)
    with django_capture_on_commit_callbacks() as sent:
        assert reap().requeued == [job.pk]
    assert len(sent) == 1  # the job's task, sent once the row says queued
    job.refresh_from_db()
    assert (job.status, job.started_at, job.heartbeat_at) == (JobStatus.QUEUED, None, None)


def test_a_job_lost_on_its_last_attempt_fails_with_worker_lost(
    draft_revision: RubricRevision, maintainer: User
) -> None:
    job = running_job(
        draft_revision,
        beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS + 1,
        attempts=settings.JOB_MAX_ATTEMPTS,
    )
    assert reap().failed == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error == (
        f"worker lost: no heartbeat for {settings.JOB_LOST_AFTER_SECONDS} s "
        f"(claimed {settings.JOB_MAX_ATTEMPTS} times)"
    )
    client = Client()
    client.force_login(maintainer)
    url = reverse("rubrics:job_detail", args=[job.repository_id, job.pk])
    assert "worker lost: no heartbeat" in client.get(url).content.decode()
    partial = client.get(url, headers={"HX-Request": "true"})
    assert partial.status_code == 286  # htmx stops polling an ended job
    assert "hx-trigger" not in partial.content.decode()


def test_a_running_job_s_partial_keeps_polling(draft_revision: RubricRevision, viewer: User) -> None:
    job = running_job(draft_revision, beat_seconds_ago=0)
    client = Client()
    client.force_login(viewer)
    url = reverse("rubrics:job_detail", args=[job.repository_id, job.pk])
    partial = client.get(url, headers={"HX-Request": "true"})
    assert partial.status_code == 200
    assert 'hx-trigger="every 2s"' in partial.content.decode()


def test_an_outsider_does_not_see_the_job(draft_revision: RubricRevision, outsider: User) -> None:
    job = running_job(draft_revision, beat_seconds_ago=0)
    client = Client()
    client.force_login(outsider)
    assert client.get(reverse("rubrics:job_detail", args=[job.repository_id, job.pk])).status_code == 404


def test_the_reap_command_sends_the_reaper(
    draft_revision: RubricRevision, capsys: pytest.CaptureFixture[str]
) -> None:
    running_job(draft_revision, beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS + 1)
    call_command("reap_jobs")
    assert "reaper sent; 1 job looks lost now" in capsys.readouterr().out


def test_the_vendor_is_one_the_worker_tests_cover() -> None:
    assert connection.vendor in {"sqlite", "postgresql"}


def test_a_run_taken_for_lost_does_not_overwrite_the_run_after_it(draft_revision: RubricRevision) -> None:
    # The reaper queued the job again and another worker claimed it (attempt 2); the first worker was only
    # slow, and now finishes its attempt 1.
    job = running_job(draft_revision, beat_seconds_ago=0, attempts=2)
    first_attempt = Job.objects.get(pk=job.pk)
    first_attempt.attempts = 1
    result = ExportResult(root="/checkout", paths=["tasks/t/rubric.json"], branch=None, commit=None)
    finish(first_attempt, JobStatus.DONE, result=result)
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.RUNNING, None)
    finish(job, JobStatus.DONE, result=result)
    job.refresh_from_db()
    assert (job.status, job.result) == (JobStatus.DONE, result.model_dump(mode="json"))


def test_the_reap_command_waits_and_prints_what_became_of_each_job(
    draft_revision: RubricRevision, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The job runs in this process (as CELERY_TASK_ALWAYS_EAGER would); --wait reads what it left.
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    lost = running_job(draft_revision, beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS + 1)
    done = running_job(
        draft_revision,
        beat_seconds_ago=settings.JOB_LOST_AFTER_SECONDS + 1,
        attempts=settings.JOB_MAX_ATTEMPTS,
    )
    call_command("reap_jobs", "--wait", "--timeout", "30")
    out = capsys.readouterr().out.splitlines()
    assert f"job {lost.pk} (export_revision): queued again (now queued)" in out
    assert any(line.startswith(f"job {done.pk} (export_revision): failed: worker lost") for line in out)
    assert out[-1] == "reaped 2 lost jobs, 0 unclaimed jobs"
