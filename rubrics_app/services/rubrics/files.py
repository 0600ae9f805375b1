"""The files of rubric task directories, read from an uploaded zip or a repository checkout.

Every zip member is checked (name, size, count, duplicates) before any is read, and a checkout is read only
under its tasks/ folder; a problem is an :class:`ImportProblem` naming the file, and :class:`ImportFailed`
lists them all.
"""

from __future__ import annotations

import io
import posixpath
import re
import stat
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings

from grading import (
    InputError,
    parse_json,
    parse_rubric,
    read_input_bytes,
)
from rubrics_app.models import (
    TASK_FILES,
)

# --- problems -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportProblem:
    file: str  # the file inside the zip or checkout, e.g. "tasks/fix_x/rubric.json"
    message: str
    path: str = ""  # JSON path inside it, e.g. "blockers[1].evidence"

    def __str__(self) -> str:
        return ": ".join(p for p in (self.file, self.path, self.message) if p)


class ImportFailed(Exception):
    """Nothing was imported; ``problems`` lists every file with its errors."""

    def __init__(self, problems: list[ImportProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


# --- reading task directories ---------------------------------------------------------------------


@dataclass
class TaskFiles:
    """The files of one task directory as bytes, wherever they came from (zip or checkout)."""

    directory: str  # "tasks/fix_x" or "" for a zip with rubric.json at its root
    rubric: bytes
    task_json: bytes | None = None
    prompt_md: bytes | None = None
    files: dict[str, bytes] = field(default_factory=dict)  # every other file, by path relative to `directory`

    def label(self, name: str) -> str:
        return posixpath.join(self.directory, name) if self.directory else name


# --- zip uploads ----------------------------------------------------------------------------------

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if name.startswith(("/", "\\")) or _WINDOWS_DRIVE.match(name):
        return "absolute path"
    if "\\" in name:
        return "backslash in path"
    if ".." in PurePosixPath(name).parts:
        return "path leaves the archive ('..')"
    if "\x00" in name:
        return "NUL in path"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "symbolic link"
    if info.flag_bits & 0x1:
        return "encrypted member"
    return None


def zip_member_path(info: zipfile.ZipInfo) -> str:
    """The path a member names once normalised (``./a//b`` and ``a/./b`` are ``a/b``): what every reader of
    an archive keys its files by, so :func:`checked_zip_members` refuses two members of one path."""
    return posixpath.normpath(info.filename)


def read_upload(uploaded: IO[bytes] | Any, limit: int) -> bytes:
    size = getattr(uploaded, "size", None)
    if isinstance(size, int) and size > limit:
        raise ImportFailed(
            [ImportProblem(upload_name(uploaded), f"upload is {size} bytes; the limit is {limit}")]
        )
    if hasattr(uploaded, "seek"):
        uploaded.seek(0)
    raw = uploaded.read(limit + 1)
    if len(raw) > limit:
        raise ImportFailed(
            [ImportProblem(upload_name(uploaded), f"upload is over the limit of {limit} bytes")]
        )
    return bytes(raw)


def upload_name(uploaded: Any) -> str:
    return PurePosixPath(str(getattr(uploaded, "name", "") or "upload")).name


def open_zip(source: Any, label: str) -> zipfile.ZipFile:
    """The zip archive ``source`` (a file or a stream) holds; ImportFailed naming ``label`` if none."""
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError):
        raise ImportFailed([ImportProblem(label, "not a zip file")]) from None


def checked_zip_members(
    archive: zipfile.ZipFile, label: str, *, max_members: int, max_total: int
) -> list[zipfile.ZipInfo]:
    """The archive's members, once none is unsafe (absolute, '..', link, encrypted, two of one path once
    normalised by :func:`zip_member_path`) and the declared sizes are within the limits (each member's,
    ``settings.ZIP_MAX_MEMBER_BYTES``, and the total); ImportFailed listing every problem otherwise. The
    members are counted from the central directory before any is read, and every check is linear in their
    number. Shared by rubric and agent-run uploads."""
    infos = archive.infolist()
    if len(infos) > max_members:
        raise ImportFailed([ImportProblem(label, f"{len(infos)} members; the limit is {max_members}")])
    problems = [ImportProblem(f"{label}: {i.filename}", p) for i in infos if (p := _member_problem(i))]
    max_member = settings.ZIP_MAX_MEMBER_BYTES
    problems.extend(
        ImportProblem(
            f"{label}: {i.filename}", f"{i.file_size} bytes uncompressed; the limit is {max_member}"
        )
        for i in infos
        if i.file_size > max_member
    )
    total = sum(i.file_size for i in infos)
    if total > max_total:
        problems.append(ImportProblem(label, f"{total} bytes uncompressed; the limit is {max_total}"))
    # Two members of one path would leave the reader keeping whichever came last (a rubric imported with
    # the second file's intent): the archive is refused, naming every member of that path.
    by_path: dict[str, list[str]] = defaultdict(list)
    for info in infos:
        if not info.is_dir():
            by_path[zip_member_path(info)].append(info.filename)
    problems.extend(
        ImportProblem(f"{label}: {names[0]}", _same_path(names[1:], path))
        for path, names in sorted(by_path.items())
        if len(names) > 1
    )
    if problems:
        raise ImportFailed(problems)
    return infos


def _same_path(others: list[str], path: str) -> str:
    if all(other == path for other in others):
        return "appears twice in the archive" if len(others) == 1 else f"appears {len(others) + 1} times"
    named = ", ".join(repr(other) for other in others)
    return f"the same file as {named} ({'both name' if len(others) == 1 else 'all name'} {path})"


def read_zip(raw: bytes, label: str = "upload.zip") -> list[TaskFiles]:
    """The task directories of a zip: every directory holding a rubric.json. Raises ImportFailed on an unsafe
    or oversized archive."""
    with open_zip(io.BytesIO(raw), label) as archive:
        infos = checked_zip_members(
            archive,
            label,
            max_members=settings.RUBRIC_ZIP_MAX_MEMBERS,
            max_total=settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES,
        )
        max_total = settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES
        contents: dict[str, bytes] = {}
        read_total = 0
        for info in infos:
            if info.is_dir():
                continue
            try:
                # ZipExtFile stops at the declared size and checks the CRC, so a lying header cannot inflate.
                data = archive.read(info)
            except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
                raise ImportFailed(
                    [ImportProblem(f"{label}: {info.filename}", f"cannot read: {exc}")]
                ) from None
            read_total += len(data)
            if read_total > max_total:
                raise ImportFailed([ImportProblem(label, f"over {max_total} bytes uncompressed")])
            contents[zip_member_path(info)] = data
    return _group_task_dirs(contents)


def _group_task_dirs(contents: dict[str, bytes]) -> list[TaskFiles]:
    rubric_dirs = sorted(posixpath.dirname(n) for n in contents if posixpath.basename(n) == "rubric.json")
    out: list[TaskFiles] = []
    for directory in rubric_dirs:
        prefix = f"{directory}/" if directory else ""
        files = {n[len(prefix) :]: data for n, data in contents.items() if n.startswith(prefix)}
        out.append(
            TaskFiles(
                directory=directory,
                rubric=files["rubric.json"],
                task_json=files.get("task.json"),
                prompt_md=files.get("prompt.md"),
                files=files,
            )
        )
    return out


# --- checkouts ------------------------------------------------------------------------------------


def read_checkout(root: Path) -> list[TaskFiles]:
    """Every tasks/*/ directory of a checkout that holds a rubric.json, with the files its rubric names: each
    a regular file inside its task directory, within a rubric upload's bounds."""
    problems: list[ImportProblem] = []
    out: list[TaskFiles] = []
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise ImportFailed([ImportProblem(str(root), "no tasks/ directory")])
    # A file of a checkout is held to what it could be in a rubric upload: any one member's bound and the
    # whole zip's, whichever is smaller.
    max_bytes = min(settings.ZIP_MAX_MEMBER_BYTES, settings.RUBRIC_ZIP_MAX_UNCOMPRESSED_BYTES)
    for task_dir in sorted(p for p in tasks_dir.iterdir() if p.is_dir()):
        rubric_path = task_dir / "rubric.json"
        if not rubric_path.exists():
            continue
        directory = f"tasks/{task_dir.name}"
        base = task_dir.resolve()
        if not base.is_relative_to(tasks_dir.resolve()):
            problems.append(ImportProblem(directory, "leaves the tasks/ directory (symbolic link?)"))
            continue

        def read(
            rel: str, directory: str = directory, task_dir: Path = task_dir, base: Path = base
        ) -> bytes | None:
            path = task_dir / rel
            label = posixpath.join(directory, rel)
            if not path.exists():
                return None
            if not path.resolve().is_relative_to(base):
                problems.append(ImportProblem(label, "leaves the task directory (symbolic link?)"))
                return None
            try:
                # A regular file within the bound, by its size before a byte is read: a FIFO as
                # calib/lazy.diff is refused, never waited on.
                return read_input_bytes(path, max_bytes)
            except InputError as exc:
                problems.append(ImportProblem(label, exc.message))
                return None

        rubric = read("rubric.json")
        if rubric is None:
            continue
        files: dict[str, bytes] = {}
        # Only the diffs the rubric names are read: a task directory may hold large unrelated files.
        try:
            parsed = parse_rubric(parse_json(rubric, rubric_path), rubric_path)
            names = [rel for _, rel in parsed.calibration.paths()]
        except InputError:
            names = []  # the rubric's own problems are reported by import_task_files
        # The task's own files that calibration reads (oracle.diff, oracle_grade.json, tests_base.txt).
        for rel in [*names, *TASK_FILES]:
            data = read(posixpath.normpath(rel))
            if data is not None:
                files[posixpath.normpath(rel)] = data
        out.append(
            TaskFiles(
                directory, rubric, task_json=read("task.json"), prompt_md=read("prompt.md"), files=files
            )
        )
    if problems:
        raise ImportFailed(problems)
    return out
