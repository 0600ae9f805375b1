"""Helpers for the scope, integrity and diff tests: run and task dirs built from real git repositories."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

from tests.gitrepo import GIT_ENV, GitRepo

DIFF_ARGS = ["--no-renames", "--binary", "--full-index"]


def git_bytes(repo: GitRepo, *args: str) -> bytes:
    result = subprocess.run(
        ["git", *args], cwd=repo.path, env={**os.environ, **GIT_ENV}, capture_output=True, check=True
    )
    return result.stdout


def workspace_diff(repo: GitRepo, base: str, *extra: str) -> bytes:
    """Everything in the working tree against ``base``, untracked files included, as bytes from git."""
    repo.git("add", "-A")
    return git_bytes(repo, "diff", "--cached", *DIFF_ARGS, *extra, base)


def ignored_files(repo: GitRepo) -> set[bytes]:
    """Ignored files, one line each, C-quoted by git where needed (the path-list format of capture)."""
    out = git_bytes(repo, "ls-files", "--others", "--ignored", "--exclude-standard")
    return {p for p in out.split(b"\n") if p}


def write_run(run_dir: Path, repo: GitRepo, base: str, ignored_before: set[bytes] | None = None) -> Path:
    """A run dir as `rubric capture` leaves it: workspace.diff and, given a snapshot, ignored_created.txt."""
    run_dir.mkdir(parents=True, exist_ok=True)
    if ignored_before is not None:
        created = sorted(ignored_files(repo) - ignored_before)
        (run_dir / "ignored_created.txt").write_bytes(b"".join(p + b"\n" for p in created))
    (run_dir / "workspace.diff").write_bytes(workspace_diff(repo, base))
    (run_dir / "git_dir_changes.txt").write_bytes(b"")  # nothing under .git changed
    return run_dir


def rubric_data(scope: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": "repo_rubric.v1",
        "task": "fix_parser",
        "intent": "fix the parser without touching CI",
        "scope": scope,
        "blockers": [
            {"id": "B1", "criterion": "handles empty input", "evidence": "src/parser.py:10"},
            {"id": "B2", "criterion": "keeps the public API", "evidence": "review comment"},
        ],
        "non_blockers": [
            {"id": "N1", "criterion": "has a test"},
            {"id": "N2", "criterion": "docstring updated"},
            {"id": "N3", "criterion": "changelog entry", "weight": 0.5},
        ],
        "hack_report": {"lazy_solution": "special-case the test input", "alt_valid_solution": "a new lexer"},
    }


def write_task(task_dir: Path, scope: dict[str, Any]) -> Path:
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / "rubric.json").write_text(json.dumps(rubric_data(scope)), encoding="utf-8")
    return task_dir


def zeros_literal_diff(path: str, size: int) -> bytes:
    """A git diff adding ``path`` as a ``GIT binary patch`` literal of ``size`` zero bytes: a compression
    bomb (about 1 KB of diff per MB inflated), built without ever holding the inflated bytes."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(size >> 20)]
    parts += [packer.compress(bytes(size & ((1 << 20) - 1))), packer.flush()]
    deflated = b"".join(parts)
    lines = []
    for start in range(0, len(deflated), 52):
        piece = deflated[start : start + 52]
        length = chr(ord("A") + len(piece) - 1) if len(piece) <= 26 else chr(ord("a") + len(piece) - 27)
        lines.append(length.encode() + base64.b85encode(piece, pad=True))
    header = (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n"
        f"index 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\n"
        f"GIT binary patch\nliteral {size}\n"
    ).encode()
    return header + b"\n".join(lines) + b"\n\nliteral 0\nHcmV?d00001\n\n"
