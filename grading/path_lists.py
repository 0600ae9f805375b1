"""The path-list files of the workspace diff (spec §3): the ignored-file snapshot taken before a run and
``ignored_created.txt`` written after it. Their format, quoting and versions are described in
:mod:`grading.workspace.diff`, which takes the snapshot and captures the diff; this module writes and reads
the files, with no git.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from grading.errors import InputError
from grading.git_quote import c_quote, read_quoted
from grading.strict_json import read_input_bytes
from grading.words import counted

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`rubric capture` loads this module)
if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, ValidatorFunctionWrapHandler
    from pydantic_core import CoreSchema

SNAPSHOT_HEADER_V3 = "# rubric snapshot v3"  # still read: no private record of the git directory
SNAPSHOT_HEADER_V2 = "# rubric snapshot v2"  # still read: no recorded .gitignore files
SNAPSHOT_HEADER_V1 = "# rubric snapshot v1"  # still read: paths only, no recorded info/exclude
GITIGNORE = ".gitignore"
SNAPSHOT_HEADER = "# rubric snapshot v4"  # what write_snapshot writes: v3 plus the private record
EXCLUDE_PREFIX = "# info/exclude: "
IGNORE_FILE_PREFIX = "# ignore file: "
IGNORE_RULES_PREFIX = "# ignore rules: "
_DIR_COUNT_PREFIX = "# files: "
_DIR_FILE_PREFIX = "# - "
_SPECIAL_FILE_PREFIX = (
    "# special file: "  # ignored_created.txt: a FIFO, socket or device left in the work tree
)


def is_gitignore(path: str) -> bool:
    return path == GITIGNORE or path.endswith("/" + GITIGNORE)


def fs_text(path: str) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


class _Record:
    """Equality and repr by the fields in ``__slots__``: what these records used dataclasses for. Plain
    classes, not pydantic models or dataclasses: `rubric snapshot` and `rubric capture` load neither (their
    imports were most of a short command's start-up), and nothing here is read from untrusted JSON."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq and no frozen

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__name__}({fields})"


def _pydantic_schema(
    cls: type, fields: Mapping[str, object], required: set[str], handler: GetCoreSchemaHandler
) -> CoreSchema:
    """The schema pydantic gives a dataclass, for a record that is a field of a pydantic model (a run's
    ``ignored``, a sweep job's ``self_ignoring_dirs``): an instance is taken as it is, a mapping of its
    fields (JSON too) is validated and made one, and it serialises as that mapping."""
    from pydantic_core import core_schema

    mapping = core_schema.typed_dict_schema(
        {
            name: core_schema.typed_dict_field(handler.generate_schema(kind), required=name in required)
            for name, kind in fields.items()
        }
    )

    def validate(value: object, check: ValidatorFunctionWrapHandler) -> object:
        return value if isinstance(value, cls) else cls(**check(value))

    return core_schema.no_info_wrap_validator_function(
        validate,
        mapping,
        serialization=core_schema.plain_serializer_function_ser_schema(
            lambda record: {name: getattr(record, name) for name in fields}, return_schema=mapping
        ),
    )


class SelfIgnoringDir(_Record):
    """A directory the run created whose own new ``.gitignore`` ignores everything in it (a tool cache or a
    virtual environment): one entry of ``ignored_created.txt``, not shown in the diff."""

    __slots__ = ("path", "files")

    def __init__(self, path: str, files: list[str]) -> None:
        self.path = path  # relative to the workspace root, without the trailing '/'
        self.files = files  # every file in it, relative to the workspace root

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        return _pydantic_schema(cls, {"path": str, "files": list[str]}, {"path", "files"}, handler)

    @property
    def file_count(self) -> int:
        return len(self.files)

    def json_safe(self) -> dict[str, object]:
        """As JSON shows it: bytes that are not UTF-8 as ``\\xNN`` (:func:`fs_text`)."""
        return {"path": fs_text(self.path), "files": [fs_text(p) for p in self.files]}


