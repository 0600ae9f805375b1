"""The one reader of unified diffs (``workspace.diff``, calibration diffs, oracle diffs).

CONTRACT (other modules rely on it): ``parse_diff(data: bytes | str, source: str = "workspace.diff")
-> list[FileChange]`` raising InputError on a diff that cannot be parsed; ``load_diff(path) ->
list[FileChange]``; ``read_diff(data, source, strict=True) -> ParsedDiff``: the same parse with every
file's hunks (old and new line numbers, the diff line each starts on), for the judge's location check,
admission's reviewer comment and the web app's diff view. ``decode_diff(data) -> str``: the text the
judge sees. It applies :mod:`grading.diff_rules`' ``holds_binary`` (a NUL byte anywhere: the one rule for
binary content, which the capture follows when it writes a diff) and size limit. Names in headers are
read with git's C-quoting (``grading.git_quote``, shared with the path-list files and the workspace).

Scope, integrity, the judge's location check and the diff view all take their paths from here, so they
cannot disagree about which file a line belongs to.

The agent writes every byte of the diff, so parsing is strict and total: every line of the input is a
preamble line before the first file, a file header, a hunk line, a binary-patch line, or an error naming
its line number. Hunk bodies are read by the counts in their headers, so diff-like text inside a hunk
(``--- a/fake``) stays content. ``diff --git a/x b/y.txt b/x b/y.txt`` (a file named ``x b/y.txt``) is split
the way git apply splits it. A ``GIT binary patch`` is checked line by line (length, base85 alphabet, the
start of its zlib stream) but never inflated: scope and integrity need its paths only, and a 1 MB literal
can inflate to a gigabyte. What the judge reads of a binary patch, one line in its place, is
``grading.binary_text``; this reader takes that line where a binary patch may stand.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grading.diff_rules import MAX_DIFF_BYTES, holds_binary
from grading.errors import InputError
from grading.git_quote import path_text, quoted_at, raw_bytes, unquote_path
from grading.strict_json import read_input_bytes

ChangeStatus = Literal["added", "deleted", "modified"]
HunkLineKind = Literal["ctx", "add", "del", "note"]

# MAX_DIFF_BYTES (far above any real workspace diff; a larger file is refused rather than read into memory)
# and holds_binary live in grading/diff_rules.py, which the capture imports without this module's models.

DEV_NULL = "/dev/null"

# The line that stands for a ``GIT binary patch`` in the text the judge reads
# (:func:`grading.binary_text.judge_text`). The reader takes it where a binary patch may stand, so that
# text is still a diff this module reads.
BINARY_NOT_SHOWN = "Binary patch not shown: "


class FileChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    old_path: str | None  # None for an added file
    new_path: str | None  # None for a deleted file
    status: ChangeStatus
    added: int = 0
    removed: int = 0
    binary: bool = False
    mode_change: bool = False

    def paths(self) -> list[str]:
        """Old and new path (each once), as scope checks them."""
        out: list[str] = []
        for p in (self.old_path, self.new_path):
            if p is not None and p not in out:
                out.append(p)
        return out


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@ -old_start,old_count +new_start,new_count @@section`` and where it sits in the diff."""

    header_line: int  # index of the header in ParsedDiff.lines
    end_line: int  # index after its last body line ("\ No newline at end of file" included)
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str  # the text after the closing "@@" (often the enclosing function)


@dataclass(frozen=True, slots=True)
class BinaryBlock:
    """One ``literal N`` or ``delta N`` block of a ``GIT binary patch``: N is the inflated size of its data
    (the content itself for a literal, the delta instructions for a delta)."""

    kind: Literal["literal", "delta"]
    size: int
    first_line: int  # index of its first data line
    end_line: int  # index of the blank line that ends it


@dataclass(frozen=True, slots=True)
class ParsedFile:
    change: FileChange
    first_line: int  # index of its first header line ("diff --git" or "---")
    end_line: int  # index after its last line
    hunks: tuple[Hunk, ...]
    # A ``GIT binary patch``: the index of its marker line and its blocks (forward, then reverse).
    binary_line: int | None = None
    binary_blocks: tuple[BinaryBlock, ...] = ()


