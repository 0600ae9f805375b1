"""A real Celery worker process for the tests: its command, the test database's URL for it, the wait for a
job, and the environment it starts with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import Job, Repository, RevisionStatus, RubricRevision
from rubrics_app.services.judges import set_judges
from tests.app.command_helpers import command_exit
from tests.gitrepo import GitRepo
from tests.grading.judge.fake_servers import FakeProviderServer, provider_environment

ROOT = Path(__file__).resolve().parents[2]


CELERY = Path(sys.executable).parent / "celery"


# How long a test waits for a worker's event before it fails. The waits poll for the event and return as
# soon as it happens, so this bounds only a failure; it is generous because CI runs two suites at once,
# each with two pytest workers and their Celery workers, on two cores.
WAIT_SECONDS = 240


SONNET = "anthropic:claude-sonnet-4-5-20250929"


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"] or "")
    if db.get("PASSWORD"):
        auth += ":" + quote(db["PASSWORD"])
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def wait_for(job: Job, log: Path) -> Job:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        job.refresh_from_db()
        if job.is_finished:
            return job
        if time.monotonic() > deadline:
            pytest.fail(f"job {job.pk} still {job.status}; worker log:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)


@contextmanager
def celery_worker(
    log: Path, provider: FakeProviderServer | None, url: str, name: str = "calib"
) -> Iterator[subprocess.Popen[bytes]]:
    """A real worker on the test queue, ready when this yields; with ``provider``, its judges call that fake
    server (keys only from the worker's environment)."""
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
    }
    if provider is not None:
        env |= provider_environment(provider)
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
        f"{name}-{os.getpid()}@%h",
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


@contextmanager
def module_worker(
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    folder: str,
    provider: FakeProviderServer | None = None,
    name: str = "calib",
) -> Iterator[Path]:
    """A worker on the test database for a module's tests (``celery_worker``), its log in a new folder
    named after ``folder``: the log's path."""
    log = tmp_path_factory.mktemp(folder) / "worker.log"
    with django_db_blocker.unblock():
        url = database_url()
    with celery_worker(log, provider, url, name=name):
        yield log


def admitted_in_checkout(make_revision: Callable[..., RubricRevision], git_repo: GitRepo) -> RubricRevision:
    """An admitted revision whose repository's checkout is ``git_repo`` (one commit: a README), for an
    export job to write into."""
    git_repo.write("README.md", "project\n")
    git_repo.commit("base")
    revision = make_revision(RevisionStatus.ADMITTED)
    repository = revision.task.repository
    repository.checkout_path = str(git_repo.path)
    repository.save()
    return revision


def calibrate_command(*args: str) -> tuple[int, str]:
    return command_exit("calibrate", *args)


def use_fake_providers(repository: Repository, maintainer: User) -> None:
    set_judges(
        repository,
        by=Actor.member(maintainer),
        judge="anthropic:claude-sonnet-4-5-20250929",
        second_judge="openai:gpt-4o-2024-08-06",
    )


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