class Snapshot(_Record):
    """A snapshot file: the ignored files before the run and, from v2 on, the exclusion rules then."""

    __slots__ = ("version", "ignored", "info_exclude", "ignore_files")

    def __init__(
        self,
        version: int,
        ignored: list[str],
        info_exclude: bytes | None,
        ignore_files: dict[str, bytes] | None = None,
    ) -> None:
        self.version = version
        self.ignored = ignored
        self.info_exclude = info_exclude  # the workspace's .git/info/exclude at snapshot time; None in v1
        # every .gitignore in the work tree at snapshot time (path -> bytes); None in a v1 or v2 file
        self.ignore_files = ignore_files


# ---- path-list files ----------------------------------------------------------------------------------


def quote_path(path: str) -> str:
    """One line of a path-list file: the name as is, or C-quoted when a plain line cannot carry it."""
    raw = os.fsencode(path)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return c_quote(raw)
    if (
        any(b < 0x20 or b == 0x7F or b in (0x22, 0x5C) for b in raw)
        or path.startswith("#")
        or path != path.strip()
    ):
        return c_quote(raw)
    return path


def unquote_path(line: str) -> str:
    """Inverse of :func:`quote_path`; raises ValueError on a malformed quoted name."""
    if not line.startswith('"'):
        return line
    raw, end = read_quoted(line)
    if end != len(line):
        raise ValueError("unescaped quote inside a quoted name")
    return os.fsdecode(raw)


def format_path_list(paths: Sequence[str]) -> str:
    """The text of a path-list file (no header)."""
    return "".join(quote_path(p) + "\n" for p in paths)


def format_ignored_created(
    files: Sequence[str], self_ignoring: Sequence[SelfIgnoringDir] = (), special_files: Sequence[str] = ()
) -> str:
    """The text of ``ignored_created.txt``: the ignored files the run created, one per line, then one
    ``dir/`` line per self-ignoring directory followed by ``# files: N`` and one ``# - path`` comment per
    file in it, then one ``# special file: path`` comment per FIFO, socket or device the run left in the
    work tree (comments, so a reader of plain path lists skips them)."""
    text = format_path_list(files)
    for directory in self_ignoring:
        text += quote_path(directory.path + "/") + "\n" + f"{_DIR_COUNT_PREFIX}{directory.file_count}\n"
        text += "".join(f"{_DIR_FILE_PREFIX}{quote_path(f)}\n" for f in directory.files)
    text += "".join(f"{_SPECIAL_FILE_PREFIX}{quote_path(p)}\n" for p in special_files)
    return text


class IgnoredCreated(_Record):
    """``ignored_created.txt`` read back."""

    __slots__ = ("files", "self_ignoring_dirs", "special_files")

    def __init__(
        self,
        files: list[str] | None = None,
        self_ignoring_dirs: list[SelfIgnoringDir] | None = None,
        special_files: list[str] | None = None,
    ) -> None:
        self.files = [] if files is None else files
        self.self_ignoring_dirs = [] if self_ignoring_dirs is None else self_ignoring_dirs
        # FIFOs, sockets and devices left in the work tree: in no diff, never read (integrity: special_file)
        self.special_files = [] if special_files is None else special_files

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        fields = {"files": list[str], "self_ignoring_dirs": list[SelfIgnoringDir], "special_files": list[str]}
        return _pydantic_schema(cls, fields, set(), handler)

    def all_files(self) -> list[str]:
        """Every ignored file the run created, those inside self-ignoring directories included."""
        return [*self.files, *(f for d in self.self_ignoring_dirs for f in d.files)]


def read_ignored_created(path: Path) -> IgnoredCreated:
    """Read ``ignored_created.txt`` (:func:`format_ignored_created`); an absent file is an empty one.

    InputError naming the file and line on a malformed line, a path outside the workspace, a file listed
    under a directory it is not in, or a file count that does not match the files listed.
    """
    if not path.exists():
        return IgnoredCreated()
    return parse_ignored_created(read_input_bytes(path), path)


