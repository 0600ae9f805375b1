"""Writing a file whole or not at all: the one atomic write of the package and the app.

The bytes go to a temporary file beside the target, are flushed to disk, and replace the target in one
``os.replace``: a reader sees the old file or the new one, never half of one, and a failure leaves no
temporary file behind. ``write_new`` is the same write for a file that must be made once: the staged file
is linked into place, so of several processes starting together one makes it, and none reads it empty.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from grading.errors import InputError

FILE_MODE = 0o644  # what a plain write gives under the usual umask (mkstemp alone gives 0o600)


def write_atomic(path: Path, data: bytes, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically. InputError naming the file when it is a directory or
    cannot be written; nothing is written then."""
    if path.is_dir():
        raise InputError(path, "is a directory; it cannot be replaced by the file")
    _write_staged(path, data, mode, os.replace)


def write_new(path: Path, data: bytes, *, mode: int = FILE_MODE) -> bool:
    """Make ``path`` holding ``data``, whole, unless it exists: whether this call made it. A reader sees no
    file or the whole file; InputError naming the file when it cannot be written."""
    made = True

    def link(staged: str, target: Path) -> None:
        nonlocal made
        try:
            os.link(staged, target)
        except FileExistsError:
            made = False
        os.unlink(staged)

    _write_staged(path, data, mode, link)
    return made


def _write_staged(path: Path, data: bytes, mode: int, put: Callable[[str, Path], None]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        put(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(path, f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
