"""Build the example task's repository: ``examples/base_repo`` committed as one base commit.

Usable as ``build_example_repo(dest)`` (returns the base commit sha) or as a script:
``python -m examples.build DEST`` prints the sha.

The commit is reproducible: fixed author, committer and dates, and git's system and global config
ignored, so every machine gets the same sha (``tasks/<task-id>/task.json`` records it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
BASE_REPO = EXAMPLES / "base_repo"
TASKS = EXAMPLES / "tasks"
RUNS = EXAMPLES / "runs"
MANIFEST = EXAMPLES / "repo_manifest.yaml"
JUDGE_SCRIPTED = EXAMPLES / "judge_scripted.json"
TASK_ID = "fix_clockwise_polygon_area"

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Example Maintainer",
    "GIT_AUTHOR_EMAIL": "maintainer@example.com",
    "GIT_COMMITTER_NAME": "Example Maintainer",
    "GIT_COMMITTER_EMAIL": "maintainer@example.com",
    "GIT_AUTHOR_DATE": "2026-01-05T09:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-05T09:00:00Z",
}

# Caches a test run may leave in the source tree; never part of the base commit.
_LEFTOVERS = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc", "build", "*.log")


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with the isolated environment; raise RuntimeError with git's message."""
    result = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode()


def build_example_repo(dest: Path) -> str:
    """Copy ``base_repo`` into ``dest`` (which must not exist or be empty), commit it, return the sha."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    shutil.copytree(BASE_REPO, dest, ignore=_LEFTOVERS, dirs_exist_ok=True)
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "shapes 0.3.0")
    return git(dest, "rev-parse", "HEAD").strip()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m examples.build DEST", file=sys.stderr)
        return 2
    try:
        print(build_example_repo(Path(args[0])))
    except (FileExistsError, RuntimeError) as exc:
        print(f"examples.build: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