def parse_ignored_created(data: bytes, path: str | Path) -> IgnoredCreated:
    """``ignored_created.txt``'s bytes read as :func:`read_ignored_created` reads the file (``path`` names it
    in errors)."""
    files: list[str] = []
    special: list[str] = []
    dirs: list[SelfIgnoringDir] = []
    counts: list[tuple[int, int]] = []  # (declared count, line) per directory

    def name_at(number: int, line: str) -> str:
        try:
            name = unquote_path(line)
        except ValueError as exc:
            raise InputError(path, str(exc), f"line {number}") from exc
        if not line.startswith('"') and any(ord(c) < 0x20 or ord(c) == 0x7F for c in line):
            raise InputError(path, f"control character in an unquoted name: {line!r}", f"line {number}")
        if problem := _check_relative(name.removesuffix("/") if name.endswith("/") else name):
            raise InputError(path, f"{problem}: {line!r}", f"line {number}")
        return name

    for number, line in enumerate(_lines(data, path), start=1):
        if line.startswith(_DIR_COUNT_PREFIX) and dirs and counts[-1][0] < 0:
            value = line[len(_DIR_COUNT_PREFIX) :]
            if not value.isascii() or not value.isdigit() or len(value) > 12:
                raise InputError(path, f"file count is not a number: {value!r}", f"line {number}")
            counts[-1] = (int(value), number)
        elif line.startswith(_DIR_FILE_PREFIX) and dirs:
            name = name_at(number, line[len(_DIR_FILE_PREFIX) :])
            if not name.startswith(dirs[-1].path + "/"):
                raise InputError(path, f"{name!r} is not inside {dirs[-1].path + '/'!r}", f"line {number}")
            dirs[-1].files.append(name)
        elif line.startswith(_SPECIAL_FILE_PREFIX):
            special.append(name_at(number, line[len(_SPECIAL_FILE_PREFIX) :]))
        elif line.startswith("#"):
            continue
        elif (name := name_at(number, line)).endswith("/"):
            dirs.append(SelfIgnoringDir(path=name[:-1], files=[]))
            counts.append((-1, number))
        else:
            files.append(name)
    for directory, (count, number) in zip(dirs, counts, strict=True):
        if count != len(directory.files):
            declared = "no count" if count < 0 else f"a count of {count}"
            raise InputError(
                path,
                f"{directory.path + '/'!r} has {declared} but lists {counted(len(directory.files), 'file')}",
                f"line {number}",
            )
    return IgnoredCreated(files=files, self_ignoring_dirs=dirs, special_files=special)


def _check_relative(path: str) -> str | None:
    if not path:
        return "empty path"
    if path.startswith("/"):
        return "absolute path"
    if any(part in ("", ".", "..") for part in path.split("/")) or PurePosixPath(path).is_absolute():
        return "path with an empty, '.' or '..' component"
    return None


def read_lines(path: Path) -> list[str]:
    # A regular file only, read up to the cap: a FIFO given as --before would block, /dev/zero never end.
    return _lines(read_input_bytes(path), path)


def _lines(data: bytes, path: str | Path) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data[: exc.start].count(b"\n") + 1
        raise InputError(
            path, "not UTF-8 (names that are not UTF-8 must be quoted)", f"line {line_no}"
        ) from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def read_path_list(path: Path, header: str | None = None) -> list[str]:
    """Read a path-list file (module docstring); ``header`` is the first line it must start with.

    Raises InputError naming the file and line on a missing file, bad UTF-8, a bad quoted name or a path
    that is not relative to the workspace.
    """
    lines = read_lines(path)
    if header is not None and (not lines or lines[0] != header):
        raise InputError(path, f"not a snapshot written by `rubric snapshot` (first line must be {header!r})")
    return _parse_paths(path, lines, allow_dirs=True)


def parse_path_list(data: bytes, path: str | Path) -> list[str]:
    """A path-list file's bytes, read as :func:`read_path_list` reads the file (``path`` names it)."""
    return _parse_paths(path, _lines(data, path), allow_dirs=True)


