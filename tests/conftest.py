from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo

# The library's tests (tests/grading) use no database and no Celery broker: DATABASE_URL and
# CELERY_BROKER_URL change nothing for them. RUBRICS_LIBRARY_TESTS=skip leaves them uncollected, for the
# second pass of .ci/run (PostgreSQL + Redis), which would run the same 1,800 tests again; unset or `run`
# runs them.
LIBRARY_VARIABLE = "RUBRICS_LIBRARY_TESTS"
LIBRARY_TESTS = Path(__file__).parent / "grading"


def _library_tests_skipped() -> bool:
    mode = os.environ.get(LIBRARY_VARIABLE, "run")
    if mode not in ("run", "skip"):
        raise pytest.UsageError(f"{LIBRARY_VARIABLE}={mode!r}: it must be run or skip")
    return mode == "skip"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path == LIBRARY_TESTS and _library_tests_skipped():
        return True
    return None


BROWSER_TESTS = Path(__file__).parent / "browser"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The browser tests first (each file a minute or more of Chromium and a Celery worker): run in
    parallel (`-n auto --dist loadfile`, which hands out whole files in this order), they overlap with the
    app's many short files instead of running last with every other worker idle. No test depends on the
    order: each builds what it reads."""
    items.sort(key=lambda item: BROWSER_TESTS not in item.path.parents)


def pytest_report_header(config: pytest.Config) -> str | None:
    if _library_tests_skipped():
        return f"{LIBRARY_VARIABLE}=skip: tests/grading (no database, no broker) is not collected"
    return None


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail instead of hanging: a read that blocks (a FIFO) or a hash that never ends is interrupted after
    5 s. The test fails then whatever catches what: ``pytest.fail`` is no ``OSError`` (``TimeoutError`` is
    one, and code that takes an unreadable file for an absent one would swallow it)."""

    def expired(signum: int, frame: object) -> None:
        pytest.fail("blocked for 5 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
