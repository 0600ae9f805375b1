"""Read agent run directories into bytes: a folder on disk, or a zip's members read from the archive as it is.

A run directory holds ``run.json``, ``grade.json``, ``workspace.diff``, ``ignored_created.txt``, optionally
``tests_list.txt`` (or ``tests_list.error``, why the listing failed in the workspace), optionally
``git_dir_changes.txt`` (the paths under ``.git`` the run changed; without it a sweep leaves the git_dir
integrity part not measured), and ``metrics.json`` once ``rubric grade`` has graded it.

Each run becomes a :class:`RunFiles`, however it arrived: the small files' bytes, each read once within
grading's bound, and the diff's sha256 and size, nothing written to disk on the way. What cannot be read is
a problem naming ``label/<file>``. Checking the bytes is :mod:`rubrics_app.services.runs.checks`; storing the
runs, :mod:`rubrics_app.services.runs.store`.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings

from grading import (
    GIT_DIR_CHANGES_NAME,
    MAX_INPUT_BYTES,
    TESTS_LIST_ERROR_NAME,
    TESTS_LIST_NAME,
    InputError,
    InputErrors,
    open_input_file,
    read_input_bytes,
)
from rubrics_app.services.rubrics.files import ImportFailed, ImportProblem, zip_member_path

DIFF_FILE = "workspace.diff"
METRICS_FILE = "metrics.json"
RUN_FILES = (
    "run.json",
    "grade.json",
    "workspace.diff",
    "ignored_created.txt",
    TESTS_LIST_NAME,
    TESTS_LIST_ERROR_NAME,
    GIT_DIR_CHANGES_NAME,
)
REQUIRED_FILES = ("run.json", "grade.json", "workspace.diff", "ignored_created.txt")
# What is read of a run directory: its files and, once graded, metrics.json; all but the diff kept as bytes.
READ_FILES = (*RUN_FILES, METRICS_FILE)


@dataclass(frozen=True)
class RunFiles:
    """One run directory's files, however they arrived (a folder, a zip's members, a SWE-bench prediction):
    the bytes of the small ones by name (metrics.json included), each read once within grading's bound, and
    the diff's sha256 and size (None: no diff), its bytes read again only when the run is stored."""

    label: str  # the run directory as the user named it; every problem names ``label/<file>``
    files: dict[str, bytes]
    diff: tuple[str, int] | None
    read_diff: Callable[[], bytes]


def member_label(label: str, file: str) -> str:
    return posixpath.join(label, file) if label else file


def find_run_dirs(root: Path) -> list[Path]:
    """``root`` itself when it holds a run.json, else every directory below it that does (sorted)."""
    if (root / "run.json").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("run.json") if p.is_file())


def input_problems(exc: InputError, label: str) -> list[ImportProblem]:
    if isinstance(exc, InputErrors):
        return [ImportProblem(label, message, path) for path, message in exc.errors]
    return [ImportProblem(label, exc.message, exc.field or "")]


def _inside(path: Path, run_dir: Path) -> bool:
    return path.resolve().is_relative_to(run_dir.resolve())


def _present(path: Path, label: str, problems: list[ImportProblem], required: bool) -> bool:
    if not path.exists() and not path.is_symlink():
        if required:
            problems.append(ImportProblem(label, "file not found"))
        return False
    if not _inside(path, path.parent) or not path.is_file():
        problems.append(ImportProblem(label, "not a regular file inside the run directory (symbolic link?)"))
        return False
    return True


def _chunks_sha256(handle: IO[bytes], max_bytes: int | None = None) -> tuple[str, int]:
    """sha256 and size of a stream read in chunks: a diff of tens of MB is not held while runs are checked.
    With ``max_bytes``, no more than one byte past it is read (the caller refuses what is larger)."""
    digest, size = hashlib.sha256(), 0
    while chunk := handle.read(1 << 20 if max_bytes is None else min(1 << 20, max_bytes + 1 - size)):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def _diff_bound() -> int:
    """What a run folder's workspace.diff may hold: what any member of an uploaded zip may inflate to, so a
    folder and a zip of it are read within one bound."""
    return int(settings.ZIP_MAX_MEMBER_BYTES)


def _read_diff_again(path: Path, label: str) -> bytes:
    """The diff read whole when its run is stored, within the same bound: a problem, not a traceback, if
    it was replaced or grew meanwhile."""
    try:
        return read_input_bytes(path, _diff_bound())
    except InputError as exc:
        raise ImportFailed([ImportProblem(label, exc.message)]) from None


