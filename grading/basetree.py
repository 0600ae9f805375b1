"""Read-only access to a repository at one commit, from its git objects (never from a work tree).

Drafting reads the base source of the files a PR touches and checks that a draft's ``path:line`` evidence
exists and that its diffs apply; all of it must come from the task's base commit, not from whatever the
checkout has on disk. git runs through grading.git (the user's and the system's config switched off, each
call bounded in time and output), and only plumbing that runs no filter, hook or external command is used.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from grading.errors import InputError
from grading.git import Git, GitTimeout

GIT_TIMEOUT = 120.0  # seconds for one plumbing call (grep has its own, shorter, bound)

EntryKind = Literal["file", "dir", "symlink", "submodule"]
_KINDS: dict[str, EntryKind] = {"blob": "file", "tree": "dir", "commit": "submodule"}


class TreeEntry(BaseModel):
    """One entry of a directory at the commit, as ``git ls-tree --long`` lists it."""

    name: str
    kind: EntryKind
    object_id: str
    size: int | None = None  # bytes of a file or symlink target; None for a directory or submodule
    # False when the repository does not hold the object (a partial clone, a pruned or damaged object
    # store): ``git ls-tree --long`` prints ``BAD`` for its size, and reading it fails.
    available: bool = True


class GrepTimeout(Exception):
    """``git grep`` ran longer than it was allowed to."""


class ObjectMissing(Exception):
    """The commit's tree names an object this repository does not hold (a partial clone, a pruned or
    damaged object store). ``what`` is the path or object id asked for."""

    def __init__(self, what: str) -> None:
        super().__init__(f"object not available in this checkout: {what}")
        self.what = what


# How ``git grep`` names an object it could not read: "error: '<commit>:<path>': unable to read <oid>".
_GREP_UNREADABLE = re.compile(rb"^error: '(.*)': unable to read [0-9a-f]+$", re.MULTILINE)
# A directory whose tree object is missing stops ``git grep``: "fatal: unable to read tree (<oid>)".
_GREP_NO_TREE = re.compile(rb"^fatal: unable to read tree \(?([0-9a-f]+)\)?$", re.MULTILINE)
# A search goes around at most this many missing directories before it gives up.
MAX_MISSING_TREES = 10


class BaseTree:
    """The tree of ``commit`` in the repository at ``checkout``."""

    def __init__(self, checkout: Path, commit: str) -> None:
        self.checkout = checkout
        if not checkout.is_dir():
            raise InputError(checkout, "repository checkout is not a directory")
        # refs/replace could make the commit's objects read as other content (a checkout where someone ran
        # `git replace`): the commit id must mean the same bytes everywhere.
        self.git = Git(checkout, {"GIT_NO_REPLACE_OBJECTS": "1"}, timeout=GIT_TIMEOUT)
        if not commit or commit.startswith("-"):
            raise InputError(None, f"not a commit: {commit!r}", "base_commit")
        out = self._git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", ok_codes=(0, 1))
        if not out.strip():
            raise InputError(checkout, f"commit {commit} is not in this repository", "base_commit")
        self.commit = out.decode().strip()

    def _git(self, *args: str, stdin: bytes | None = None, ok_codes: Iterable[int] = (0,)) -> bytes:
        return self.git.run(*args, stdin=stdin, ok_codes=ok_codes)

    def entries(self, directory: str) -> list[TreeEntry] | None:
        """The entries of ``directory`` ("" for the root) at the commit, or None when it is not a directory
        there. ``directory`` is taken literally (no globbing); callers check it stays inside the tree.
        Raises :class:`ObjectMissing` when the directory's own tree object is not in the repository; an
        entry whose object is missing is listed with ``available=False``."""
        if directory.startswith("-") or "\0" in directory:
            return None
        spec = f"{self.commit}:{directory}"
        if self._git("cat-file", "-t", spec, ok_codes=(0, 128)).strip() != b"tree":
            if directory and self._object_missing(spec):
                raise ObjectMissing(directory)
            return None
        out: list[TreeEntry] = []
        for record in self._git("ls-tree", "-z", "--long", spec).split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, kind, object_id, size = meta.split()
            entry_kind: EntryKind = "symlink" if mode == b"120000" else _KINDS.get(kind.decode(), "file")
            sized = entry_kind in ("file", "symlink")
            out.append(
                TreeEntry(
                    name=os.fsdecode(name),
                    kind=entry_kind,
                    object_id=object_id.decode(),
                    size=int(size) if sized and size.isdigit() else None,
                    # git prints "BAD" for a blob it cannot find; a tree's or submodule's size is "-".
                    available=not sized or size.isdigit(),
                )
            )
        return out

    def _object_missing(self, spec: str) -> bool:
        """Whether ``spec`` (``commit:path``) names an object that its parent tree lists but the repository
        does not hold (``rev-parse`` finds the id, ``cat-file -e`` cannot read it)."""
        object_id = self._git("rev-parse", "--verify", "--quiet", spec, ok_codes=(0, 1, 128)).strip()
        if not object_id:
            return False
        return self._git_code("cat-file", "-e", object_id.decode()) != 0

    def _git_code(self, *args: str) -> int:
        return self.git.code(*args)

    def blob(self, object_id: str) -> bytes:
        """The bytes of a blob by its object id (an entry of :meth:`entries`); :class:`ObjectMissing` when
        the repository does not hold it."""
        if object_id.startswith("-") or self._git_code("cat-file", "-e", object_id) != 0:
            raise ObjectMissing(object_id)
        return self._git("cat-file", "blob", object_id)

    def grep(
        self,
        pattern: str,
        pathspecs: Iterable[str] = (),
        *,
        fixed: bool = False,
        ignore_case: bool = False,
        timeout: float = 20.0,
    ) -> list[tuple[str, int, str]]:
        """``git grep`` over the commit's tree (never the work tree): (path, line number, line) per match,
        text files only. ``pathspecs`` are literal paths (a directory matches what is under it).
        Raises :class:`GrepTimeout` past ``timeout`` seconds, InputError for a pattern git refuses."""
        matches, _ = self.grep_report(
            pattern, pathspecs, fixed=fixed, ignore_case=ignore_case, timeout=timeout
        )
        return matches

    def grep_report(
        self,
        pattern: str,
        pathspecs: Iterable[str] = (),
        *,
        fixed: bool = False,
        ignore_case: bool = False,
        timeout: float = 20.0,
    ) -> tuple[list[tuple[str, int, str]], list[str]]:
        """:meth:`grep`, and the paths git could not search because the repository does not hold their
        object: git reports a missing file and searches on; a missing directory stops it, so the search is
        run again around that directory (its siblings and its parents' siblings, within ``pathspecs``)."""
        args = ["--literal-pathspecs", "grep", "-n", "-z", "-I", "--no-color"]
        args += ["-F"] if fixed else ["-E"]
        if ignore_case:
            args.append("-i")
        args += ["-e", pattern, self.commit, "--"]
        specs = list(pathspecs) or [""]
        missing_dirs: list[str] = []
        while True:
            try:
                result = self.git.result(*args, *[s for s in specs if s], timeout=timeout)
            except GitTimeout:
                raise GrepTimeout(f"git grep ran longer than {timeout:g}s") from None
            no_tree = _GREP_NO_TREE.search(result.stderr) if result.returncode == 128 else None
            if no_tree is None or len(missing_dirs) == MAX_MISSING_TREES:
                break
            directory = self._tree_path(no_tree.group(1).decode(), specs)
            if directory is None or directory in missing_dirs:
                break
            missing_dirs.append(directory)
            specs = self._around(specs, directory)
            if not specs:  # the search covered nothing but missing directories
                return [], missing_dirs
        prefix = f"{self.commit}:".encode()
        unreadable = list(  # git may report one object twice
            dict.fromkeys(
                [
                    *missing_dirs,
                    *(
                        os.fsdecode(m[len(prefix) :] if m.startswith(prefix) else m)
                        for m in _GREP_UNREADABLE.findall(result.stderr)
                    ),
                ]
            )
        )
        if result.returncode == 1:
            return [], unreadable
        if result.returncode != 0:
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(None, f"git grep: {lines[-1] if lines else result.returncode}", "pattern")
        matches: list[tuple[str, int, str]] = []
        data, at = result.stdout, 0
        # Each match is "<commit>:<path>\0<line>\0<text>\n"; a path may hold a newline, so read by field.
        while at < len(data):
            path_end = data.find(b"\0", at)
            line_end = data.find(b"\0", path_end + 1) if path_end >= 0 else -1
            if line_end < 0:
                break
            text_end = data.find(b"\n", line_end + 1)
            text_end = len(data) if text_end < 0 else text_end
            path = data[at:path_end]
            if path.startswith(prefix):
                matches.append(
                    (
                        os.fsdecode(path[len(prefix) :]),
                        int(data[path_end + 1 : line_end]),
                        data[line_end + 1 : text_end].decode("utf-8", "replace"),
                    )
                )
            at = text_end + 1
        return matches, unreadable

    def _tree_path(self, object_id: str, specs: list[str]) -> str | None:
        """The path, within ``specs``, of the directory whose tree object is ``object_id`` (listed by its
        parent, which the repository holds); None when no listing names it."""
        out = self._git(
            "--literal-pathspecs",
            "ls-tree",
            "-r",
            "-t",
            "-z",
            self.commit,
            "--",
            *[s for s in specs if s],
            ok_codes=(0, 1, 128),  # git stops at the missing tree, having listed the entry naming it
        )
        for record in out.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == b"tree" and fields[2].decode() == object_id:
                return os.fsdecode(name)
        return None

    def _around(self, specs: list[str], directory: str) -> list[str]:
        """``specs`` without ``directory``: a spec holding it is replaced by the entries beside each step of
        the way down to it (the directories on the way were listed, so they are held)."""
        out: list[str] = []
        for spec in specs:
            if spec == directory:
                continue
            if spec and not directory.startswith(spec + "/"):
                out.append(spec)
                continue
            here = spec
            for part in directory[len(spec) :].strip("/").split("/"):
                for entry in self.entries(here) or []:
                    if entry.name != part:
                        out.append(f"{here}/{entry.name}" if here else entry.name)
                here = f"{here}/{part}" if here else part
        return out

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
            env = self.git.env()
            env["GIT_INDEX_FILE"] = str(Path(scratch) / "index")
            self.git.run("read-tree", self.commit, env=env)
            result = self.git.result(
                "apply",
                "--cached",
                "--check",
                "-",
                stdin=diff_text.encode("utf-8", "surrogateescape"),
                env=env,
            )
        if result.returncode == 0:
            return None
        lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
        return "; ".join(lines[:3]) or f"git apply exit code {result.returncode}"
