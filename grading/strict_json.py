"""The one strict JSON reader: every JSON file the package reads goes through :func:`read_json` or
:func:`parse_json` (bounded in size, UTF-8, no duplicate keys, no NaN or Infinity, no number beyond a
double, no nesting deep enough to crash the parser), and :func:`lone_surrogate_path` finds the strings
that are not Unicode text. Input errors name the file and, where there is one, the JSON path.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

from grading.errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: `rubric capture` loads this module
if TYPE_CHECKING:
    from typing import Any, BinaryIO


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of two equal keys silently: a second "blockers" would hide the first.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


class _OutOfRange(ValueError):
    pass


# A JSON number is read by most tools as an IEEE double: a number beyond its range cannot travel on (Python
# would turn 1e400 into inf, written back as null or Infinity), and ints past 4,300 digits do not parse.
_MAX_INT_DIGITS = 309


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _OutOfRange(text)
    return value


def _double_sized_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > _MAX_INT_DIGITS:
        raise _OutOfRange(text)
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise _OutOfRange(text) from None
    return value


def lone_surrogate_path(data: Any) -> str | None:
    """The JSON path of the first string (key or value) in ``data`` holding a lone surrogate (a ``"\\ud800"``
    escape), else None. Such a string is not Unicode text: it cannot be written as UTF-8, hashed or sent."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str) and not _encodable(value):
            return where or "(top level)"
        if isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                shown = key if _encodable(key) else key.encode("utf-8", "backslashreplace").decode("ascii")
                here = f"{where}.{shown}" if where else shown
                if shown != key:
                    return here
                stack.append((here, item))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# Input files are small (a PR export for the drafter is the largest); the cap stops a huge one from being read
# whole, and the regular-file check stops an endless one (a rubric.json symlinked to /dev/zero).
MAX_INPUT_BYTES = 64 * 1024 * 1024


def open_input_file(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> BinaryIO:
    """An input file opened for reading, once known to be a regular file (symlinks followed) of at most
    ``max_bytes`` by its size, before a byte is read; InputError otherwise (missing, a directory, a device
    such as /dev/zero, a pipe, too large, unreadable). Opened without blocking, so a FIFO put there after
    the first look is refused too, never waited on. Read at most ``max_bytes + 1`` from it: a file can grow
    while it is read."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    _check_input(path, info, max_bytes)
    try:
        handle = open(path, "rb", opener=_open_nonblocking)  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    try:
        _check_input(path, os.fstat(handle.fileno()), max_bytes)
    except InputError:
        handle.close()
        raise
    return handle


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def _check_input(path: Path, info: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise InputError(path, "is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(path, "not a regular file (a device, a pipe or a socket)")
    if info.st_size > max_bytes:
        raise InputError(path, f"larger than {max_bytes} bytes; refused")


def read_input_bytes(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file: a regular file (symlinks followed) of at most ``max_bytes``; InputError
    otherwise (missing, a directory, a device such as /dev/zero, a pipe, too large, unreadable). A file over
    the bound is refused by its size, before it is read (:func:`open_input_file`)."""
    with open_input_file(path, max_bytes) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(path, f"cannot read: {exc.strerror}") from None
    if len(data) > max_bytes:
        raise InputError(path, f"larger than {max_bytes} bytes; refused")
    return data


class JsonProblem(ValueError):
    """JSON that parses but that the framework refuses (see :func:`strict_json_loads`)."""


def strict_json_loads(text: str) -> Any:
    """``json.loads`` made strict: no duplicate keys, no NaN/Infinity, every number within a double's range,
    no nesting deeper than the parser can go, and no lone surrogate (``"\\ud800"``) in any string.
    Raises json.JSONDecodeError for malformed JSON and :class:`JsonProblem` for the rest."""
    import json  # here: `rubric capture` reads files through this module and parses no JSON

    try:
        data = json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_no_constants,
            parse_float=_finite_float,
            parse_int=_double_sized_int,
        )
    except json.JSONDecodeError:
        raise
    except _DuplicateKey as exc:
        raise JsonProblem(f"duplicate key {exc.args[0]!r} in one object") from None
    except _OutOfRange as exc:
        shown = exc.args[0] if len(exc.args[0]) <= 24 else f"{exc.args[0][:12]}...({len(exc.args[0])} chars)"
        raise JsonProblem(f"number {shown} is out of range (a JSON number must fit a double)") from None
    except ValueError as exc:
        raise JsonProblem(f"malformed JSON: {exc}") from None
    except RecursionError:
        raise JsonProblem("malformed JSON: nested too deeply") from None
    if (where := lone_surrogate_path(data)) is not None:
        raise JsonProblem(f"{where}: a lone surrogate escape (such as \\ud800) is not Unicode text")
    return data


def read_json(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> Any:
    """Parse a JSON file strictly (:func:`strict_json_loads`; UTF-8, a regular file of at most
    ``max_bytes``); InputError naming the file on any problem."""
    raw = read_input_bytes(path, max_bytes)
    return parse_json(raw, path)


def parse_json(raw: bytes, source: str | Path) -> Any:
    """Parse JSON bytes strictly, as :func:`read_json` does a file (UTF-8, :func:`strict_json_loads`);
    InputError naming ``source`` on any problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, f"not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise InputError(source, "empty file; expected JSON")
    import json

    try:
        return strict_json_loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise InputError(source, f"malformed JSON: {exc.msg}", where) from None
    except JsonProblem as exc:
        raise InputError(source, str(exc)) from None
