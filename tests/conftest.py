from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo


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