@dataclass
class ParsedDiff:
    """A parsed diff: its lines (no line ends; CRLF undone when the whole file was converted) and files.

    In lenient mode (``read_diff(..., strict=False)``) parsing stops at the first problem: ``files`` holds
    the files before it, ``error`` the problem, and ``lines[unparsed_from:]`` the text not understood. A diff
    that ends inside a hunk (cut for display) keeps that file and hunk as far as they go.
    """

    lines: list[str]
    files: list[ParsedFile] = field(default_factory=list)
    error: InputError | None = None
    unparsed_from: int | None = None
    # The first character of each line the files were read from ("\0" for an empty one): a hunk's lines are
    # counted by str.count, and callers may look for changed lines the same way.
    firsts: str = ""

    def changes(self) -> list[FileChange]:
        return [f.change for f in self.files]

    def hunk_lines(self, hunk: Hunk) -> Iterator[tuple[HunkLineKind, int | None, int | None, int]]:
        """``(kind, old line number, new line number, index in lines)`` for each body line of ``hunk``."""
        old_no, new_no = hunk.old_start, hunk.new_start
        for index in range(hunk.header_line + 1, hunk.end_line):
            kind = self.lines[index][:1]
            if kind == "+":
                yield "add", None, new_no, index
                new_no += 1
            elif kind == "-":
                yield "del", old_no, None, index
                old_no += 1
            elif kind == "\\":
                yield "note", None, None, index
            else:  # " ", or an empty context line whose single space a tool stripped
                yield "ctx", old_no, new_no, index
                old_no += 1
                new_no += 1


# --- text and paths ----------------------------------------------------------------------------------


