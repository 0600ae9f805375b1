"""The Python parse check of revert-condition mutants: with the base tree at hand, a mutant of a Python
file whose mutated file no longer parses (``ast.parse``) while the oracle's version does is left out, with
a note: it would measure the judge's sense of syntax, not its review.

The mutated file is the base's with the mutant's hunks applied. The top-level statement holding the
restored line is parsed alone, and the whole file only when that does not parse, so a large file's check
is one small parse per mutant. A file the base does not hold, or larger than ``MAX_PARSED_BYTES``, is not
checked.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Mapping, Sequence

from grading.mutants.diff import DiffEdit, HunkRef, OracleLines
from grading.mutants.kinds import Candidate

# A Python file larger than this at the base is not parsed to check a mutant (the check is skipped).
MAX_PARSED_BYTES = 4 * 1024 * 1024

# The base tree's bytes of a path (None when it has no such file), to check that a mutant still parses.
BaseReader = Callable[[str], bytes | None]


def _patched(base: bytes, hunks: Sequence[tuple[int, int, list[bytes]]]) -> bytes:
    """``base`` with ``hunks`` (old start, old count, body) applied in order, as ``git apply`` would for a
    diff that applies (context and removed lines are taken as the diff says)."""
    lines = base.split(b"\n")
    out: list[bytes] = []
    at = 0
    for old_start, old_count, body in hunks:
        start = old_start - 1 if old_count else old_start  # "-5,0": added after line 5
        out += lines[at:start]
        at = start
        for line in body:
            tag = line[:1]
            if tag in (b" ", b"", b"-"):
                at += 1
            if tag in (b" ", b"", b"+"):
                out.append(line[1:])
    out += lines[at:]
    return b"\n".join(out)


def _tree(source: bytes | str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parses(source: bytes | str) -> bool:
    return _tree(source) is not None


# A PEP 263 encoding declaration (in a file's first two lines, it says how the file is decoded).
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def _head(source: bytes) -> bytes:
    return b"\n".join(source.split(b"\n", 2)[:2])


def _statement_lines(source: bytes, tree: ast.Module) -> list[tuple[int, int]] | None:
    """The lines (first and last, from 1) of each top-level statement of a file that parses, decorators
    included and those sharing a line merged; None when a part of the file might not read alone as it does
    in the file: a "\\r" (the parser ends lines there too), an encoding declaration, or the future import
    that changes the grammar."""
    if b"\r" in source or _CODING.search(_head(source)) or b"barry_as_FLUFL" in source:
        return None
    spans: list[tuple[int, int]] = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        if spans and first <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(last, spans[-1][1]))
        else:
            spans.append((first, last))
    return spans


class _PythonCheck:
    """Whether a revert-condition mutant of a Python file still parses, from the base tree's bytes."""

    def __init__(self, oracle: OracleLines, base: BaseReader) -> None:
        self.oracle = oracle
        self.base = base
        self._base: dict[int, bytes | None] = {}
        # Per file whose oracle version parses: its lines and its top-level statements' (see _part_parses).
        self._parsed: dict[int, tuple[list[bytes], list[tuple[int, int]] | None] | None] = {}

    def _file(self, f: int, bodies: Mapping[HunkRef, list[bytes]]) -> bytes | None:
        if f not in self._base:
            old_path = self.oracle.files[f].change.old_path
            data = b"" if old_path is None else self.base(old_path)
            self._base[f] = data if data is None or len(data) <= MAX_PARSED_BYTES else None
        data = self._base[f]
        if data is None:
            return None
        pf = self.oracle.files[f]
        hunks = [
            (hunk.old_start, hunk.old_count, list(bodies.get((f, h), self.oracle.body((f, h)))))
            for h, hunk in enumerate(pf.hunks)
        ]
        return _patched(data, hunks)

    def breaks(self, edit: DiffEdit) -> bool:
        """True when a Python file the edit replaces a hunk of parses in the oracle and not in the mutant.
        A file the base does not hold (or too large to parse) is not checked."""
        bodies = edit.bodies or {}
        for f in sorted({ref[0] for ref in bodies}):
            if not (self.oracle.files[f].change.new_path or "").endswith(".py"):
                continue
            if f not in self._parsed:
                fixed = self._file(f, {})
                tree = None if fixed is None else _tree(fixed)
                if fixed is None or tree is None:
                    self._parsed[f] = None
                else:
                    self._parsed[f] = fixed.split(b"\n"), _statement_lines(fixed, tree)
            parsed = self._parsed[f]
            if parsed is None:
                continue  # not Python this can parse even as the oracle has it: nothing to compare
            mutated = self._file(f, bodies)
            if mutated is not None and not _part_parses(*parsed, mutated) and not _parses(mutated):
                return True
        return False


def _part_parses(lines: list[bytes], statements: list[tuple[int, int]] | None, mutated: bytes) -> bool:
    """True when ``mutated`` (the file of ``lines``, which parses, with some lines replaced) surely parses:
    the lines it replaces lie in one top-level statement (``statements``, from :func:`_statement_lines`)
    and that statement's lines, as the mutant has them, parse alone. A part that parses alone ends where it
    began, outside any bracket, string or block, so the unchanged statements around it read as before; the
    file is then parsed as a whole only when the part does not parse (a string opened in it may close
    further on), which keeps a large file's check to one small parse per mutant. False: parse it whole."""
    if statements is None:
        return False
    new = mutated.split(b"\n")
    if len(new) != len(lines) or _CODING.search(_head(mutated)):
        return False
    changed = [i for i, (old, line) in enumerate(zip(lines, new, strict=True)) if old != line]
    if not changed:
        return True  # the file as the oracle has it
    at = bisect.bisect_right(statements, (changed[0] + 1, len(new) + 1)) - 1
    if at < 0 or statements[at][1] < changed[-1] + 1:
        return False  # outside any statement (a comment between two), or across two of them
    first, last = statements[at]
    try:
        part = b"\n".join(new[first - 1 : last]).decode("utf-8")  # as the file is read: no declaration
    except UnicodeDecodeError:
        return False
    return _parses(part)


def python_check(
    oracle: OracleLines,
    candidates: list[Candidate],
    base: BaseReader | None,
    notes: list[str],
) -> _PythonCheck | None:
    """The parse check for ``candidates`` (revert-condition), or None when none is of a Python file or there
    is no base to check them against (a note says so)."""
    python = sum(any(oracle.path(f).endswith(".py") for f, _ in (c[2].bodies or {})) for c in candidates)
    if not python:
        return None
    if base is None:
        notes.append(
            f"revert-condition: {python} mutant{'s' if python > 1 else ''} of Python files not "
            "checked to parse (no checkout of the base commit)"
        )
        return None
    return _PythonCheck(oracle, base)


def broken_note(broken: list[str]) -> str:
    places = "; ".join(text.partition(": ")[0].removeprefix("swaps the ") for text in broken[:5])
    more = f" and {len(broken) - 5} more" if len(broken) > 5 else ""
    return (
        f"revert-condition: {len(broken)} mutant{'s' if len(broken) > 1 else ''} left out because the "
        f"Python file no longer parses with the old line back ({places}{more}): such a mutant measures "
        "the judge's sense of syntax, not its review"
    )
