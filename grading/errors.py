"""Errors that the `rubric` command turns into exit codes, and the escapes that keep untrusted text in them
to one line (:func:`one_line`) and free of terminal control sequences (:func:`printable`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: every command loads this module
if TYPE_CHECKING:
    from typing import Any


class InputError(Exception):
    """Bad input: a file that is missing, malformed or breaks a rule. The CLI exits 2 with one line.

    ``file`` names the file, ``field`` the JSON path or line inside it (``blockers[1].evidence``).
    """

    def __init__(self, file: str | Path | None, message: str, field: str | None = None) -> None:
        self.file = str(file) if file is not None else None
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.field) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class Problem:
    """One problem inside a file: where (a JSON path such as ``blockers[1].evidence``) and what, in the
    command line's words, with the schema's structured error beside them so a page can word it its own way.

    ``type`` is pydantic's error type (``too_short``, ``string_pattern_mismatch``, ``missing``; ``blank`` for
    an empty text field), empty when the problem did not come from a schema; ``ctx`` its context
    (``actual_length``, ``max_length``, ``gt`` ...).

    Immutable; equal and hashed by path, message and type. A plain class, not a dataclass: every command
    imports this module, and ``dataclasses`` (through ``inspect``) was a fifth of `rubric capture`'s
    imports."""

    __slots__ = ("path", "message", "type", "ctx")
    path: str
    message: str
    type: str
    ctx: Mapping[str, Any]

    def __init__(self, path: str, message: str, type: str = "", ctx: Mapping[str, Any] | None = None) -> None:
        set_field = object.__setattr__
        set_field(self, "path", path)
        set_field(self, "message", message)
        set_field(self, "type", type)
        set_field(self, "ctx", {} if ctx is None else ctx)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a Problem is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a Problem is immutable")

    def _key(self) -> tuple[str, str, str]:
        return (self.path, self.message, self.type)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Problem):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Problem, (self.path, self.message, self.type, dict(self.ctx)))

    def __repr__(self) -> str:
        return f"Problem(path={self.path!r}, message={self.message!r}, type={self.type!r}, ctx={self.ctx!r})"


class InputErrors(InputError):
    """Several problems in one file (``rubric validate`` lists all of them)."""

    def __init__(self, file: str | Path | None, errors: Sequence[Problem | tuple[str, str]]) -> None:
        self.problems = [e if isinstance(e, Problem) else Problem(*e) for e in errors]
        super().__init__(file, "; ".join(f"{f}: {m}" if f else m for f, m in self.errors))

    @property
    def errors(self) -> list[tuple[str, str]]:
        """(JSON path, message) of each problem."""
        return [(p.path, p.message) for p in self.problems]

    def lines(self) -> list[str]:
        return [": ".join(p for p in (self.file, f, m) if p) for f, m in self.errors]


def one_line(text: str) -> str:
    """``text`` as one line for stderr: trailing whitespace dropped, control characters (newlines included)
    escaped, so a message quoting a diff line or a library's multi-line error stays one line."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in text.rstrip()
    )


def printable(text: str) -> str:
    """``text`` with control characters escaped: reasons and failures come from a model that read an
    untrusted diff, so no terminal control sequence may reach the tty."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else "?" for c in text)