def decode_diff(data: bytes) -> str:
    """The diff as the judge sees it: UTF-8, with bytes that are not UTF-8 escaped as ``\\xNN``.

    The agent may write any bytes into a file (Latin-1 source, a stray byte); the run must still be
    judged, and the same bytes must always give the same text (the cache key is computed on it).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="backslashreplace")


def _header_path(rest: str) -> str | None:
    """The path of ``diff --git <a> <b>`` when both names denote the same file (always, without renames);
    None when they do not or the split is ambiguous.
    """
    if rest.startswith('"'):
        parsed = quoted_at(rest, 0)
        if parsed is None or rest[parsed[1] : parsed[1] + 1] != " ":
            return None
        second = unquote_path(rest[parsed[1] + 1 :])
        return _same_path(path_text(parsed[0]), second) if second is not None else None
    if rest.endswith('"'):
        # An unquoted name never holds '"' (git quotes such names), so the first ' "' splits them.
        idx = rest.find(' "')
        second = unquote_path(rest[idx + 1 :]) if idx >= 0 else None
        return _same_path(path_text(raw_bytes(rest[:idx])), second) if second is not None else None
    # Both unquoted, and a name may hold spaces ("x b/y.txt"): like git apply, take the one split at which
    # both names denote the same path once their prefixes (of any length) are removed.
    found = _unquoted_splits(rest)
    return path_text(raw_bytes(found.pop())) if len(found) == 1 else None


def _unquoted_splits(rest: str) -> set[str]:
    """Every path ``_same_path(rest[:k], rest[k + 1:])`` gives over the spaces ``k`` of ``rest``.

    Linear in the line: slicing and comparing at every space was quadratic, minutes for a line of spaces.
    """
    found: set[str] = set()
    n = len(rest)
    mid = (n - 1) // 2
    equal_at_mid = n % 2 == 1 and rest[mid] == " " and rest[:mid] == rest[mid + 1 :]
    if equal_at_mid:
        found.add(rest[:mid])  # --no-prefix: a == b
    first_slash = rest.find("/")
    next_slash = -1
    k = rest.find(" ", first_slash + 1) if first_slash >= 0 else -1
    while k >= 0:
        if next_slash < k + 1:
            next_slash = rest.find("/", k + 1)
            if next_slash < 0:
                break  # no later name b has a '/'
        # a = P/X (X = rest[first_slash + 1 : k]), b = Q/Y (Y = rest[next_slash + 1 :]): X == Y, non-empty.
        length = k - first_slash - 1
        if (
            length > 0
            and length == n - next_slash - 1
            and not (k == mid and equal_at_mid)
            and rest[first_slash + 1 : k] == rest[next_slash + 1 :]
        ):
            found.add(rest[next_slash + 1 :])
        k = rest.find(" ", k + 1)
    return found


def _same_path(a: str, b: str) -> str | None:
    """The path both names denote once their prefixes (``a/``, ``b/``, or none) are removed."""
    if a == b:
        return a  # --no-prefix
    if "/" in a and "/" in b:
        rest_a, rest_b = a.split("/", 1)[1], b.split("/", 1)[1]
        if rest_a == rest_b and rest_a:
            return rest_a
    return None


def _strip_prefix(name: str) -> str:
    return name.split("/", 1)[1] if "/" in name else name


def _file_header_name(text: str) -> str | None:
    """The name on a ``---``/``+++`` line (after the marker): quoted, or up to a tab (timestamp)."""
    if text.startswith('"'):
        parsed = quoted_at(text, 0)
        if parsed is None:
            return None
        return path_text(parsed[0])
    return path_text(raw_bytes(text.split("\t", 1)[0]))


# --- the scanner ------------------------------------------------------------------------------------

_HUNK_HEADER = re.compile(r"@@ -(\d{1,18})(?:,(\d{1,18}))? \+(\d{1,18})(?:,(\d{1,18}))? @@(.*)", re.DOTALL)
_BINARY_BLOCK = re.compile(r"(literal|delta) (\d{1,18})")
_BASE85_LINE = re.compile(r"[A-Za-z][0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]+")
_INDEX = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)")
# How much of a binary patch's data is inflated to see that it is a zlib stream: enough to catch garbage,
# far too little for a compression bomb to matter.
_BINARY_PROBE_LINES = 64
_BINARY_PROBE_BYTES = 64 * 1024
# The empty blob in SHA-1 and SHA-256 repositories: a new or deleted empty file has no hunks.
_EMPTY_BLOBS = (
    "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
    "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813",
)
_EXTENDED_HEADER = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "index ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
)
# Lines `diff -r` and other tools print between files of a plain unified diff.
_PLAIN_NOISE = ("diff ", "Only in ", "Index: ", "====")


@dataclass
class _Header:
    path: str | None = None  # from the "diff --git" line
    old_mode: str | None = None
    new_mode: str | None = None
    new_file: bool = False
    deleted_file: bool = False
    rename_from: str | None = None
    rename_to: str | None = None
    copy: bool = False
    minus: str | None = None  # name on the --- line, prefix kept
    plus: str | None = None
    binary: bool = False
    old_blob: str | None = None
    new_blob: str | None = None


def _split_lines(data: bytes | str) -> list[str]:
    text = data.decode("utf-8", errors="surrogateescape") if isinstance(data, bytes) else data
    # Only "\n" ends a line, as in git; str.splitlines() would also split at "\r", "\x0c", "\u2028"...
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class _Scanner:
    def __init__(self, lines: list[str], source: str, strict: bool) -> None:
        self.lines = lines
        self.source = source
        self.strict = strict
        self.n = len(lines)
        self.files: list[ParsedFile] = []
        self.cut: InputError | None = None  # lenient: the input ended inside a hunk, kept as far as it goes
        # The first character of every line ("\0" for an empty one; NUL bytes never get this far), so
        # that a hunk's lines are counted by str.count in C rather than one by one (see _counted_hunk).
        self.firsts = "".join([line[:1] or "\0" for line in lines])

    def error(self, index: int, message: str) -> InputError:
        return InputError(self.source, message, f"line {min(index, self.n - 1) + 1}")

    def is_git_start(self, i: int) -> bool:
        return self.lines[i].startswith("diff --git ")

    def is_file_lines(self, i: int) -> bool:
        return self.lines[i].startswith("--- ") and i + 1 < self.n and self.lines[i + 1].startswith("+++ ")

    def is_plain_start(self, i: int) -> bool:
        # The hunk header is required so that a commit message line such as "--- notes" is not a file.
        return self.is_file_lines(i) and i + 2 < self.n and self.lines[i + 2].startswith("@@ ")

    def at_boundary(self, i: int) -> bool:
        """Where a file's diff may end: the next file, a blank line, or a format-patch signature."""
        line = self.lines[i]
        return self.is_git_start(i) or self.is_plain_start(i) or not line.strip() or line == "-- "

    def scan(self, parsed: ParsedDiff, strict: bool) -> None:
        i = 0
        # Preamble: anything before the first file (a format-patch message, a commit header).
        while i < self.n and not (self.is_git_start(i) or self.is_plain_start(i)):
            i += 1
        if i == self.n:
            if any(line.strip() for line in self.lines):
                first = next(k for k, line in enumerate(self.lines) if line.strip())
                self.fail(
                    parsed,
                    strict,
                    first,
                    self.error(first, "not a diff: no file header ('diff --git' or '---'/'+++') found"),
                )
            return
        while i < self.n:
            try:
                if self.is_git_start(i):
                    i = self.git_file(i)
                elif self.is_plain_start(i):
                    i = self.plain_file(i)
                elif not self.lines[i].strip() or self.lines[i].startswith(_PLAIN_NOISE):
                    i += 1
                elif self.lines[i] == "-- ":
                    break  # git format-patch signature: the rest is the git version
                else:
                    raise self.error(i, "unexpected line between files (not a file header or hunk)")
            except InputError as exc:
                self.fail(parsed, strict, i, exc)
                return

    @staticmethod
    def fail(parsed: ParsedDiff, strict: bool, at: int, exc: InputError) -> None:
        if strict:
            raise exc
        parsed.error = exc
        parsed.unparsed_from = at

    # A file in git's format: "diff --git", extended header lines, then ---/+++ and hunks, or a binary patch.
    def git_file(self, start: int) -> int:
        header = _Header(path=_header_path(self.lines[start][len("diff --git ") :]))
        i = start + 1
        while i < self.n and self.lines[i].startswith(_EXTENDED_HEADER):
            self.extended(header, self.lines[i], i)
            i += 1
        if i < self.n and self.is_file_lines(i):
            header.minus = self.name_of(i, 4)
            header.plus = self.name_of(i + 1, 4)
            i += 2
        hunks_start = i
        hunks: list[Hunk] = []
        added = removed = 0
        binary_line: int | None = None
        blocks: list[BinaryBlock] = []
        if i < self.n and self.lines[i] == "GIT binary patch":
            header.binary = True
            binary_line = i
            i = self.binary_patch(i + 1, blocks)
        elif i < self.n and (
            (self.lines[i].startswith("Binary files ") and self.lines[i].endswith(" differ"))
            or self.lines[i].startswith(BINARY_NOT_SHOWN)
        ):
            header.binary = True
            i += 1
        else:
            i, added, removed = self.hunks(i, hunks)
            if i == hunks_start and self.content_missing(header):
                raise self.error(i, "the file's content change is missing: truncated diff")
        if i < self.n and not self.at_boundary(i):
            raise self.error(i, "unexpected line in a file's diff (not a header line or a hunk)")
        old_path, new_path = self.git_paths(header, start)
        if header.new_file:
            old_path = None
        if header.deleted_file:
            new_path = None
        if header.minus == DEV_NULL:
            old_path = None
        if header.plus == DEV_NULL:
            new_path = None
        if header.copy:
            old_path = None  # the copy's source is not changed
        if old_path is None and new_path is None:
            raise self.error(start, "a file that is neither old nor new")
        self.add(old_path, new_path, added, removed, header.binary, header, start, i, hunks)
        if binary_line is not None:
            last = self.files[-1]
            self.files[-1] = ParsedFile(
                last.change, last.first_line, last.end_line, last.hunks, binary_line, tuple(blocks)
            )
        return i

    def extended(self, header: _Header, text: str, i: int) -> None:
        if text.startswith("old mode "):
            header.old_mode = text[len("old mode ") :]
        elif text.startswith("new mode "):
            header.new_mode = text[len("new mode ") :]
        elif text.startswith("index "):
            match = _INDEX.match(text)
            if match is not None:
                header.old_blob, header.new_blob = match[1], match[2]
        elif text.startswith("new file mode "):
            header.new_file = True
        elif text.startswith("deleted file mode "):
            header.deleted_file = True
        elif text.startswith(("rename from ", "copy from ")):
            header.rename_from = self.unquote(text.split(" ", 2)[2], i)
            header.copy = header.copy or text.startswith("copy")
        elif text.startswith(("rename to ", "copy to ")):
            header.rename_to = self.unquote(text.split(" ", 2)[2], i)

    @staticmethod
    def content_missing(header: _Header) -> bool:
        """A git file section with no hunks although its header says the content changed (a cut diff)."""
        if header.old_blob is None or header.new_blob is None:
            # git leaves the index line out only for a pure mode change or a pure rename.
            pure_mode_change = header.old_mode is not None and header.new_mode is not None
            return not pure_mode_change and header.rename_from is None
        if header.old_blob == header.new_blob:
            return False

        def empty(blob: str) -> bool:
            return len(blob) >= 7 and (set(blob) == {"0"} or any(e.startswith(blob) for e in _EMPTY_BLOBS))

        return not (empty(header.old_blob) and empty(header.new_blob))

    def unquote(self, text: str, i: int) -> str:
        name = unquote_path(text)
        if name is None or not name:
            raise self.error(i, f"malformed file name {text!r}")
        return name

    def name_of(self, i: int, skip: int) -> str:
        name = _file_header_name(self.lines[i][skip:])
        if name is None or not name:
            raise self.error(i, "malformed file name")
        return name

    def git_paths(self, header: _Header, start: int) -> tuple[str | None, str | None]:
        if header.rename_from is not None and header.rename_to is not None:
            return header.rename_from, header.rename_to
        if header.path is not None:
            return header.path, header.path
        # No rename lines and the header is ambiguous: the ---/+++ lines name the file.
        old = header.minus if header.minus not in (None, DEV_NULL) else None
        new = header.plus if header.plus not in (None, DEV_NULL) else None
        if old is not None or new is not None:
            old_path = _strip_prefix(old) if old is not None else None
            new_path = _strip_prefix(new) if new is not None else None
            return old_path or new_path, new_path or old_path
        raise self.error(start, "cannot tell the file name from the 'diff --git' header")

    def plain_file(self, start: int) -> int:
        minus = self.name_of(start, 4)
        plus = self.name_of(start + 1, 4)
        hunks: list[Hunk] = []
        i, added, removed = self.hunks(start + 2, hunks)
        old = None if minus == DEV_NULL else minus
        new = None if plus == DEV_NULL else plus
        if old is None and new is None:
            raise self.error(start, "both sides of the file are /dev/null")
        if old is not None and new is not None:
            same = _same_path(old, new)
            if same is not None:
                old = new = same
        else:
            # One side is /dev/null: drop the a/ or b/ prefix of the other.
            if old is not None and old.startswith("a/"):
                old = old[2:]
            if new is not None and new.startswith("b/"):
                new = new[2:]
        self.add(old, new, added, removed, False, None, start, i, hunks)
        return i

    def add(
        self,
        old_path: str | None,
        new_path: str | None,
        added: int,
        removed: int,
        binary: bool,
        header: _Header | None,
        start: int,
        end: int,
        hunks: list[Hunk],
    ) -> None:
        status: ChangeStatus = "added" if old_path is None else "deleted" if new_path is None else "modified"
        mode_change = bool(
            header is not None
            and header.old_mode is not None
            and header.new_mode is not None
            and header.old_mode != header.new_mode
        )
        change = FileChange(
            old_path=old_path,
            new_path=new_path,
            status=status,
            added=added,
            removed=removed,
            binary=binary,
            mode_change=mode_change,
        )
        self.files.append(ParsedFile(change=change, first_line=start, end_line=end, hunks=tuple(hunks)))

    def hunks(self, start: int, out: list[Hunk]) -> tuple[int, int, int]:
        """Read the hunks at ``start`` by their headers' line counts; (next line, added, removed)."""
        lines = self.lines
        n = self.n
        i = start
        added = removed = 0
        while i < n and lines[i].startswith("@@ "):
            match = _HUNK_HEADER.match(lines[i])
            if match is None:
                raise self.error(i, "malformed hunk header")
            old_count = int(match[2]) if match[2] is not None else 1
            new_count = int(match[4]) if match[4] is not None else 1
            old_left, new_left = old_count, new_count
            header_index = i
            i += 1
            counted = self._counted_hunk(i, old_count, new_count)
            if counted is not None:
                i, hunk_added, hunk_removed = counted
                added += hunk_added
                removed += hunk_removed
                old_left = new_left = 0
            while old_left > 0 or new_left > 0:
                if i >= n:
                    cut = self.error(
                        n - 1,
                        f"the diff ends inside the hunk of line {header_index + 1} "
                        f"({old_left} old and {new_left} new lines missing): truncated diff",
                    )
                    if self.strict:
                        raise cut
                    self.cut = cut
                    break
                line = lines[i]
                kind = line[:1]
                if kind == "+":
                    new_left -= 1
                    added += 1
                elif kind == "-":
                    old_left -= 1
                    removed += 1
                elif kind == " " or line == "" or line == "\r":
                    old_left -= 1
                    new_left -= 1
                elif kind != "\\":
                    raise self.error(
                        i,
                        f"expected a hunk line (' ', '+', '-'); the hunk of line {header_index + 1} "
                        f"still needs {old_left} old and {new_left} new lines (truncated or corrupt diff)",
                    )
                if old_left < 0 or new_left < 0:
                    raise self.error(i, f"the hunk of line {header_index + 1} is longer than its header says")
                i += 1
            if i < n and lines[i].startswith("\\"):
                i += 1  # "\ No newline at end of file" after the last line
            out.append(
                Hunk(
                    header_line=header_index,
                    end_line=i,
                    old_start=int(match[1]),
                    old_count=old_count,
                    new_start=int(match[3]),
                    new_count=new_count,
                    section=match[5],
                )
            )
        return i, added, removed

    def _counted_hunk(self, start: int, old_count: int, new_count: int) -> tuple[int, int, int] | None:
        """(end, added, removed) of the hunk body at ``start`` when it is plainly well-formed, else None
        and the line-by-line walk reads it (and names what is wrong).

        Each round counts the next ``max(old_left, new_left)`` lines: a line lowers each count by at most
        one, so the body cannot end sooner, and it ends exactly there when both counts reach zero. A body
        with any other kind of line, a "\\" line, an overshoot or too few lines is left to the walk.
        """
        firsts = self.firsts
        old_left, new_left = old_count, new_count
        added = removed = 0
        i = start
        while old_left > 0 or new_left > 0:
            step = old_left if old_left > new_left else new_left
            end = i + step
            if end > self.n:
                return None
            plus = firsts.count("+", i, end)
            minus = firsts.count("-", i, end)
            context = firsts.count(" ", i, end) + firsts.count("\0", i, end)
            if plus + minus + context != step:
                return None
            added += plus
            removed += minus
            old_left -= minus + context
            new_left -= plus + context
            if old_left < 0 or new_left < 0:
                return None
            i = end
        return i, added, removed

    def binary_patch(self, start: int, out: list[BinaryBlock]) -> int:
        """Check a ``GIT binary patch`` (literal/delta blocks of base85 zlib data), append its blocks to
        ``out``; return the next line.

        Every data line is checked for its length and alphabet, and the start of each block is inflated
        (at most ``_BINARY_PROBE_BYTES``) to see a zlib stream; the block is never inflated whole.
        """
        i = start
        blocks = 0
        while i < self.n:
            match = _BINARY_BLOCK.fullmatch(self.lines[i])
            if match is None:
                break
            i += 1
            block_start = i
            while i < self.n and self.lines[i]:
                self.checkbase85_line(i)
                i += 1
            if i >= self.n:
                raise self.error(self.n - 1, "the diff ends inside a binary patch: truncated diff")
            self.probe_zlib(block_start, i)
            kind: Literal["literal", "delta"] = "literal" if match[1] == "literal" else "delta"
            out.append(BinaryBlock(kind, int(match[2]), block_start, i))
            i += 1  # the blank line that ends a block
            blocks += 1
        if blocks == 0:
            raise self.error(i, "'GIT binary patch' without a literal or delta block")
        return i

    def checkbase85_line(self, i: int) -> None:
        text = self.lines[i]
        if _BASE85_LINE.fullmatch(text) is None:
            raise self.error(i, "corrupt binary patch line (not base85)")
        length_char = text[0]
        length = ord(length_char) - (ord("A") - 1 if length_char <= "Z" else ord("a") - 27)
        if len(text) - 1 != (length + 3) // 4 * 5:
            raise self.error(i, "corrupt binary patch line (wrong length): truncated diff?")

    def probe_zlib(self, first: int, end: int) -> None:
        data = bytearray()
        for index in range(first, min(end, first + _BINARY_PROBE_LINES)):
            try:
                data += base85_line(self.lines[index])
            except ValueError:
                raise self.error(index, "corrupt binary patch line (not base85)") from None
        try:
            zlib.decompressobj().decompress(bytes(data), _BINARY_PROBE_BYTES)
        except zlib.error:
            raise self.error(first, "corrupt binary patch (its data is not a zlib stream)") from None


