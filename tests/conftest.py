from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")
