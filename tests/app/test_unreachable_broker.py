"""No job is lost when the broker is (services/jobs.py ``send``). The broker is a redis-server of the test's
own, stopped: its port is closed, a real "unreachable". Every page and command that starts a job then says
so, its job ends failed in the same request and nothing stays queued; once the same server is back at the
same URL, the same request starts a new job, whose message is in the queue. And the reaper sends again a
queued job that no worker claimed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationRun,
    CalibrationStatus,
    Job,
    JobKind,
    JobStatus,
    Repository,
    RubricDraft,
    RubricRevision,
    Task,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.run import calibrate_revision
from rubrics_app.services.jobs import UNSENT_ERROR, reap
from tests.app.drafting_helpers import set_up_drafting
from tests.app.redis_helpers import OwnRedis, own_redis_fixture
from tests.app.sweep_helpers import import_runs
from tests.app.worker_helpers import ROOT, database_url

__all__ = ["own_redis_fixture"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

UNREACHABLE = "the job queue is unreachable; nothing was started"


@pytest.fixture
def broker(own_redis: OwnRedis, monkeypatch: pytest.MonkeyPatch) -> OwnRedis:
    """Where jobs are sent: the test's own redis-server, stopped until the test starts it again."""
    # The session's connection pools are made now, for the session's broker (report_changed sends through
    # them), so that none is made for this one.
    assert celery_app.producer_pool is not None
    own_redis.stop()
    monkeypatch.setitem(celery_app.conf, "broker_write_url", own_redis.url)
    return own_redis


def waiting_messages(broker: OwnRedis) -> int:
    client = redis.Redis.from_url(broker.url, socket_timeout=5)
    try:
        return int(client.llen(celery_app.conf.task_default_queue))
    finally:
        client.close()


def nothing_queued() -> bool:
    running = [CalibrationStatus.QUEUED, CalibrationStatus.RUNNING]
    return (
        not Job.objects.filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists()
        and not CalibrationRun.objects.filter(status__in=running).exists()
    )


# --- the pages ----------------------------------------------------------------------------------------------

PAGES = {
    "draft from PR": JobKind.DRAFT_RUBRIC,
    "calibrate": JobKind.CALIBRATE_REVISION,
    "admit (calibrating first)": JobKind.CALIBRATE_REVISION,
    "sweep": JobKind.SWEEP,
    "write to the checkout": JobKind.EXPORT_REVISION,
}


