"""What the judge reads of a binary file: ``judge_text(diff_text)`` is the diff with every ``GIT binary
patch`` replaced by one line (path, status, each side's size and, for a literal, the sha256 of its content).

The judge cannot review base85, and a binary file's bytes must not count toward its input limit. A literal
is inflated as a stream for its sha256, never past its stated size nor past BINARY_HASH_MAX_BYTES: a 1 MB
literal can inflate to a gigabyte. The files, paths and blocks come from the one reader of unified diffs
(``grading.diffs``), which also reads the line this module writes (:data:`grading.diffs.BINARY_NOT_SHOWN`).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from grading.diffs import BINARY_NOT_SHOWN, BinaryBlock, ParsedFile, base85_line, read_diff
from grading.git_quote import c_quote, raw_bytes

# A literal up to this size is inflated (streamed, never held whole) for its content's sha256; a larger one
# is not: Python decodes base85 at about 8 MB/s, and the judge's input must not wait on a huge file.
BINARY_HASH_MAX_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BinarySide:
    """One side (old or new) of a binary file as far as its patch tells: size and content sha256."""

    present: bool  # False: the file does not exist on this side (added or deleted)
    size: int | None = None  # None: the patch does not tell
    sha256: str | None = None
    no_hash: str = ""  # why there is no sha256 (a delta, over the hashing limit, corrupt data)

    def describe(self) -> str:
        if not self.present:
            return "absent"
        if self.size is None:
            return "size unknown"
        text = f"{self.size} bytes"
        if self.sha256 is not None:
            return f"{text}, sha256 {self.sha256}"
        return f"{text} (sha256 not computed: {self.no_hash})" if self.no_hash else text


def _block_bytes(lines: list[str], block: BinaryBlock) -> Iterator[bytes]:
    for index in range(block.first_line, block.end_line):
        yield base85_line(lines[index])


def _literal_side(lines: list[str], block: BinaryBlock) -> BinarySide:
    """A literal block's content: its size, and its sha256 when it is at most BINARY_HASH_MAX_BYTES."""
    if block.size > BINARY_HASH_MAX_BYTES:
        return BinarySide(True, block.size, no_hash=f"over {BINARY_HASH_MAX_BYTES} bytes")
    corrupt = BinarySide(True, block.size, no_hash="the literal does not inflate to its stated size")
    inflater = zlib.decompressobj()
    digest = hashlib.sha256()
    total = 0
    try:
        for data in _block_bytes(lines, block):
            # At most one byte past the stated size: a stream that goes further is corrupt, and a bomb stops.
            chunk = inflater.decompress(data, block.size + 1 - total)
            total += len(chunk)
            if total > block.size or inflater.unconsumed_tail:
                return corrupt
            digest.update(chunk)
        if not inflater.eof:
            return corrupt
    except (ValueError, zlib.error):
        return corrupt
    return BinarySide(True, block.size, digest.hexdigest()) if total == block.size else corrupt


def _delta_sizes(lines: list[str], block: BinaryBlock) -> tuple[int, int] | None:
    """The source and target sizes a delta block starts with (two little-endian base-128 numbers)."""
    inflater = zlib.decompressobj()
    head = b""
    try:
        for data in _block_bytes(lines, block):
            head += inflater.decompress(data, 32 - len(head))
            if len(head) >= 20 or inflater.unconsumed_tail:
                break
    except (ValueError, zlib.error):
        return None
    sizes: list[int] = []
    i = 0
    for _ in range(2):
        value = shift = 0
        while True:
            if i >= len(head) or shift > 63:
                return None
            byte = head[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(value)
    return sizes[0], sizes[1]


def binary_sides(lines: list[str], file: ParsedFile) -> tuple[BinarySide, BinarySide]:
    """(old, new) of a file with a ``GIT binary patch``: the forward block gives the new content (a literal)
    or the sizes of both (a delta); the reverse block, when there is one, the old content."""
    change = file.change
    blocks = file.binary_blocks
    old = BinarySide(present=change.old_path is not None)
    new = BinarySide(present=change.new_path is not None)
    delta = "a delta against the other side"
    if blocks and new.present:
        forward = blocks[0]
        if forward.kind == "literal":
            new = _literal_side(lines, forward)
        elif (sizes := _delta_sizes(lines, forward)) is not None:
            new = BinarySide(True, sizes[1], no_hash=delta)
            old = BinarySide(True, sizes[0], no_hash=delta) if old.present else old
    if len(blocks) > 1 and old.present:
        reverse = blocks[1]
        if reverse.kind == "literal":
            old = _literal_side(lines, reverse)
        elif old.size is None and (sizes := _delta_sizes(lines, reverse)) is not None:
            old = BinarySide(True, sizes[1], no_hash=delta)
    return old, new


def _shown_path(path: str) -> str:
    """A path on one line: as is, or C-quoted when it holds a control character, a quote or a backslash."""
    if any(not c.isprintable() or c in '"\\' for c in path):
        return c_quote(raw_bytes(path))
    return path


def binary_not_shown(lines: list[str], file: ParsedFile) -> str:
    """The one line that stands for ``file``'s binary patch in the text the judge reads."""
    change = file.change
    path = change.new_path if change.new_path is not None else change.old_path
    assert path is not None
    old, new = binary_sides(lines, file)
    return (
        f"{BINARY_NOT_SHOWN}{_shown_path(path)} ({change.status}): old {old.describe()}; new {new.describe()}"
    )


def judge_text(diff_text: str) -> str:
    """The diff as the judge reads it: every ``GIT binary patch`` replaced by one line (its path, the old
    and new size, the sha256 of each side's content when the patch holds it as a literal).

    The judge cannot review base85, and a binary file's bytes must not count toward its input limit. The
    result is still a diff this module reads (:data:`BINARY_NOT_SHOWN` marks a binary file, as
    ``Binary files ... differ`` does), with the same files and the same text hunks; a diff without a
    binary patch is returned unchanged. What cannot be parsed (lenient reading) is kept as it is.
    """
    if "\nGIT binary patch" not in diff_text:
        return diff_text
    parsed = read_diff(diff_text, strict=False)
    # The reader splits at "\n" as here, so its line indices are this list's.
    lines = diff_text.split("\n")
    out: list[str] = []
    at = 0
    for file in parsed.files:
        if file.binary_line is None:
            continue
        out += lines[at : file.binary_line]
        out.append(binary_not_shown(parsed.lines, file))
        at = file.end_line
    out += lines[at:]
    return "\n".join(out)
