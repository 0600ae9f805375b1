"""What a run can leave in its work tree that git cannot read: FIFOs, sockets and devices (docs/capture.md).

:func:`special_files` finds them, so the capture can leave them out of the diff and name them (integrity
rule ``special_file``); :func:`rule_fifos_read_empty` keeps a FIFO named ``.gitignore``, ``.gitattributes``
or ``.gitmodules`` from blocking git, which opens those files by name."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from grading.path_lists import GITIGNORE


class WorkTree:
    """One walk of the work tree (not following symbolic links, skipping every ``.git``)."""

    __slots__ = ("special", "files", "odd_git_names", "nested_git")

    def __init__(
        self, special: list[str], files: list[str], odd_git_names: bool, nested_git: bool = False
    ) -> None:
        self.special = special  # FIFOs, sockets and devices, sorted
        self.files = files  # regular files and symbolic links
        # a directory named like .git in another case (.GIT): git's walk and this one may part there
        self.odd_git_names = odd_git_names
        # a .git below the top (a nested repository or a submodule's): git lists it as one "dir/" entry
        self.nested_git = nested_git


def walk_work_tree(root: Path) -> WorkTree:
    """The paths of the work tree: its special files (:func:`special_files`) and every file and symbolic
    link, so that the capture can tell, without asking git, that nothing is new since the snapshot."""
    found: list[str] = []
    files: list[str] = []
    odd = nested = False
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(root / rel))
        except OSError:
            continue  # unreadable directory: git cannot list it either
        for entry in entries:
            if entry.name.lower() == ".git":
                # the repository's own (git_dir_changes.txt watches it) or a nested one's
                odd = odd or entry.name != ".git"
                nested = nested or rel != ""
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(child)
                elif entry.is_symlink() or entry.is_file(follow_symlinks=False):
                    files.append(child)
                else:
                    found.append(child)
            except OSError:
                continue  # gone since the listing
    return WorkTree(sorted(found), files, odd, nested)


def special_files(root: Path) -> list[str]:
    """Paths in the work tree that are neither a regular file, a directory nor a symbolic link (a FIFO, a
    socket, a device), outside every ``.git``, sorted. Symbolic links are not followed: git records a
    link's target and never reads through it.

    git cannot hash such a file: a tracked one makes ``git diff`` fail ("cannot hash"), and an untracked one
    is silently left out. The capture treats each as absent from the work tree and names it."""
    return walk_work_tree(root).special


# Files git opens in the work tree whatever the index says: a FIFO there would block it (no writer).
_RULE_FILES = frozenset((GITIGNORE, ".gitattributes", ".gitmodules"))
_UNBLOCK_POLL = 0.002  # seconds between looks for a git waiting on one of them


@contextlib.contextmanager
def rule_fifos_read_empty(root: Path, special_files: Sequence[str]) -> Iterator[None]:
    """While the block runs, a git that opens one of ``special_files`` named ``.gitignore``,
    ``.gitattributes`` or ``.gitmodules`` reads it as empty instead of blocking.

    git opens those files by name in every directory it visits, and opening a FIFO for reading waits for a
    writer. A thread looks for a waiting reader (a non-blocking open for writing succeeds only when there is
    one) and closes at once: git's open returns and its read sees the end of the file. A FIFO is therefore
    read as no rules, the nearest thing to the absence the diff gives it."""
    fifos: list[Path] = []
    for rel in special_files:
        path = root / rel
        with contextlib.suppress(OSError):
            if rel.rsplit("/", 1)[-1] in _RULE_FILES and stat.S_ISFIFO(os.lstat(path).st_mode):
                fifos.append(path)
    if not fifos:
        yield
        return
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(_UNBLOCK_POLL):
            for path in fifos:
                # ENXIO: nobody is reading it now (or it is gone, or no longer a FIFO): look again later
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW))

    thread = threading.Thread(target=unblock, name="rubric-capture-fifos", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