def page_request(what: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The URL and form of the page that starts ``what``, with what it needs stored."""
    repository: Repository = request.getfixturevalue("repository")
    if what == "draft from PR":
        task: Task = request.getfixturevalue("task")
        set_up_drafting(repository, task, request.getfixturevalue("git_repo"))
        return reverse("rubrics:draft_start", args=[repository.pk, task.pk]), {"pr_number": 7}
    if what in ("calibrate", "admit (calibrating first)"):
        revision = request.getfixturevalue("approved_revision")
        name = "revision_calibration_start" if what == "calibrate" else "revision_admit"
        return reverse(f"rubrics:{name}", args=[repository.pk, revision.pk]), {}
    revision = request.getfixturevalue("admitted_revision")
    if what == "sweep":
        import_runs(repository, tmp_path / "runs", 1)
        return reverse("rubrics:sweep_start", args=[repository.pk]), {}
    return reverse("rubrics:export_checkout", args=[repository.pk, revision.pk]), {}


@pytest.mark.parametrize("what", PAGES)
def test_a_page_says_the_queue_is_unreachable_and_starts_a_new_job_once_it_is_back(
    what: str, broker: OwnRedis, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url, form = page_request(what, request, tmp_path)
    client = Client()
    client.force_login(request.getfixturevalue("maintainer"))

    response = client.post(url, form, follow=True)
    assert response.status_code == 200
    assert UNREACHABLE in response.content.decode()
    failed = Job.objects.get(kind=PAGES[what])
    assert (failed.status, failed.error, failed.sent_at) == (JobStatus.FAILED, UNSENT_ERROR, None)
    assert nothing_queued()
    # Asked again while the broker is still away: no job to join, a new one fails the same way.
    assert UNREACHABLE in client.post(url, form, follow=True).content.decode()
    assert Job.objects.filter(kind=PAGES[what], status=JobStatus.FAILED).count() == 2
    assert nothing_queued()

    broker.start()
    response = client.post(url, form, follow=True)
    assert response.status_code == 200
    assert UNREACHABLE not in response.content.decode()
    started = Job.objects.filter(kind=PAGES[what]).exclude(status=JobStatus.FAILED).get()
    assert started.status == JobStatus.QUEUED and started.sent_at is not None
    assert waiting_messages(broker) == 1
    if PAGES[what] == JobKind.CALIBRATE_REVISION:
        assert CalibrationRun.objects.get(status=CalibrationStatus.QUEUED).job == started
    if PAGES[what] == JobKind.DRAFT_RUBRIC:
        assert RubricDraft.objects.get(job=started).pr_number == 7


def test_the_htmx_request_is_sent_where_the_message_shows(
    broker: OwnRedis, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url, form = page_request("calibrate", request, tmp_path)
    client = Client()
    client.force_login(request.getfixturevalue("maintainer"))
    response = client.post(url, form, headers={"HX-Request": "true"})
    revision = request.getfixturevalue("approved_revision")
    assert response["HX-Redirect"] == reverse(
        "rubrics:revision_detail", args=[revision.task.repository_id, revision.pk]
    )
    assert UNREACHABLE in client.get(response["HX-Redirect"]).content.decode()


# --- the commands -------------------------------------------------------------------------------------------


def command_args(what: str, request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    repository: Repository = request.getfixturevalue("repository")
    where = ["--repository", repository.name]
    if what == "draft":
        task: Task = request.getfixturevalue("task")
        set_up_drafting(repository, task, request.getfixturevalue("git_repo"))
        return ["draft", *where, "--task", task.task_id, "--pr", "7"]
    if what == "calibrate":
        revision = request.getfixturevalue("approved_revision")
        return ["calibrate", *where, "--task", revision.task.task_id]
    if what == "sweep":
        request.getfixturevalue("admitted_revision")
        import_runs(repository, tmp_path / "runs", 1)
        return ["sweep", *where]
    return ["check_evidence", *where, "--send"]


def manage(args: list[str], broker_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "rubrics_app.settings",
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": broker_url,
        "RUBRICS_VAR_DIR": str(settings.VAR_DIR),
        "CELERY_TASK_DEFAULT_QUEUE": celery_app.conf.task_default_queue,
        "PYTHONWARNINGS": "ignore",
    }
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


COMMANDS = {
    "draft": JobKind.DRAFT_RUBRIC,
    "calibrate": JobKind.CALIBRATE_REVISION,
    "sweep": JobKind.SWEEP,
    "check_evidence": JobKind.CHECK_EVIDENCE,
}


@pytest.mark.parametrize("what", COMMANDS)
def test_a_command_exits_1_with_one_line_and_sends_a_new_job_once_the_queue_is_back(
    what: str, broker: OwnRedis, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    args = command_args(what, request, tmp_path)
    done = manage(args, broker.url)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("CommandError: the job queue is unreachable (Error 111 connecting to 127.0.0.1:")
    assert line.endswith("; nothing was started")
    [failed] = Job.objects.filter(kind=COMMANDS[what])
    assert (failed.status, failed.error) == (JobStatus.FAILED, UNSENT_ERROR)
    assert nothing_queued()

    broker.start()
    call_command(*args)  # in this process, sent to the same broker (the fixture's)
    started = Job.objects.filter(kind=COMMANDS[what]).exclude(pk=failed.pk).get()
    assert started.status == JobStatus.QUEUED and started.sent_at is not None
    assert waiting_messages(broker) == 1


def test_the_reap_command_exits_1_with_one_line(broker: OwnRedis) -> None:
    done = manage(["reap_jobs"], broker.url)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("CommandError: the job queue is unreachable (")


# --- the reaper ---------------------------------------------------------------------------------------------


def queued_job(repository: Repository, *, sent_seconds_ago: float | None, created_seconds_ago: float) -> Job:
    now = timezone.now()
    return Job.objects.create(
        kind=JobKind.CHECK_EVIDENCE,
        repository=repository,
        created_at=now - timedelta(seconds=created_seconds_ago),
        sent_at=None if sent_seconds_ago is None else now - timedelta(seconds=sent_seconds_ago),
    )


def test_the_reaper_sends_again_a_queued_job_no_worker_claimed(
    broker: OwnRedis, repository: Repository
) -> None:
    bound = settings.JOB_QUEUED_LOST_AFTER_SECONDS
    broker.start()
    unclaimed = queued_job(repository, sent_seconds_ago=bound + 1, created_seconds_ago=bound + 5)
    never_sent = queued_job(repository, sent_seconds_ago=None, created_seconds_ago=bound + 1)
    waiting = queued_job(repository, sent_seconds_ago=bound / 2, created_seconds_ago=bound + 5)
    fresh = queued_job(repository, sent_seconds_ago=None, created_seconds_ago=0)
    reaped = reap()
    assert reaped.resent == [unclaimed.pk, never_sent.pk] and reaped.failed == []
    assert waiting_messages(broker) == 2
    for job in (unclaimed, never_sent):
        before = job.sent_at
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED and job.sent_at is not None and job.sent_at != before
    for job in (waiting, fresh):
        sent_at = job.sent_at
        job.refresh_from_db()
        assert job.status == JobStatus.QUEUED and job.sent_at == sent_at
    # Sent again just now: the next round leaves them be.
    assert reap().resent == []


def test_the_reaper_fails_a_queued_job_it_cannot_send(broker: OwnRedis, repository: Repository) -> None:
    bound = settings.JOB_QUEUED_LOST_AFTER_SECONDS
    unclaimed = queued_job(repository, sent_seconds_ago=bound + 1, created_seconds_ago=bound + 5)
    reaped = reap()
    assert reaped.failed == [unclaimed.pk] and reaped.resent == []
    unclaimed.refresh_from_db()
    assert (unclaimed.status, unclaimed.error) == (JobStatus.FAILED, UNSENT_ERROR)


def waiting_tasks(broker: OwnRedis) -> list[tuple[str, str]]:
    """The task name and arguments of each message waiting in the test queue (kombu's JSON envelope)."""
    client = redis.Redis.from_url(broker.url, socket_timeout=5)
    try:
        raw = client.lrange(celery_app.conf.task_default_queue, 0, -1)
    finally:
        client.close()
    return [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in map(json.loads, raw)]


def started_calibration(broker: OwnRedis, revision: RubricRevision, by: User) -> CalibrationRun:
    """A calibration sent to the test's broker, which is started first."""
    broker.start()
    return calibration.start(revision, Actor.member(by))


def test_a_calibration_whose_message_the_broker_lost_is_sent_again_and_runs(
    broker: OwnRedis, approved_revision: RubricRevision, maintainer: User
) -> None:
    run = started_calibration(broker, approved_revision, maintainer)
    assert run.job is not None
    assert waiting_tasks(broker) == [(calibrate_revision.name, f"({run.job.pk},)")]
    redis.Redis.from_url(broker.url).delete(celery_app.conf.task_default_queue)  # the broker lost it
    bound = settings.JOB_QUEUED_LOST_AFTER_SECONDS
    assert reap().resent == []  # not yet: a message may wait that long
    reaped = reap(now=timezone.now() + timedelta(seconds=bound + 1))
    assert reaped.resent == [run.job.pk] and reaped.failed == []
    assert waiting_tasks(broker) == [(calibrate_revision.name, f"({run.job.pk},)")]
    # The worker that takes the message runs the same job and its run (here, in this process).
    calibrate_revision(run.job.pk)
    run.refresh_from_db()
    assert run.status == CalibrationStatus.PASSED, run.reason
    job = Job.objects.get(pk=run.job.pk)
    assert (job.status, job.attempts) == (JobStatus.DONE, 1)


def test_a_calibration_whose_message_cannot_be_sent_again_is_failed_with_its_job(
    broker: OwnRedis, approved_revision: RubricRevision, maintainer: User
) -> None:
    run = started_calibration(broker, approved_revision, maintainer)
    assert run.job is not None
    broker.stop()  # the message is lost with the broker, which is still down when the reaper looks
    bound = settings.JOB_QUEUED_LOST_AFTER_SECONDS
    reaped = reap(now=timezone.now() + timedelta(seconds=bound + 1))
    assert reaped.failed == [run.job.pk] and reaped.resent == []
    run.refresh_from_db()
    assert run.status == CalibrationStatus.ERROR and UNSENT_ERROR in run.reason
    assert nothing_queued()
