"""A mutant as a diff: the oracle's lines indexed as :mod:`grading.diffs` read them, an edit (files and
hunks left out, hunk bodies replaced), the key that tells two edits apart without rendering them, and the
edit rendered back as a diff.

Every mutant is a diff that applies to the base: hunks are left out whole, later hunks of the same file
have their new-side start moved, and a restored line becomes context. A file whose every hunk is left out
is left out whole. A rendered mutant is slices of the oracle (a file or a run of hunks left as they were is
one slice), and the hunks' changed lines are found by bisection, so an oracle of tens of thousands of hunks
costs a few steps per hunk, not one per line.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

from grading.diffs import ParsedDiff, ParsedFile, read_diff

_HUNK_HEAD = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

HunkRef = tuple[int, int]  # (file index, hunk index) in ParsedDiff.files

# The first character of lines that change something in a hunk body.
_CHANGE_TAGS = re.compile(r"[+-]")
_NO_KEY_PART: frozenset[int] = frozenset()


@dataclass
class DiffEdit:
    drop_files: frozenset[int] = frozenset()
    drop_hunks: frozenset[HunkRef] = frozenset()
    bodies: Mapping[HunkRef, list[bytes]] | None = None  # replaced hunk bodies (same counts)


class OracleLines:
    """The oracle's raw lines (as the parser indexed them) and its parse, to rebuild variants from."""

    def __init__(self, data: bytes, source: str) -> None:
        self.parsed: ParsedDiff = read_diff(data, source)
        # The parser's line indices are those of the input split at b"\n"; rebuilding from the input's own
        # bytes keeps line ends (CRLF) and bytes that are not UTF-8 as they were.
        self.lines = data.split(b"\n")
        self.final_newline = data.endswith(b"\n")
        if self.final_newline:
            self.lines.pop()
        # The input with every line ended, and the bytes before each line in it less its index (the line
        # ends): lines [a, b) are text[starts[a] + a : starts[b] + b], copied as one slice.
        self._text = data if self.final_newline else data + b"\n"
        self._starts = list(itertools.accumulate(map(len, self.lines), initial=0))
        # The first character of every line, as the parser read them (the same for "+", "-" and " "), and
        # the indices of those that start with "+" or "-": a hunk's changed lines are found by bisection,
        # not by a step per line.
        self.firsts = self.parsed.firsts
        self.marks = [match.start() for match in _CHANGE_TAGS.finditer(self.firsts)]
        self.files = self.parsed.files
        self._hunkless = sum(1 for pf in self.files if not pf.hunks)
        self._hunks = sum(len(pf.hunks) for pf in self.files)
        # Per file, per hunk: where its changed lines start and end in marks (read once; every render asks
        # whether there are any), whether it has any, and the hunks without. Per file: whether each hunk
        # starts where the one before ends (runs of them are copied as one slice).
        self.lo: list[list[int]] = []
        self.hi: list[list[int]] = []
        self._changes: list[list[bool]] = []
        self._unchanged: list[list[int]] = []
        self._contiguous: list[bool] = []
        for pf in self.files:
            heads = [hunk.header_line for hunk in pf.hunks]
            ends = [hunk.end_line for hunk in pf.hunks]
            lo = list(
                map(
                    bisect.bisect_left,
                    itertools.repeat(self.marks),
                    map(operator.add, heads, itertools.repeat(1)),
                )
            )
            hi = list(map(bisect.bisect_left, itertools.repeat(self.marks), ends))
            self.lo.append(lo)
            self.hi.append(hi)
            self._changes.append(list(map(operator.lt, lo, hi)))
            self._unchanged.append(list(itertools.compress(itertools.count(), map(operator.ge, lo, hi))))
            self._contiguous.append(ends[:-1] == heads[1:])
        # Per file, made when a render first moves its hunks: see _run.
        self._moved: dict[int, tuple[bytes, list[int], list[int]]] = {}

    def path(self, f: int) -> str:
        change = self.files[f].change
        return change.new_path or change.old_path or "?"

    def body(self, ref: HunkRef) -> list[bytes]:
        hunk = self.files[ref[0]].hunks[ref[1]]
        return self.lines[hunk.header_line + 1 : hunk.end_line]

    def changed(self, ref: HunkRef) -> list[bytes]:
        """The hunk's added and removed lines, in order."""
        lo, hi = self.lo[ref[0]][ref[1]], self.hi[ref[0]][ref[1]]
        lines = self.lines
        return [lines[i] for i in self.marks[lo:hi]]

    def _span(self, a: int, b: int) -> bytes:
        """Lines ``[a, b)`` of the oracle, each with its line end."""
        return self._text[self._starts[a] + a : self._starts[b] + b]

    def key(
        self, edit: DiffEdit
    ) -> tuple[frozenset[int], frozenset[HunkRef], tuple[tuple[HunkRef, bytes], ...]]:
        """What ``edit`` leaves out and replaces, as :meth:`render` would apply it: two edits with one key
        render to one diff. Cheap (no rendering), so mutants are told apart before any is rendered."""
        if not edit.drop_files and not edit.bodies:
            return _NO_KEY_PART, edit.drop_hunks, ()  # hunks left out (one per drop-hunk mutant)
        bodies = edit.bodies or {}
        files: set[int] = set()
        hunks: set[HunkRef] = set()
        replaced: list[tuple[HunkRef, bytes]] = []
        for f in edit.drop_files:
            if self.files[f].hunks:
                hunks.update((f, h) for h in range(len(self.files[f].hunks)))
            else:
                files.add(f)
        hunks.update(edit.drop_hunks)
        for ref, body in sorted(bodies.items()):
            if ref in hunks:
                continue
            if any(line[:1] in (b"+", b"-") for line in body):
                replaced.append((ref, b"\n".join(body)))
            else:
                hunks.add(ref)
        return frozenset(files), frozenset(hunks), tuple(replaced)

    def empty(
        self, key: tuple[frozenset[int], frozenset[HunkRef], tuple[tuple[HunkRef, bytes], ...]]
    ) -> bool:
        """Whether the edit of ``key`` leaves the whole fix out."""
        files, hunks, _ = key
        return len(files) == self._hunkless and len(hunks) == self._hunks

    def render(self, edit: DiffEdit) -> bytes:
        """The diff of ``edit``, as slices of the oracle: a file or a run of hunks the edit leaves as they
        were is one slice, not a step per line or hunk."""
        out: list[bytes] = [self._span(0, self.files[0].first_line)] if self.files else []
        bodies = edit.bodies or {}
        touched = {f for f, _ in edit.drop_hunks} | {f for f, _ in bodies}
        files = 0
        for f, pf in enumerate(self.files):
            if f in edit.drop_files:
                continue
            if f not in touched and not self._unchanged[f]:
                out.append(self._span(pf.first_line, pf.end_line))  # as the oracle has it: copied whole
                files += 1
                continue
            kept = self._file(f, pf, edit.drop_hunks, bodies)
            if kept is not None:
                out += kept
                files += 1
        if not files:
            return b""  # the whole fix left out
        out.append(self._span(self.files[-1].end_line, len(self.lines)))
        data = b"".join(out)
        return data if self.final_newline else data[:-1]

    def _file(
        self, f: int, pf: ParsedFile, drop: frozenset[HunkRef], bodies: Mapping[HunkRef, list[bytes]]
    ) -> list[bytes] | None:
        if not pf.hunks:
            return [self._span(pf.first_line, pf.end_line)]  # binary, mode-only or empty file
        out = [self._span(pf.first_line, pf.hunks[0].header_line)]
        shift = 0  # lines the left-out hunks before this one added to the new side
        kept = 0
        # Hunks the edit leaves out or replaces, and those without a change: between them hunks are copied
        # as a run (one slice while nothing has moved the new side, else one slice per hunk and its moved
        # start), not one step per hunk.
        special = sorted(
            {h for g, h in drop if g == f} | {h for g, h in bodies if g == f} | set(self._unchanged[f])
        )
        contiguous = self._contiguous[f]
        h = 0
        while h < len(pf.hunks):
            at = bisect.bisect_left(special, h)
            if contiguous and (at == len(special) or special[at] != h):
                end = special[at] if at < len(special) else len(pf.hunks)
                out += self._run(f, pf, h, end, shift)
                kept += end - h
                h = end
                continue
            hunk = pf.hunks[h]
            body = bodies.get((f, h))
            changed = self._changes[f][h] if body is None else any(line[:1] in (b"+", b"-") for line in body)
            if (f, h) in drop or not changed:
                shift += hunk.new_count - hunk.old_count
            else:
                header = self.lines[hunk.header_line]
                if shift:
                    match = _HUNK_HEAD.match(header)
                    assert match is not None  # the parser read this header
                    new_start = str(hunk.new_start - shift).encode()
                    header = header[: match.start(3)] + new_start + header[match.end(3) :]
                if body is None:
                    out += (header + b"\n", self._span(hunk.header_line + 1, hunk.end_line))
                else:
                    out.append(b"\n".join([header, *body]) + b"\n")
                kept += 1
            h += 1
        # A file whose every hunk is left out is left out whole: its header alone would claim a change (the
        # index line's blobs differ) that is not there.
        return out if kept else None

    def _run(self, f: int, pf: ParsedFile, h: int, end: int, shift: int) -> list[bytes]:
        """Hunks ``[h, end)`` of file ``f`` (contiguous) with their new-side starts moved back ``shift``."""
        if not shift:
            return [self._span(pf.hunks[h].header_line, pf.hunks[end - 1].end_line)]
        if f not in self._moved:
            # The file's hunks as a template with "%d" for each new start (and "%" doubled): a moved run is
            # one formatting, in C, not a step per hunk.
            pieces: list[bytes] = []
            bounds = [0]
            size = 0
            for hunk in pf.hunks:
                match = _HUNK_HEAD.match(self.lines[hunk.header_line])
                assert match is not None  # the parser read this header
                at = self._starts[hunk.header_line] + hunk.header_line
                head = self._text[at : at + match.start(3)].replace(b"%", b"%%")
                rest = self._text[at + match.end(3) : self._starts[hunk.end_line] + hunk.end_line]
                rest = rest.replace(b"%", b"%%")
                pieces += (head, b"%d", rest)
                size += len(head) + 2 + len(rest)
                bounds.append(size)
            self._moved[f] = b"".join(pieces), bounds, [hunk.new_start for hunk in pf.hunks]
        template, bounds, starts = self._moved[f]
        moved = tuple(map(operator.sub, starts[h:end], itertools.repeat(shift)))
        return [template[bounds[h] : bounds[end]] % moved]
