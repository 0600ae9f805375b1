"""Sweeps under faults: Redis restarted mid-sweep (a redis-server of this test's own, on a free port), and
the database connection dropped mid-sweep (pg_terminate_backend on PostgreSQL; the connection closed under
Django on SQLite). Either way every run ends up graded once, or the job is failed with its reason.

(A killed worker: test_sweep_killed_worker.py; the model API failing for a while: test_sweeps.py.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import ItemVerdict, Job, JobStatus, JudgeSetting, Repository, RubricRevision, RunGrade
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import sweep_runs
from tests.app.redis_helpers import OwnRedis, own_redis_fixture
from tests.app.sweep_helpers import import_runs
from tests.app.worker_helpers import SONNET, WAIT_SECONDS, celery_worker, database_url, environment
from tests.grading.judge.fake_servers import FakeProviderServer, fake_server_fixture

__all__ = ["fake_server_fixture", "own_redis_fixture"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def test_redis_restarted_mid_sweep_the_job_still_finishes_with_every_run_graded_once(
    own_redis: OwnRedis,
    fake_server: FakeProviderServer,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
) -> None:
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET)
    import_runs(repository, tmp_path / "runs", 6)
    fake_server.latency = 0.4
    log = tmp_path / "worker.log"
    env = {"SWEEP_PROVIDER_LIMITS": "anthropic=2", "CELERY_BROKER_URL": own_redis.url}
    previous = settings.CELERY_BROKER_URL
    settings.CELERY_BROKER_URL = own_redis.url  # what the worker reads, through celery_worker's env
    try:
        with environment(env), celery_worker(log, fake_server, database_url()):
            sweep = sweeps.new_sweep(repository, Actor.member(maintainer), sweeps.SweepRequest())
            with celery_app.connection_for_write(own_redis.url) as broker:
                sweep_runs.apply_async((sweep.job_id,), connection=broker)  # type: ignore[call-arg]  # not in celery-types
            deadline = time.monotonic() + WAIT_SECONDS
            while not RunGrade.objects.exists():
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.05)
            own_redis.stop()  # every message and the broker connection gone mid-sweep
            own_redis.start()
            job = Job.objects.get(pk=sweep.job_id)
            while not job.is_finished:
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.1)
                job.refresh_from_db()
    finally:
        settings.CELERY_BROKER_URL = previous
        fake_server.latency = 0.0
    # The job needs the broker only to be delivered: it finishes, and ends once.
    assert job.status == JobStatus.DONE, job.error
    assert job.attempts == 1
    grades = list(RunGrade.objects.order_by("run__repetition"))
    assert [g.run.repetition for g in grades] == list(range(6))
    assert ItemVerdict.objects.count() == 6 * 4


def drop_the_connection() -> None:
    """Take the database connection away from under Django, as a server restart or a proxy would."""
    if connection.vendor == "postgresql":
        import psycopg

        db = connection.settings_dict
        with psycopg.connect(
            host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"],
            password=db.get("PASSWORD") or None, autocommit=True,
        ) as admin:  # fmt: skip
            # Every other connection of the test database: this thread's, and the verdict cache's.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
    else:
        assert connection.connection is not None
        connection.connection.close()


def test_the_database_connection_dropped_mid_sweep_loses_no_grade_and_duplicates_none(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path, settings: Any
) -> None:
    import_runs(repository, tmp_path / "runs", 5)
    drops: list[int] = []

    def after_each_grade(run_pk: int) -> None:
        if len(drops) < 2:  # twice: after the first grade and after the second
            drops.append(run_pk)
            drop_the_connection()

    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), on_stored=after_each_grade)
    job = Job.objects.get(pk=sweep.job_id)
    assert len(drops) == 2
    assert job.status == JobStatus.DONE, job.error
    grades = list(RunGrade.objects.order_by("run__repetition"))
    assert [g.run.repetition for g in grades] == list(range(5))
    assert ItemVerdict.objects.count() == 5 * 4
    assert (sweep.done_runs, sweep.graded_runs) == (5, 5)