def _parse_paths(path: str | Path, lines: list[str], *, allow_dirs: bool = False) -> list[str]:
    """The path lines; with ``allow_dirs`` a ``dir/`` line (a self-ignoring directory) is kept as it is."""
    paths: list[str] = []
    for number, line in enumerate(lines, start=1):
        if line.startswith("#"):
            continue
        if not line.startswith('"') and any(ord(c) < 0x20 or ord(c) == 0x7F for c in line):
            raise InputError(path, f"control character in an unquoted name: {line!r}", f"line {number}")
        try:
            name = unquote_path(line)
        except ValueError as exc:
            raise InputError(path, str(exc), f"line {number}") from exc
        problem = _check_relative(name[:-1] if allow_dirs and name.endswith("/") else name)
        if problem:
            raise InputError(path, f"{problem}: {line!r}", f"line {number}")
        paths.append(name)
    return paths


def read_snapshot_file(path: Path) -> Snapshot:
    """Read a file written by :func:`write_snapshot` (v2, or v1 of older versions); InputError if it is
    missing or malformed."""
    lines = read_lines(path)
    first = lines[0] if lines else ""
    versions = {SNAPSHOT_HEADER: 4, SNAPSHOT_HEADER_V3: 3, SNAPSHOT_HEADER_V2: 2, SNAPSHOT_HEADER_V1: 1}
    if first not in versions:
        raise InputError(
            path,
            "not a snapshot written by `rubric snapshot` "
            f"(first line must be {SNAPSHOT_HEADER!r}, {SNAPSHOT_HEADER_V3!r}, {SNAPSHOT_HEADER_V2!r} or "
            f"{SNAPSHOT_HEADER_V1!r})",
        )
    version = versions[first]
    if version == 1:
        return Snapshot(version=1, ignored=_parse_paths(path, lines), info_exclude=None)
    second = lines[1] if len(lines) > 1 else ""
    if not second.startswith(EXCLUDE_PREFIX) or not second[len(EXCLUDE_PREFIX) :].startswith('"'):
        raise InputError(path, f"second line must be {EXCLUDE_PREFIX}followed by a quoted string", "line 2")
    info_exclude = _quoted_bytes(path, 2, second[len(EXCLUDE_PREFIX) :], "info/exclude")
    ignore_files: dict[str, bytes] | None = None
    if version >= 3:
        ignore_files = {}
        number = 3
        while number <= len(lines) and lines[number - 1].startswith(IGNORE_FILE_PREFIX):
            name = os.fsdecode(
                _quoted_bytes(path, number, lines[number - 1][len(IGNORE_FILE_PREFIX) :], "ignore file")
            )
            rules_line = lines[number] if number < len(lines) else ""
            if not rules_line.startswith(IGNORE_RULES_PREFIX):
                raise InputError(
                    path,
                    f"an ignore file line must be followed by {IGNORE_RULES_PREFIX!r}",
                    f"line {number + 1}",
                )
            if (problem := _check_relative(name)) or not is_gitignore(name):
                raise InputError(
                    path, f"ignore file: {problem or 'not a .gitignore'}: {name!r}", f"line {number}"
                )
            rules = _quoted_bytes(path, number + 1, rules_line[len(IGNORE_RULES_PREFIX) :], "ignore rules")
            ignore_files[name] = rules
            number += 2
    return Snapshot(
        version=version,
        ignored=_parse_paths(path, lines),
        info_exclude=info_exclude,
        ignore_files=ignore_files,
    )


def _quoted_bytes(path: Path, number: int, quoted: str, what: str) -> bytes:
    if not quoted.startswith('"'):
        raise InputError(path, f"{what}: not a quoted string", f"line {number}")
    try:
        return os.fsencode(unquote_path(quoted))
    except ValueError as exc:
        raise InputError(path, f"{what}: {exc}", f"line {number}") from exc


def read_snapshot(path: Path) -> list[str]:
    """The ignored paths of a file written by :func:`write_snapshot`; InputError if it is missing or
    malformed."""
    return read_snapshot_file(path).ignored