def read_run_dir(run_dir: Path, label: str, problems: list[ImportProblem]) -> RunFiles | None:
    """A run folder's files as :class:`RunFiles`; None when one could not be read (``problems`` says why)."""
    before = len(problems)
    files: dict[str, bytes] = {}
    diff = None
    for file in READ_FILES:
        path = run_dir / file
        if not _present(path, member_label(label, file), problems, required=file in REQUIRED_FILES):
            continue
        try:
            if file == DIFF_FILE:
                # A regular file within the bound, by its size before a byte is read: a FIFO is never
                # waited on, nor a diff of gigabytes read.
                with open_input_file(path, _diff_bound()) as handle:
                    diff = _chunks_sha256(handle, _diff_bound())
                if diff[1] > _diff_bound():
                    raise InputError(path, f"larger than {_diff_bound()} bytes; refused")
            else:
                files[file] = read_input_bytes(path)
        except OSError as exc:
            problems.append(ImportProblem(member_label(label, file), f"cannot read: {exc.strerror}"))
        except InputError as exc:
            problems.extend(input_problems(exc, member_label(label, file)))
    if len(problems) > before:
        return None
    return RunFiles(
        label,
        files,
        diff,
        functools.partial(_read_diff_again, run_dir / DIFF_FILE, member_label(label, DIFF_FILE)),
    )


def read_run_dirs(root: Path, label_root: str, problems: list[ImportProblem]) -> Iterator[RunFiles]:
    """Every run folder under ``root`` (or ``root`` itself), read one at a time; ImportFailed if none."""
    run_dirs = find_run_dirs(root)
    if not run_dirs:
        raise ImportFailed([ImportProblem(label_root, "no run.json found")])
    for run_dir in run_dirs:
        rel = run_dir.relative_to(root).as_posix()
        run = read_run_dir(run_dir, posixpath.join(label_root, rel) if rel != "." else label_root, problems)
        if run is not None:
            yield run


ZIP_READ_ERRORS = (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError, EOFError)


def zip_member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int, where: str) -> bytes:
    """A member's bytes, read straight from the archive: InputError naming ``where`` when it is larger
    than ``max_bytes`` (as grading's read_input_bytes words it) or cannot be read. ZipExtFile stops at the
    declared size (checked_zip_members bounds each and their total) and checks the CRC, so a lying header
    cannot inflate."""
    if info.file_size > max_bytes:
        raise InputError(where, f"larger than {max_bytes} bytes; refused")
    try:
        with archive.open(info) as handle:
            return handle.read(max_bytes + 1)
    except ZIP_READ_ERRORS as exc:
        raise InputError(where, f"cannot read: {exc}") from None


def zip_files(members: list[zipfile.ZipInfo], label: str) -> dict[str, zipfile.ZipInfo]:
    """The archive's files (not its folders) by their normalised path in the zip (checked_zip_members
    refused two of one path), read as a folder would be: ImportFailed naming every member under a path
    that is a file (``run.json/x`` beside ``run.json``)."""
    files = {zip_member_path(i): i for i in members if not i.is_dir()}
    problems = [
        ImportProblem(f"{label}: {name}", f"under {parent}, a file of the archive, not a folder")
        for name in files
        for parent in _parents(name)
        if parent in files
    ]
    if problems:
        raise ImportFailed(problems)
    return files


def _parents(path: str) -> Iterator[str]:
    while (path := posixpath.dirname(path)) not in ("", "/"):
        yield path


def read_zip_runs(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], label: str, problems: list[ImportProblem]
) -> Iterator[RunFiles]:
    """The run directories among a zip's members (as :func:`find_run_dirs`: the top when it holds a
    run.json, else every directory that does), read from the archive one at a time; every file is named by
    its path in the zip. The diff is hashed in chunks here and read again only when its run is stored."""
    files = zip_files(members, label)
    if "run.json" in files:
        run_dirs = [""]
    else:
        run_dirs = sorted(posixpath.dirname(n) for n in files if posixpath.basename(n) == "run.json")
    if not run_dirs:
        raise ImportFailed([ImportProblem(label, "no run.json found")])
    for run_dir in run_dirs:
        before = len(problems)
        raw: dict[str, bytes] = {}
        diff = None
        diff_info = files.get(member_label(run_dir, DIFF_FILE))
        for file in READ_FILES:
            info = files.get(member_label(run_dir, file))
            if info is None:
                continue
            where = member_label(run_dir, file)
            try:
                if file == DIFF_FILE:
                    with archive.open(info) as handle:
                        diff = _chunks_sha256(handle)
                else:
                    raw[file] = zip_member_bytes(archive, info, MAX_INPUT_BYTES, where)
            except ZIP_READ_ERRORS as exc:
                problems.append(ImportProblem(where, f"cannot read: {exc}"))
            except InputError as exc:
                problems.extend(input_problems(exc, where))
        if len(problems) == before:
            read_diff = functools.partial(archive.read, diff_info) if diff_info is not None else bytes
            yield RunFiles(run_dir, raw, diff, read_diff)
