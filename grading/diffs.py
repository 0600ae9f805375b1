"""Unified diff (``workspace.diff``) -> :class:`FileChange` per changed file.

CONTRACT (other modules rely on it): ``parse_diff(data: bytes | str, source: str = "workspace.diff")
-> list[FileChange]`` raising InputError on a diff that cannot be parsed;
``load_diff(path) -> list[FileChange]``.

The agent writes every byte of the diff, so parsing is strict and total: every line of the input is a
preamble line before the first file, a file header, a hunk line, a binary-patch line, or an error naming
its line number. File headers are read here, not by unidiff, because unidiff splits
``diff --git a/x b/y.txt b/x b/y.txt`` (a file named ``x b/y.txt``) at the wrong space and then rejects the
diff. unidiff parses the hunks of each file and counts their lines.
"""

from __future__ import annotations

import base64
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict
from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from grading.errors import InputError

ChangeStatus = Literal["added", "deleted", "modified"]

# Far above any real workspace diff; a larger file is refused rather than read into memory.
MAX_DIFF_BYTES = 256 * 1024 * 1024

DEV_NULL = "/dev/null"


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


# --- paths ------------------------------------------------------------------------------------------

_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def path_text(raw: bytes) -> str:
    """A path as text: UTF-8, bytes that are not UTF-8 shown as ``\\xNN`` (nothing lost, nothing crashes)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="backslashreplace")


def _raw(text: str) -> bytes:
    # Lines are decoded with surrogateescape, so this gives back the exact bytes of the input.
    return text.encode("utf-8", errors="surrogateescape")


def _unquote_at(text: str, start: int) -> tuple[bytes, int] | None:
    """Read git's C-style quoted name starting at ``text[start] == '"'``; (bytes, index after the quote)."""
    out = bytearray()
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return bytes(out), i + 1
        if c != "\\":
            out += _raw(c)
            i += 1
            continue
        if i + 1 >= n:
            return None
        e = text[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif re.fullmatch(r"[0-3][0-7][0-7]", text[i + 1 : i + 4]):
            out.append(int(text[i + 1 : i + 4], 8))
            i += 4
        else:
            return None
    return None


def unquote_path(text: str) -> str | None:
    """Unquote one name as git writes it (``"caf\\303\\251.txt"`` -> ``café.txt``); None if malformed."""
    if text.startswith('"'):
        parsed = _unquote_at(text, 0)
        if parsed is None or parsed[1] != len(text):
            return None
        return path_text(parsed[0])
    return path_text(_raw(text))


def _header_path(rest: str) -> str | None:
    """The path of ``diff --git <a> <b>`` when both names denote the same file (always, without renames);
    None when they do not or the split is ambiguous.
    """
    if rest.startswith('"'):
        parsed = _unquote_at(rest, 0)
        if parsed is None or rest[parsed[1] : parsed[1] + 1] != " ":
            return None
        second = unquote_path(rest[parsed[1] + 1 :])
        return _same_path(path_text(parsed[0]), second) if second is not None else None
    if rest.endswith('"'):
        # An unquoted name never holds '"' (git quotes such names), so the first ' "' splits them.
        idx = rest.find(' "')
        second = unquote_path(rest[idx + 1 :]) if idx >= 0 else None
        return _same_path(path_text(_raw(rest[:idx])), second) if second is not None else None
    # Both unquoted, and a name may hold spaces ("x b/y.txt"): like git apply, take the one split at which
    # both names denote the same path once their prefixes (of any length) are removed.
    found = _unquoted_splits(rest)
    return path_text(_raw(found.pop())) if len(found) == 1 else None


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
        parsed = _unquote_at(text, 0)
        if parsed is None:
            return None
        return path_text(parsed[0])
    return path_text(_raw(text.split("\t", 1)[0]))


# --- the scanner ------------------------------------------------------------------------------------

_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BINARY_BLOCK = re.compile(r"(literal|delta) (\d+)")
_INDEX = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)")
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
    pieces = text.split("\n")
    lines = [p + "\n" for p in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


class _Scanner:
    def __init__(self, lines: list[str], source: str) -> None:
        self.lines = lines
        self.source = source
        self.n = len(lines)
        self.changes: list[FileChange] = []

    def error(self, index: int, message: str) -> InputError:
        return InputError(self.source, message, f"line {min(index, self.n - 1) + 1}")

    def text(self, index: int) -> str:
        line = self.lines[index]
        return line[:-1] if line.endswith("\n") else line

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
        return self.is_git_start(i) or self.is_plain_start(i) or not line.strip() or line == "-- \n"

    def scan(self) -> list[FileChange]:
        i = 0
        # Preamble: anything before the first file (a format-patch message, a commit header).
        while i < self.n and not (self.is_git_start(i) or self.is_plain_start(i)):
            i += 1
        if i == self.n:
            if any(line.strip() for line in self.lines):
                first = next(k for k, line in enumerate(self.lines) if line.strip())
                raise self.error(first, "not a diff: no file header ('diff --git' or '---'/'+++') found")
            return []
        while i < self.n:
            if self.is_git_start(i):
                i = self.git_file(i)
            elif self.is_plain_start(i):
                i = self.plain_file(i)
            elif not self.lines[i].strip() or self.lines[i].startswith(_PLAIN_NOISE):
                i += 1
            elif self.lines[i] == "-- \n":
                break  # git format-patch signature: the rest is the git version
            else:
                raise self.error(i, "unexpected line between files (not a file header or hunk)")
        return self.changes

    # A file in git's format: "diff --git", extended header lines, then ---/+++ and hunks, or a binary patch.
    def git_file(self, start: int) -> int:
        header = _Header(path=_header_path(self.text(start)[len("diff --git ") :]))
        i = start + 1
        while i < self.n and self.lines[i].startswith(_EXTENDED_HEADER):
            self.extended(header, self.text(i), i)
            i += 1
        if i < self.n and self.is_file_lines(i):
            header.minus = self.name_of(i, 4)
            header.plus = self.name_of(i + 1, 4)
            i += 2
        hunks_start = i
        if i < self.n and self.text(i) == "GIT binary patch":
            header.binary = True
            i = self.binary_patch(i + 1)
            added = removed = 0
        elif i < self.n and self.text(i).startswith("Binary files ") and self.text(i).endswith(" differ"):
            header.binary = True
            i += 1
            added = removed = 0
        else:
            i, added, removed = self.hunks(i)
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
        self.add(old_path, new_path, added, removed, header.binary, header)
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
        name = _file_header_name(self.text(i)[skip:])
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
        i, added, removed = self.hunks(start + 2)
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
        self.add(old, new, added, removed, False, None)
        return i

    def add(
        self,
        old_path: str | None,
        new_path: str | None,
        added: int,
        removed: int,
        binary: bool,
        header: _Header | None,
    ) -> None:
        status: ChangeStatus = "added" if old_path is None else "deleted" if new_path is None else "modified"
        mode_change = bool(
            header is not None
            and header.old_mode is not None
            and header.new_mode is not None
            and header.old_mode != header.new_mode
        )
        self.changes.append(
            FileChange(
                old_path=old_path,
                new_path=new_path,
                status=status,
                added=added,
                removed=removed,
                binary=binary,
                mode_change=mode_change,
            )
        )

    def hunks(self, start: int) -> tuple[int, int, int]:
        """Find the extent of the hunks at ``start`` from their headers' line counts; unidiff counts them."""
        i = start
        hunk_count = 0
        while i < self.n and self.lines[i].startswith("@@ "):
            match = _HUNK_HEADER.match(self.lines[i])
            if match is None:
                raise self.error(i, "malformed hunk header")
            old_left = int(match[2]) if match[2] is not None else 1
            new_left = int(match[4]) if match[4] is not None else 1
            header_index = i
            hunk_count += 1
            i += 1
            while old_left > 0 or new_left > 0:
                if i >= self.n:
                    raise self.error(
                        self.n - 1,
                        f"the diff ends inside the hunk of line {header_index + 1} "
                        f"({old_left} old and {new_left} new lines missing): truncated diff",
                    )
                kind = self.lines[i][:1]
                if kind == "+":
                    new_left -= 1
                elif kind == "-":
                    old_left -= 1
                elif kind == " " or self.lines[i] in ("\n", "\r\n"):
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
            if i < self.n and self.lines[i].startswith("\\"):
                i += 1  # "\ No newline at end of file" after the last line
        if i == start:
            return i, 0, 0
        try:
            # metadata_only: counts without a Line object per line, several times faster on big diffs.
            patch = PatchSet(["--- a/file\n", "+++ b/file\n", *self.lines[start:i]], metadata_only=True)
        except UnidiffParseError as exc:
            raise self.error(start, f"unparsable hunk: {exc}") from None
        if len(patch) != 1 or len(patch[0]) != hunk_count:
            # Every line was accounted for above, so unidiff must have found exactly these hunks.
            raise self.error(start, "unparsable hunks")
        return i, patch[0].added, patch[0].removed

    def binary_patch(self, start: int) -> int:
        """Check a ``GIT binary patch`` (literal/delta blocks of base85 zlib data); return the next line."""
        i = start
        blocks = 0
        while i < self.n:
            match = _BINARY_BLOCK.fullmatch(self.text(i))
            if match is None:
                break
            size = int(match[2])
            i += 1
            data = bytearray()
            while i < self.n and self.text(i):
                data += self.base85_line(i)
                i += 1
            if i >= self.n:
                raise self.error(self.n - 1, "the diff ends inside a binary patch: truncated diff")
            try:
                inflated = zlib.decompress(bytes(data))
            except zlib.error:
                raise self.error(i - 1, "corrupt binary patch (its data does not inflate)") from None
            if match[1] == "literal" and len(inflated) != size:
                raise self.error(i - 1, f"corrupt binary patch: {len(inflated)} bytes, {size} announced")
            i += 1  # the blank line that ends a block
            blocks += 1
        if blocks == 0:
            raise self.error(i, "'GIT binary patch' without a literal or delta block")
        return i

    def base85_line(self, i: int) -> bytes:
        text = self.text(i)
        length_char = text[:1]
        if "A" <= length_char <= "Z":
            length = ord(length_char) - ord("A") + 1
        elif "a" <= length_char <= "z":
            length = ord(length_char) - ord("a") + 27
        else:
            raise self.error(i, "corrupt binary patch line")
        body = text[1:]
        if len(body) != (length + 3) // 4 * 5:
            raise self.error(i, "corrupt binary patch line (wrong length): truncated diff?")
        try:
            return base64.b85decode(body)[:length]
        except ValueError:
            raise self.error(i, "corrupt binary patch line (not base85)") from None


def parse_diff(data: bytes | str, source: str = "workspace.diff") -> list[FileChange]:
    """Parse a unified diff (git's format, or a plain ``diff -u``) into one FileChange per file section.

    An empty diff is no change. Raises InputError naming ``source`` and the line for anything else that
    is not a complete diff (binary garbage, a truncated hunk or binary patch, a malformed header).
    """
    if isinstance(data, bytes) and data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\0" in data[:256]:
        raise InputError(
            source, "UTF-16 text (a shell redirect on Windows?); a diff is UTF-8 bytes", "line 1"
        )
    lines = _split_lines(data)
    if lines and lines[0].startswith("\ufeff"):
        # A UTF-8 byte order mark would hide the first file's header.
        lines[0] = lines[0][1:]
    for index, line in enumerate(lines):
        if "\x00" in line:
            raise InputError(source, "NUL byte: binary data, not a diff", f"line {index + 1}")
    first_header = next(
        (line for line in lines if line.startswith(("diff --git ", "--- "))),
        None,
    )
    if first_header is not None and first_header.endswith("\r\n"):
        # The whole file went through a CRLF conversion (saved on Windows): undo it so headers parse.
        lines = [line[:-2] + "\n" if line.endswith("\r\n") else line for line in lines]
    return _Scanner(lines, source).scan()


def load_diff(path: Path) -> list[FileChange]:
    """Read and parse the diff at ``path`` (InputError when it is missing, too large or not a diff)."""
    try:
        size = path.stat().st_size
        if size > MAX_DIFF_BYTES:
            raise InputError(path, f"{size} bytes; diffs over {MAX_DIFF_BYTES} bytes are refused")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a diff file") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror}") from None
    return parse_diff(data, str(path))
