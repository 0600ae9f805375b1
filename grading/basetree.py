"""Read-only access to a repository at one commit, from its git objects (never from a work tree).

Drafting reads the base source of the files a PR touches and checks that a draft's ``path:line`` evidence
exists and that its diffs apply; all of it must come from the task's base commit, not from whatever the
checkout has on disk. git runs through grading.git (the user's and the system's config switched off, each
call bounded in time and output), and only plumbing that runs no filter, hook or external command is used.

Objects are read only from the checkout's own object store, never fetched. A partial clone would fetch a
missing object from its promisor remote on every read (an unreachable remote makes ``ls-tree --long``,
``cat-file`` and ``grep`` die), and git before 2.44 has no switch to stop it (``GIT_NO_LAZY_FETCH``): so git
reads through a scratch git directory of ours, with no remote, whose object directory is the checkout's.
An object the checkout does not hold is then missing, as in a pruned or damaged store, and answered as
such. No blob is read whole: a reader takes at most a bound of it, or counts its lines as they stream.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from grading.errors import InputError
from grading.git import NO_COMMANDS_CONFIG, Git, GitError, GitResult, GitTimeout

GIT_TIMEOUT = 120.0  # seconds for one plumbing call (grep has its own, shorter, bound)
# The most of one blob a reader holds: a larger file is read in its first MAX_READ_BYTES only (a 300 MB
# blob read whole took 5.6 s and 845 MB; git's output bound stopped one over 512 MiB with an error).
MAX_READ_BYTES = 32 * 1024 * 1024
# The most of ``git grep``'s output kept: past it git is stopped and the matches so far are answered.
MAX_GREP_OUTPUT = 4 * 1024 * 1024

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


def _scratch_git_dir(path: Path, object_format: str) -> None:
    """An empty bare git directory at ``path`` (no remote, no refs) reading objects of ``object_format``."""
    (path / "refs").mkdir()
    (path / "objects").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    config = "[core]\n\tbare = true\n"
    if object_format == "sha1":
        config += "\trepositoryformatversion = 0\n"
    else:
        config += f"\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = {object_format}\n"
    (path / "config").write_text(config)


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
# ``git ls-tree -r`` stops at a missing directory with "error: Could not read <oid>".
_LS_TREE_NO_TREE = re.compile(rb"^error: Could not read ([0-9a-f]+)$", re.MULTILINE)
# A search goes around at most this many missing directories before it gives up.
MAX_MISSING_TREES = 10


class BaseTree:
    """The tree of ``commit`` in the repository at ``checkout``."""

    def __init__(self, checkout: Path, commit: str) -> None:
        self.checkout = checkout
        if not checkout.is_dir():
            raise InputError(checkout, "repository checkout is not a directory")
        if not commit or commit.startswith("-"):
            raise InputError(None, f"not a commit: {commit!r}", "base_commit")
        # The checkout itself only names the commit (its refs) and says where its objects are; no transport
        # is allowed, so nothing it configures can fetch.
        named = Git(checkout, config=(*NO_COMMANDS_CONFIG, ("protocol.allow", "never")), timeout=GIT_TIMEOUT)
        found = named.result("rev-parse", "--verify", "--quiet", commit)
        objects = named.result("rev-parse", "--path-format=absolute", "--git-path", "objects")
        object_format = named.result("rev-parse", "--show-object-format")
        if found.returncode != 0 or not found.stdout.strip():
            raise InputError(checkout, f"commit {commit} is not in this repository", "base_commit")
        if objects.returncode != 0 or object_format.returncode != 0:
            raise InputError(checkout, f"not a git repository: {objects.last_error_line()}")
        self._scratch = Path(tempfile.mkdtemp(prefix="rubric-basetree-")).absolute()
        weakref.finalize(self, shutil.rmtree, self._scratch, True)
        _scratch_git_dir(self._scratch, object_format.stdout.decode().strip())
        # refs/replace could make the commit's objects read as other content (a checkout where someone ran
        # `git replace`): the commit id must mean the same bytes everywhere.
        self.git = Git(
            checkout,
            {
                "GIT_DIR": str(self._scratch),
                "GIT_OBJECT_DIRECTORY": os.fsdecode(objects.stdout.rstrip(b"\n")),
                "GIT_NO_REPLACE_OBJECTS": "1",
            },
            timeout=GIT_TIMEOUT,
        )
        object_id = found.stdout.decode().strip()
        out = self._git("rev-parse", "--verify", "--quiet", f"{object_id}^{{commit}}", ok_codes=(0, 1, 128))
        if not out.strip():
            raise InputError(checkout, f"commit {commit} is not in this repository", "base_commit")
        self.commit = out.decode().strip()
        # The root tree's id, from the commit object itself: ``commit^{tree}`` and ``commit:`` cannot be
        # resolved when the tree object is missing.
        header = self._git("cat-file", "commit", self.commit).split(b"\n", 1)[0]
        self.root_tree = header.removeprefix(b"tree ").decode()

    def _git(self, *args: str, stdin: bytes | None = None, ok_codes: Iterable[int] = (0,)) -> bytes:
        return self.git.run(*args, stdin=stdin, ok_codes=ok_codes)

    def entries(self, directory: str) -> list[TreeEntry] | None:
        """The entries of ``directory`` ("" for the root) at the commit, or None when it is not a directory
        there. ``directory`` is taken literally (no globbing); callers check it stays inside the tree.
        Raises :class:`ObjectMissing` when the directory's own tree object is not in the repository; an
        entry whose object is missing is listed with ``available=False``."""
        if directory.startswith("-") or "\0" in directory:
            return None
        spec = f"{self.commit}:{directory}" if directory else self.root_tree
        if self._git("cat-file", "-t", spec, ok_codes=(0, 128)).strip() != b"tree":
            if self._object_missing(spec):
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

    def blob(self, object_id: str, max_bytes: int = MAX_READ_BYTES) -> tuple[bytes, bool]:
        """The first ``max_bytes`` of a blob by its object id (an entry of :meth:`entries`), and whether it
        is longer (git is stopped there: the rest is never read); :class:`ObjectMissing` when the
        repository does not hold it."""
        if object_id.startswith("-") or self._git_code("cat-file", "-e", object_id) != 0:
            raise ObjectMissing(object_id)
        return self.git.head("cat-file", "blob", object_id, max_bytes=max_bytes)

    def blob_lines(self, object_id: str) -> int:
        """The number of lines of a blob (a last line without a newline counts), counted as git prints it,
        never held whole; :class:`ObjectMissing` when the repository does not hold it."""
        if object_id.startswith("-") or self._git_code("cat-file", "-e", object_id) != 0:
            raise ObjectMissing(object_id)
        newlines = 0
        last = b"\n"

        def count(chunk: bytes) -> bool:
            nonlocal newlines, last
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
            return True

        result = self.git.result("cat-file", "blob", object_id, sink=count)
        if result.returncode != 0:
            raise ObjectMissing(object_id)
        return newlines + (0 if last == b"\n" else 1)

    def grep_report(
        self,
        pattern: str,
        pathspecs: Iterable[str] = (),
        *,
        fixed: bool = False,
        ignore_case: bool = False,
        timeout: float = 20.0,
        max_output: int = MAX_GREP_OUTPUT,
    ) -> tuple[list[tuple[str, int, str]], list[str], bool]:
        """``git grep`` over the commit's tree (never the work tree), text files only: (path, line number,
        line) per match, the paths git could not search because the repository does not hold their
        object, and whether git was stopped after ``max_output`` bytes of matches (the matches are then
        those it had printed, the last one maybe cut). git reports a missing file and searches on; a
        missing directory stops it, so the search is run again around that directory (its siblings and
        its parents' siblings, within ``pathspecs``). :class:`ObjectMissing` when the root tree is
        missing: there is nothing to search."""
        args = ["--literal-pathspecs", "grep", "-n", "-z", "-I", "--no-color"]
        args += ["-F"] if fixed else ["-E"]
        if ignore_case:
            args.append("-i")
        args += ["-e", pattern, self.commit, "--"]

        def search(specs: list[str]) -> tuple[GitResult, bytes]:
            kept = bytearray()

            def keep(chunk: bytes) -> bool:
                kept.extend(chunk[: max_output - len(kept)])
                return len(kept) < max_output

            try:
                result = self.git.result(*args, *[s for s in specs if s], timeout=timeout, sink=keep)
            except GitTimeout:
                raise GrepTimeout(f"git grep ran longer than {timeout:g}s") from None
            return result, bytes(kept)

        found, data, missing_dirs = self._around_missing(list(pathspecs) or [""], search, _GREP_NO_TREE)
        if found is None:  # the search covered nothing but missing directories
            return [], missing_dirs, False
        result = found
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
        if result.returncode == 1 and not result.stopped:
            return [], unreadable, False
        if result.returncode != 0 and not result.stopped:
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(None, f"git grep: {lines[-1] if lines else result.returncode}", "pattern")
        matches: list[tuple[str, int, str]] = []
        at = 0
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
        return matches, unreadable, result.stopped

    def _around_missing(
        self,
        specs: list[str],
        run: Callable[[list[str]], tuple[GitResult, bytes]],
        no_tree: re.Pattern[bytes],
    ) -> tuple[GitResult | None, bytes, list[str]]:
        """``run`` over ``specs``, again around each directory whose missing tree object stopped git
        (``no_tree`` finds its id in git's stderr): the last result and its output (None when nothing but
        missing directories was left to run over) and the missing directories, at most
        MAX_MISSING_TREES. :class:`ObjectMissing` when the root tree is the missing one."""
        missing: list[str] = []
        while True:
            result, out = run(specs)
            found = no_tree.search(result.stderr) if result.returncode != 0 and not result.stopped else None
            if found is None or len(missing) == MAX_MISSING_TREES:
                return result, out, missing
            object_id = found.group(1).decode()
            if object_id in (self.root_tree, self.commit):  # git grep names the root by the commit
                raise ObjectMissing("")
            directory = self._tree_path(object_id, specs)
            if directory is None or directory in missing:
                return result, out, missing
            missing.append(directory)
            specs = self._around(specs, directory)
            if not specs:
                return None, b"", missing

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
        return self.paths_report()[0]

    def paths_report(self) -> tuple[list[str], list[str]]:
        """:meth:`paths`, and the directories whose files cannot be listed because the repository does
        not hold their tree object (``[""]`` for the root: nothing can be listed)."""
        if self._git_code("cat-file", "-e", self.root_tree) != 0:
            return [], [""]

        def listing(specs: list[str]) -> tuple[GitResult, bytes]:
            args = ["--literal-pathspecs", "ls-tree", "-r", "-z", "--name-only", self.commit, "--"]
            result = self.git.result(*args, *[s for s in specs if s])
            return result, result.stdout

        result, out, missing = self._around_missing([""], listing, _LS_TREE_NO_TREE)
        if result is not None and result.returncode != 0:
            raise GitError(self.checkout, f"git ls-tree failed: {result.last_error_line()}")
        return [os.fsdecode(p) for p in out.split(b"\0") if p], missing

    def _blob_at(self, path: str) -> str | None:
        """The object id of the file ``path`` at the commit; None when the tree has no file there.
        :class:`ObjectMissing` when the tree lists it (or a directory on its way) but the repository does
        not hold the object."""
        if path.startswith("-") or "\0" in path or not path:
            return None
        spec = f"{self.commit}:{path}"
        kind = self._git("cat-file", "-t", spec, ok_codes=(0, 128)).strip()
        if kind == b"blob":
            return self._git("rev-parse", "--verify", "--quiet", spec).decode().strip()
        if not kind and (self._object_missing(spec) or self._parent_missing(path.rpartition("/")[0])):
            raise ObjectMissing(path)
        return None

    def _parent_missing(self, directory: str) -> bool:
        """Whether the root or a directory on the way to ``directory`` (itself included) is named by the
        tree but not held by the repository."""
        parts = directory.split("/") if directory else []
        for end in range(len(parts) + 1):
            try:
                if self.entries("/".join(parts[:end])) is None:
                    return False
            except ObjectMissing:
                return True
        return False

    def read(self, path: str, max_bytes: int = MAX_READ_BYTES) -> bytes | None:
        """The first ``max_bytes`` of ``path`` at the commit (the rest is never read), or None when there
        is no such file; :class:`ObjectMissing` when the tree lists it but the repository does not hold it."""
        object_id = self._blob_at(path)
        if object_id is None:
            return None
        return self.blob(object_id, max_bytes)[0]

    def line_count(self, path: str) -> int | None:
        """The number of lines of ``path`` at the commit, or None when there is no such file (or its object
        is not held: there is nothing to count)."""
        try:
            object_id = self._blob_at(path)
            return None if object_id is None else self.blob_lines(object_id)
        except ObjectMissing:
            return None

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