def base85_line(text: str) -> bytes:
    """The bytes of one binary-patch data line: its length letter, then base85 (ValueError if corrupt)."""
    length = ord(text[0]) - (ord("A") - 1 if text[0] <= "Z" else ord("a") - 27)
    return base64.b85decode(text[1:])[:length]


def read_diff(data: bytes | str, source: str = "workspace.diff", *, strict: bool = True) -> ParsedDiff:
    """Parse a unified diff (git's format, or a plain ``diff -u``) with every file's hunks.

    Strict (the default): an InputError naming ``source`` and the line for anything that is not a complete
    diff (binary garbage, a truncated hunk or binary patch, a malformed header). Lenient: the files before
    the first problem, and the problem in ``ParsedDiff.error`` (for showing a diff, never for grading).
    """
    if isinstance(data, bytes) and data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\0" in data[:256]:
        error = InputError(
            source, "UTF-16 text (a shell redirect on Windows?); a diff is UTF-8 bytes", "line 1"
        )
        if strict:
            raise error
        return ParsedDiff(lines=_split_lines(data), error=error, unparsed_from=0)
    lines = _split_lines(data)
    if lines and lines[0].startswith("\ufeff"):
        # A UTF-8 byte order mark would hide the first file's header.
        lines[0] = lines[0][1:]
    parsed = ParsedDiff(lines=lines)
    nul_line = (
        next((i for i, line in enumerate(lines) if holds_binary(line)), None) if holds_binary(data) else None
    )
    if nul_line is not None:
        error = InputError(source, "NUL byte: binary data, not a diff", f"line {nul_line + 1}")
        if strict:
            raise error
        # Parse what comes before it, as for any other problem.
        parsed.error, parsed.unparsed_from = error, nul_line
        lines = lines[:nul_line]
    first_header = next((line for line in lines if line.startswith(("diff --git ", "--- "))), None)
    if first_header is not None and first_header.endswith("\r"):
        # The whole file went through a CRLF conversion (saved on Windows): undo it so headers parse.
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        parsed.lines = lines + parsed.lines[len(lines) :]
    scanner = _Scanner(lines, source, strict)
    scanner.scan(parsed, strict)
    parsed.files = scanner.files
    parsed.firsts = scanner.firsts
    if scanner.cut is not None and parsed.error is None:
        parsed.error = scanner.cut
    if nul_line is not None and parsed.unparsed_from is not None and parsed.unparsed_from > nul_line:
        parsed.unparsed_from = nul_line
    return parsed


def parse_diff(data: bytes | str, source: str = "workspace.diff") -> list[FileChange]:
    """Parse a unified diff (git's format, or a plain ``diff -u``) into one FileChange per file section.

    An empty diff is no change. Raises InputError naming ``source`` and the line for anything else that
    is not a complete diff (binary garbage, a truncated hunk or binary patch, a malformed header).
    """
    return read_diff(data, source).changes()


def load_diff(path: Path) -> list[FileChange]:
    """Read and parse the diff at ``path`` (InputError when it is missing, too large or not a diff)."""
    return parse_diff(read_diff_bytes(path), str(path))


def read_diff_bytes(path: Path) -> bytes:
    """The bytes of the diff at ``path``, at most MAX_DIFF_BYTES of a regular file (InputError otherwise)."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # read_input_bytes names the problem
    if size > MAX_DIFF_BYTES:
        raise InputError(path, f"{size} bytes; diffs over {MAX_DIFF_BYTES} bytes are refused")
    # A regular file only, read up to the cap: a FIFO would block and /dev/zero never end.
    return read_input_bytes(path, MAX_DIFF_BYTES)
