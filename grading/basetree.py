"""Read-only access to a repository at one commit, from its git objects (never from a work tree).

Drafting reads the base source of the files a PR touches and checks that a draft's ``path:line`` evidence
exists and that its diffs apply; all of it must come from the task's base commit, not from whatever the
checkout has on disk. git runs with the user's and the system's config switched off, and only plumbing
that runs no filter, hook or external command is used.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

from grading.errors import InputError


class BaseTree:
    """The tree of ``commit`` in the repository at ``checkout``."""

    def __init__(self, checkout: Path, commit: str) -> None:
        self.checkout = checkout
        if not checkout.is_dir():
            raise InputError(checkout, "repository checkout is not a directory")
        if not commit or commit.startswith("-"):
            raise InputError(None, f"not a commit: {commit!r}", "base_commit")
        out = self._git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", ok_codes=(0, 1))
        if not out.strip():
            raise InputError(checkout, f"commit {commit} is not in this repository", "base_commit")
        self.commit = out.decode().strip()

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k == "GIT_EXEC_PATH"}
        env.update(
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_ATTR_NOSYSTEM="1",
            GIT_OPTIONAL_LOCKS="0",
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
        )
        return env

    def _git(
        self,
        *args: str,
        stdin: bytes | None = None,
        ok_codes: Iterable[int] = (0,),
        env: dict[str, str] | None = None,
    ) -> bytes:
        try:
            result = subprocess.run(
                ["git", "--no-pager", *args],
                cwd=self.checkout,
                input=stdin,
                env=env or self._env(),
                capture_output=True,
                check=False,
            )
        except FileNotFoundError as exc:
            raise InputError(None, "git is not installed or not on PATH") from exc
        if result.returncode not in tuple(ok_codes):
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(
                self.checkout, f"git {args[0]} failed: {lines[-1] if lines else result.returncode}"
            )
        return result.stdout

    def paths(self) -> list[str]:
        """Every file path of the tree (blobs and symlinks), ``/``-separated."""
        out = self._git("ls-tree", "-r", "-z", "--name-only", self.commit)
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def read(self, path: str, max_bytes: int | None = None) -> bytes | None:
        """The bytes of ``path`` at the commit (at most ``max_bytes``), or None when there is no such file."""
        if path.startswith("-") or "\0" in path:
            return None
        spec = f"{self.commit}:{path}"
        kind = self._git("cat-file", "-t", spec, ok_codes=(0, 128)).strip()
        if kind != b"blob":
            return None
        data = self._git("cat-file", "blob", spec)
        return data if max_bytes is None else data[:max_bytes]

    def line_count(self, path: str) -> int | None:
        data = self.read(path)
        if data is None:
            return None
        return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)

    def apply_problem(self, diff_text: str) -> str | None:
        """Why ``diff_text`` does not apply to the commit's tree (``git apply --check`` on a scratch index),
        or None when it applies. The work tree and the real index are never touched."""
        if not diff_text.strip():
            return "the diff is empty"
        with tempfile.TemporaryDirectory(prefix="rubric-basetree-") as scratch:
            env = self._env()
            env["GIT_INDEX_FILE"] = str(Path(scratch) / "index")
            self._git("read-tree", self.commit, env=env)
            result = subprocess.run(
                ["git", "--no-pager", "apply", "--cached", "--check", "-"],
                cwd=self.checkout,
                input=diff_text.encode("utf-8", "surrogateescape"),
                env=env,
                capture_output=True,
                check=False,
            )
        if result.returncode == 0:
            return None
        lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
        return "; ".join(lines[:3]) or f"git apply exit code {result.returncode}"
