"""Negatives generated from the oracle: mechanical variants of ``oracle.diff`` that a sound rubric should
refuse, judged like admission rows (scope, integrity, the judge; no ``pass`` short-circuit).

§5 checks a rubric against one hand-written lazy diff. A mutant is the oracle with part of the fix taken
out, so it usually no longer fixes the task: a rubric that still calls it mergeable either has a hole (a
blocker to add) or the part taken out did not matter (a maintainer marks the mutant harmless). The list
is an authoring aid shown beside the admission rows; it never changes whether a rubric is admitted.

Kinds, each derived from the oracle's hunks as :mod:`grading.diffs` reads them:

- ``drop-hunk``: one hunk left out (each hunk in turn);
- ``revert-file``: one file of a multi-file fix left out (each file in turn);
- ``one-place``: of several hunks whose added and removed lines are near-identical (the same fix in a CPU
  and a GPU backend), one kept and the others left out (each one kept in turn). Similarity is the Dice
  coefficient of the changed text's character trigrams (whitespace ignored), linear in the text; a hunk
  with more than ``MAX_COMPARED_BYTES`` of changed lines (a lock file, generated code) is not compared,
  and a note says how many were not;
- ``revert-condition``: a changed line pair whose only change is a comparison or boolean operator, or the
  condition of an ``if``/``while``/``assert``, with the old line restored. Lines pair only when both hold a
  whole condition of the same shape (brackets closed, the same head and ending: never ``} else if (``), and
  the restored line keeps the new line's indentation. With the base tree at hand, a mutant of a Python file
  whose mutated file no longer parses (``ast.parse``) is left out, with a note: it would measure the judge's
  sense of syntax, not its review (the top-level statement holding the restored line is parsed alone, and
  the whole file only when that does not parse). A line longer than ``MAX_CONDITION_LINE_BYTES`` is never
  paired, and at most ``MAX_CONDITION_MUTANTS`` are derived (notes say so): both are quadratic past those
  bounds.

Every mutant is a diff that applies to the base: hunks are left out whole, later hunks of the same file
have their new-side start moved, and a restored line becomes context. A mutant's id is its kind and the
first hex digits of the sha256 of its diff, so it is stable for an unchanged oracle and names another
mutant once the oracle changes. Mutants with the same diff are kept once (the more specific kind wins),
an empty mutant (the whole fix left out: that is the admission's empty row) is not kept, and at most
``max_mutants`` are judged, taken round-robin over the kinds, with a note saying so. Mutants are told apart
by what they leave out and replace, so only those judged are rendered: derivation stays linear in the
oracle's size. What each hunk costs is kept to a few steps too (its changed lines are read for all hunks
at once, a rendered mutant is slices of the oracle), as an oracle of many one-line hunks (a rename) has tens
of thousands of them: a 10 MB oracle of either shape derives in under two seconds
(``benchmarks/mutant_derivation.py``).
"""

from __future__ import annotations

import ast
import asyncio
import bisect
import difflib
import functools
import hashlib
import itertools
import operator
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from grading.diffs import ParsedDiff, ParsedFile, decode_diff, parse_diff, read_diff
from grading.errors import InputError
from grading.integrity import check_integrity
from grading.judge.backend import Backend
from grading.judge.cache import VerdictCache
from grading.judge.models import JudgeResult, Usage
from grading.judge.prompt import check_diff_text
from grading.judge.runner import JudgeSettings, SweepJob, judge_sweep
from grading.judge.specs import make_backend
from grading.judge.tree import base_tree_for
from grading.outcome import RubricAssessment, assess
from grading.run import ORACLE_DIFF_NAME, RUBRIC_NAME, TaskFiles, read_task_files
from grading.schema import PromptStyle, Rubric, TestsConfig
from grading.scope import check_scope
from grading.strict_json import read_input_bytes

MutantKind = Literal["drop-hunk", "revert-file", "one-place", "revert-condition"]
KINDS: tuple[MutantKind, ...] = ("drop-hunk", "revert-file", "one-place", "revert-condition")
# Two kinds can give the same diff (a file's only hunk dropped is the file reverted): the more specific
# description is kept.
_PRIORITY: tuple[MutantKind, ...] = ("revert-condition", "one-place", "revert-file", "drop-hunk")

# Each mutant is a judge call; a large oracle gives hundreds of them.
DEFAULT_MAX_MUTANTS = 24
ID_HEX = 10
MUTANT_ID = re.compile(rf"(drop-hunk|revert-file|one-place|revert-condition):[0-9a-f]{{{ID_HEX}}}")

# Hunks whose changed lines are at least this similar (Dice coefficient of their character trigrams,
# whitespace ignored) are "the same fix in several places".
SIMILAR_RATIO = 0.8
# Shorter changed text (no whitespace) is not compared: a lone brace or blank line is similar to anything.
_MIN_SIMILAR_CHARS = 8
# A hunk with more bytes of changed lines than this is not compared: the same fix repeated by hand is a few
# lines, and a rewritten lock file's hunks of tens of kilobytes are not one (a note counts them).
MAX_COMPARED_BYTES = 4000
# Beyond this many hunks the pairwise comparison is skipped (quadratic); such an oracle gets no one-place
# mutants, and the note says so.
_MAX_COMPARED_HUNKS = 300
# An added line is paired with at most this many removed lines of its block that could be its old version.
_MAX_PAIR_CANDIDATES = 20
# A changed line longer than this (bytes) is never paired: telling what changed in it is quadratic in its
# length, and a condition a reviewer reads fits on a line (a minified bundle's 100 KB line does not).
MAX_CONDITION_LINE_BYTES = 500
# At most this many revert-condition mutants are derived, in oracle order: each holds its hunk's whole body,
# so a hunk with thousands of them is quadratic.
MAX_CONDITION_MUTANTS = 100
# A Python file larger than this at the base is not parsed to check a mutant (the check is skipped).
MAX_PARSED_BYTES = 4 * 1024 * 1024

# The base tree's bytes of a path (None when it has no such file), to check that a mutant still parses.
BaseReader = Callable[[str], bytes | None]


@dataclass(frozen=True, slots=True)
class Mutant:
    id: str
    kind: MutantKind
    description: str
    diff: bytes


@dataclass(frozen=True, slots=True)
class MutantSet:
    mutants: list[Mutant]  # the ones to judge, in kind order (at most the cap)
    # distinct mutants before the cap (Python ones are checked to parse as they are taken, so past the cap
    # this may count some that would not parse)
    derived: int
    duplicates: int  # left out because another mutant has the same diff
    capped: bool
    notes: list[str]


# --- rebuilding a diff with parts left out -------------------------------------------------------------

_HUNK_HEAD = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

HunkRef = tuple[int, int]  # (file index, hunk index) in ParsedDiff.files


# The first character of lines that change something in a hunk body.
_CHANGE_TAGS = re.compile(r"[+-]")
# The ASCII characters str.split() and a str pattern's \s take for whitespace.
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
# Deleted from an ASCII line, what is left is the same for two lines whose operands are the same: cheap to
# compare, so that operands are computed only for lines that may pair (a rename's lines never do).
_NOT_SKETCH = b"<>=!&|()andortis" + _ASCII_SPACE
# _HEAD_HINT on changed lines joined, for ASCII lines (with the whitespace of a str pattern).
_HEAD_HINTS = re.compile(
    rb"^[+-][ \t\r\x0b\x0c\x1c-\x1f]*(?:\}[ \t\r\x0b\x0c\x1c-\x1f]*)?(?:else[ \t\r\x0b\x0c\x1c-\x1f]+)?"
    rb"(?:if|elif|while|assert|unless|until|when|case)\b",
    re.MULTILINE,
)
# _NOT_OPERANDS for ASCII bytes.
_ASCII_OPERANDS = re.compile(rb"\b(?:and|or|not|is|in)\b|[<>=!&|() \t\n\r\x0b\x0c\x1c-\x1f]")
_NO_KEY_PART: frozenset[int] = frozenset()


@dataclass
class _Edit:
    drop_files: frozenset[int] = frozenset()
    drop_hunks: frozenset[HunkRef] = frozenset()
    bodies: Mapping[HunkRef, list[bytes]] | None = None  # replaced hunk bodies (same counts)


class _Oracle:
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
        self._marks = [match.start() for match in _CHANGE_TAGS.finditer(self.firsts)]
        self.files = self.parsed.files
        self._hunkless = sum(1 for pf in self.files if not pf.hunks)
        self._hunks = sum(len(pf.hunks) for pf in self.files)
        # Per file, per hunk: where its changed lines start and end in _marks (read once; every render asks
        # whether there are any), whether it has any, and the hunks without. Per file: whether each hunk
        # starts where the one before ends (runs of them are copied as one slice).
        self._lo: list[list[int]] = []
        self._hi: list[list[int]] = []
        self._changes: list[list[bool]] = []
        self._unchanged: list[list[int]] = []
        self._contiguous: list[bool] = []
        for pf in self.files:
            heads = [hunk.header_line for hunk in pf.hunks]
            ends = [hunk.end_line for hunk in pf.hunks]
            lo = list(
                map(
                    bisect.bisect_left,
                    itertools.repeat(self._marks),
                    map(operator.add, heads, itertools.repeat(1)),
                )
            )
            hi = list(map(bisect.bisect_left, itertools.repeat(self._marks), ends))
            self._lo.append(lo)
            self._hi.append(hi)
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
        lo, hi = self._lo[ref[0]][ref[1]], self._hi[ref[0]][ref[1]]
        lines = self.lines
        return [lines[i] for i in self._marks[lo:hi]]

    @functools.cached_property
    def changed_lines(self) -> _ChangedLines:
        return _ChangedLines(self)

    def hunk_refs(self) -> list[HunkRef]:
        return [(f, h) for f, pf in enumerate(self.files) for h in range(len(pf.hunks))]

    def _span(self, a: int, b: int) -> bytes:
        """Lines ``[a, b)`` of the oracle, each with its line end."""
        return self._text[self._starts[a] + a : self._starts[b] + b]

    def key(
        self, edit: _Edit
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

    def render(self, edit: _Edit) -> bytes:
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


# A mutant before it is judged: its kind, its description (or how to write it), what it changes.
Candidate = tuple[MutantKind, str | Callable[[], str], _Edit]


def _description(text: str | Callable[[], str]) -> str:
    return text if isinstance(text, str) else text()


def _mutant_id(kind: MutantKind, diff: bytes) -> str:
    return f"{kind}:{hashlib.sha256(diff).hexdigest()[:ID_HEX]}"


def _where(oracle: _Oracle, ref: HunkRef) -> str:
    pf = oracle.files[ref[0]]
    hunk = pf.hunks[ref[1]]
    section = hunk.section.strip()
    place = f"hunk {ref[1] + 1} of {len(pf.hunks)} in {oracle.path(ref[0])} (old line {hunk.old_start}"
    return place + (f", {_short(section, 50)})" if section else ")")


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- the kinds ----------------------------------------------------------------------------------------------


def _drop_hunk(oracle: _Oracle) -> Iterator[Candidate]:
    # One per hunk, and few of them judged: made one at a time (not all kept), and each description is
    # written when the mutant is taken.
    for f, pf in enumerate(oracle.files):
        for h in range(len(pf.hunks)):
            ref = (f, h)
            yield "drop-hunk", functools.partial(_left_out, oracle, ref), _Edit(drop_hunks=frozenset([ref]))


def _left_out(oracle: _Oracle, ref: HunkRef) -> str:
    return f"leaves out {_where(oracle, ref)}"


def _revert_file(oracle: _Oracle) -> list[Candidate]:
    n = len(oracle.files)
    if n < 2:
        return []
    out: list[Candidate] = []
    for f, pf in enumerate(oracle.files):
        others = f"keeps the other {n - 1} file{'s' if n > 2 else ''}"
        text = f"reverts {oracle.path(f)} ({pf.change.status} in the oracle), {others}"
        out.append(("revert-file", text, _Edit(drop_files=frozenset([f]))))
    return out


def _changed_text(body: Sequence[bytes]) -> str:
    lines = [line for line in body if line[:1] in (b"+", b"-")]
    return "\n".join(line[:1].decode() + " ".join(decode_diff(line[1:]).split()) for line in lines)


def _trigrams(text: str) -> frozenset[tuple[str, int]]:
    """The character trigrams of ``text`` as a set that keeps repeats apart (the n-th occurrence of a
    trigram is its own element), so a set intersection counts a multiset's."""
    seen: dict[str, int] = {}
    out: list[tuple[str, int]] = []
    for i in range(len(text) - 2):
        gram = text[i : i + 3]
        n = seen.get(gram, 0)
        seen[gram] = n + 1
        out.append((gram, n))
    return frozenset(out)


class _ChangedLines:
    """What the kinds ask of each hunk's changed lines, read for all of them at once (in C, over the lines
    joined) and kept as prefix sums per changed line in ``_Oracle._marks`` order: a hunk's answer is a
    difference, not a step per line, so the many hunks of a rename cost little."""

    def __init__(self, oracle: _Oracle) -> None:
        lines = list(map(oracle.lines.__getitem__, oracle._marks))
        n = len(lines)
        self.bytes = list(itertools.accumulate(map(len, lines), initial=0))
        joined = b"\n".join(lines)
        odd = [] if joined.isascii() else list(itertools.compress(range(n), [not x.isascii() for x in lines]))
        visible = list(map(len, joined.translate(None, _ASCII_SPACE.replace(b"\n", b"")).split(b"\n")))
        for k in odd:
            visible[k] = len("".join(_changed_text(lines[k : k + 1]).split()))
        self.visible = list(itertools.accumulate(visible, initial=0))
        # Lines a sketch says nothing of (not ASCII) or that may hold a condition: hunks with one are read
        # line by line.
        offsets = list(map(operator.add, self.bytes, range(n + 1)))  # where each line starts in joined
        heads = [bisect.bisect_right(offsets, m.start()) - 1 for m in _HEAD_HINTS.finditer(joined)]
        self.odd = sorted({*odd, *heads})
        self.sketches = joined.translate(None, _NOT_SKETCH.replace(b"\n", b"") + b"+-").split(b"\n")
        self.long = list(itertools.compress(range(n), [len(x) > MAX_CONDITION_LINE_BYTES + 1 for x in lines]))


def _similar_groups(oracle: _Oracle, notes: list[str]) -> list[list[HunkRef]]:
    refs: list[HunkRef] = []
    too_large = 0
    table = oracle.changed_lines
    sizes, visible = table.bytes, table.visible
    for f, (los, his) in enumerate(zip(oracle._lo, oracle._hi, strict=True)):
        for h, (lo, hi) in enumerate(zip(los, his, strict=True)):
            if sizes[hi] - sizes[lo] > MAX_COMPARED_BYTES:
                too_large += 1
            elif visible[hi] - visible[lo] >= _MIN_SIMILAR_CHARS + 2:
                refs.append((f, h))
    if too_large:
        notes.append(
            f"one-place: {too_large} hunk{'s' if too_large > 1 else ''} with more than {MAX_COMPARED_BYTES} "
            "bytes of changed lines not compared (not a fix repeated by hand)"
        )
    if len(refs) > _MAX_COMPARED_HUNKS:
        notes.append(
            f"one-place: {len(refs)} hunks are too many to compare pairwise (limit {_MAX_COMPARED_HUNKS}); "
            "no one-place mutants"
        )
        return []
    grams = {ref: _trigrams(_changed_text(oracle.changed(ref))) for ref in refs}
    parent = {ref: ref for ref in refs}

    def root(ref: HunkRef) -> HunkRef:
        while parent[ref] != ref:
            parent[ref] = parent[parent[ref]]
            ref = parent[ref]
        return ref

    # Dice >= R needs the smaller set to hold at least R / (2 - R) of the larger's elements: in order of
    # size, each hunk is compared only with the next ones that are not too large for it.
    by_size = sorted(refs, key=lambda ref: len(grams[ref]))
    reach = (2 - SIMILAR_RATIO) / SIMILAR_RATIO
    for i, a in enumerate(by_size):
        size_a = len(grams[a])
        for b in by_size[i + 1 :]:
            size_b = len(grams[b])
            if size_b > size_a * reach:
                break
            if root(a) == root(b):
                continue  # already in one group (single linkage): comparing them changes nothing
            if 2 * len(grams[a] & grams[b]) >= SIMILAR_RATIO * (size_a + size_b):
                parent[root(b)] = root(a)
    groups: dict[HunkRef, list[HunkRef]] = {}
    for ref in refs:
        groups.setdefault(root(ref), []).append(ref)
    return [group for group in groups.values() if len(group) >= 2]


def _one_place(oracle: _Oracle, notes: list[str]) -> list[Candidate]:
    out: list[Candidate] = []
    for group in _similar_groups(oracle, notes):
        for keep in group:
            others = [ref for ref in group if ref != keep]
            text = (
                f"keeps the fix only in {_where(oracle, keep)}, one of {len(group)} near-identical places; "
                f"leaves out the one{'s' if len(others) > 1 else ''} in "
                + ", ".join(f"{oracle.path(f)} hunk {h + 1}" for f, h in others)
            )
            out.append(("one-place", text, _Edit(drop_hunks=frozenset(others))))
    return out


# A token of a line of code: a string literal, a word, a number, a multi-character operator, any other
# character. Good enough to tell "only an operator changed" in the languages the comment table knows.
_TOKEN = re.compile(
    r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*"
    r"|===|!==|<=>|&&|\|\||==|!=|<=|>=|->|=>|::|\S"
)
_OPERATORS = frozenset(
    ["<", "<=", ">", ">=", "==", "!=", "===", "!==", "&&", "||", "!", "and", "or", "not", "is", "in"]
)
_PARENS = frozenset(["(", ")"])
_CONDITION_HEADS = frozenset(["if", "elif", "while", "assert", "unless", "until", "when", "case"])


def _condition_head(tokens: list[str]) -> str | None:
    i = 0
    while i < len(tokens) and tokens[i] in ("}", "else"):
        i += 1  # "} else if (...)"
    head = tokens[i] if i < len(tokens) else None
    return head if head in _CONDITION_HEADS else None


def condition_change(old: str, new: str) -> str | None:
    """What changed between two versions of a line when it is a condition: ``"operator"`` when the only
    changed tokens are comparison or boolean operators (and parentheses), ``"condition"`` when both lines
    are the same kind of condition (``if``, ``while``, ``assert``...) with a different test; else None."""
    old_tokens, new_tokens = _TOKEN.findall(old), _TOKEN.findall(new)
    if old_tokens == new_tokens:
        return None  # whitespace only
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    changed = [
        token
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
        for token in old_tokens[i1:i2] + new_tokens[j1:j2]
    ]
    if set(changed) <= _PARENS:
        return None  # the same test, bracketed otherwise
    if set(changed) <= _OPERATORS | _PARENS:
        return "operator"
    head = _condition_head(old_tokens)
    if head is not None and head == _condition_head(new_tokens):
        return "condition"
    return None


# Tokens a whole condition may end with after its test (Python's colon, a C-like block's brace, Ruby/shell).
_CONDITION_ENDS = frozenset([":", "{", "then", "do"])
_DANGLING = _OPERATORS | frozenset([",", "\\", "(", "[", "+", "-", "*", "/", "%", "=", "."])


def _shape(tokens: list[str]) -> tuple[str, str] | None:
    """(head, ending) of a line that holds a whole condition: the head (``if``...), a test with its
    brackets closed that does not dangle into the next line, and the token after it; None for a fragment
    (``} else if (``, ``if (a and``) or a line that is not a condition."""
    head = _condition_head(tokens)
    if head is None:
        return None
    rest = tokens[tokens.index(head) + 1 :]
    end = rest[-1] if rest and rest[-1] in _CONDITION_ENDS else ""
    test = rest[:-1] if end else rest
    if not test or test[-1] in _DANGLING:
        return None
    if test.count("(") != test.count(")") or test.count("[") != test.count("]"):
        return None
    return head, end


# Cheap keys to look pairs up by (each pair is then checked with condition_change): a line without its
# operators, brackets and spaces (an operator change leaves it equal), and whether a line may start with a
# condition head (only those are tokenized for their shape).
_NOT_OPERANDS = re.compile(r"\b(?:and|or|not|is|in)\b|[<>=!&|()\s]")
_HEAD_HINT = re.compile(r"^\s*(?:\}\s*)?(?:else\s+)?(?:if|elif|while|assert|unless|until|when|case)\b")


def _operands(text: str) -> str:
    return _NOT_OPERANDS.sub("", text)


def _line_shape(text: str) -> tuple[str, str] | None:
    return _shape(_TOKEN.findall(text)) if _HEAD_HINT.match(text) else None


def _bracket_balance(tokens: list[str]) -> tuple[int, int]:
    return tokens.count("(") - tokens.count(")"), tokens.count("[") - tokens.count("]")


def _indent(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


# A block of a hunk body, by its lines' first characters: removed lines, then the added ones.
_BLOCK = re.compile(r"-+\+*")


def _restored_bodies(
    body: list[bytes], tags: str | None = None
) -> Iterator[tuple[int, list[bytes], str, str, str]]:
    """For each condition pair in a hunk body: (index of the added line, the body with the old line
    restored, what changed, old text, new text).

    A pair is a removed line and the added line of the same block (removed lines, then added lines) most
    like it among those that differ from it only in a condition: blocks need not pair line for line (a
    comment added above a changed comparison). Candidates are looked up, not compared all against all: an
    operator change leaves the other tokens equal, a condition change keeps the head and the shape. The
    restored line takes the new line's indentation; when that differs from the old line's, the old line
    stays removed and the restored one is added in the new line's place. Lines longer than
    ``MAX_CONDITION_LINE_BYTES`` are not paired. Yielded one at a time, so a caller may stop early.
    ``tags`` is the first character of each body line (any other for an empty one), when the caller has it.
    """
    n = len(body)
    if tags is None:
        tags = "".join([chr(line[0]) if line else " " for line in body])
    for run in _BLOCK.finditer(tags):
        start, i = run.span()
        middle = start + tags.count("-", start, i)
        removed, added = body[start:middle], body[middle:i]
        if not added or (i < n and body[i][:1] == b"\\"):
            continue  # nothing added, or at the end of a file without its newline: left alone
        bound = MAX_CONDITION_LINE_BYTES + 1  # the line's tag and its text
        new_texts = [decode_diff(line[1:]) if len(line) <= bound else "" for line in added]
        # Sketches both sides share, when every line is ASCII (None: operands are computed for all).
        sketches: set[bytes] | None = None
        if all(line.isascii() for line in removed) and all(line.isascii() for line in added):
            sketches = {line[1:].translate(None, _NOT_SKETCH) for line in added}
            sketches &= {line[1:].translate(None, _NOT_SKETCH) for line in removed}
        by_operands: dict[str, list[int]] = {}
        by_shape: dict[tuple[str, str], list[int]] = {}
        for j, text in enumerate(new_texts):
            if len(added[j]) > bound:
                continue  # never paired: comparing it is quadratic in its length
            if sketches is None or added[j][1:].translate(None, _NOT_SKETCH) in sketches:
                by_operands.setdefault(_operands(text), []).append(j)
            if (shape := _line_shape(text)) is not None:
                by_shape.setdefault(shape, []).append(j)
        for k, old in enumerate(removed):
            if len(old) > bound:
                continue
            old_text = decode_diff(old[1:])
            shape = _line_shape(old_text)
            found = by_shape.get(shape, []) if shape else []
            if sketches is None or old[1:].translate(None, _NOT_SKETCH) in sketches:
                found = by_operands.get(_operands(old_text), []) + found
            pairs = []
            for j in sorted(set(found))[:_MAX_PAIR_CANDIDATES]:
                what = condition_change(old_text, new_texts[j])
                if what is None:
                    continue
                old_tokens, new_tokens = _TOKEN.findall(old_text), _TOKEN.findall(new_texts[j])
                if what == "operator" and _bracket_balance(old_tokens) != _bracket_balance(new_tokens):
                    continue  # the restored line would open or close a bracket the new code does not
                if what == "condition" and shape != _shape(new_tokens):
                    continue  # only the head is shared, or one of them is a fragment
                ratio = difflib.SequenceMatcher(None, old_text, new_texts[j], autojunk=False).ratio()
                pairs.append((ratio, j, what))
            if not pairs:
                continue
            _, j, what = max(pairs, key=lambda pair: (pair[0], -pair[1]))
            indent = _indent(added[j][1:])
            if _indent(old[1:]) == indent:
                # The restored line takes the added line's place: old lines before it stay before it in the
                # old file, new lines before it stay before it in the new one.
                block = [*removed[:k], *added[:j], b" " + old[1:], *removed[k + 1 :], *added[j + 1 :]]
            else:
                restored = b"+" + indent + old[1:].lstrip(b" \t")
                block = [*removed, *added[:j], restored, *added[j + 1 :]]
            yield middle + j, [*body[:start], *block, *body[i:]], what, old_text, new_texts[j]


def _may_pair(oracle: _Oracle, lo: int, hi: int) -> bool:
    """False when no removed line among changed lines ``[lo, hi)`` can pair with an added one: all ASCII,
    none may hold a condition, and no removed line has the sketch of an added one. True when it cannot
    tell. Cheap, so that the many hunks of a rename cost little."""
    table = oracle.changed_lines
    if bisect.bisect_left(table.odd, lo) < bisect.bisect_left(table.odd, hi):
        return True
    sketches, marks, lines = table.sketches, oracle._marks, oracle.lines
    if hi - lo == 2:
        # The sketch drops every letter of "and", "or"...: when it cannot tell, the operands are compared
        # (the same as _operands gives for ASCII text).
        return sketches[lo] == sketches[lo + 1] and (
            _ASCII_OPERANDS.sub(b"", lines[marks[lo]][1:])
            == _ASCII_OPERANDS.sub(b"", lines[marks[lo + 1]][1:])
        )
    firsts = oracle.firsts
    old = {sketches[k] for k in range(lo, hi) if firsts[marks[k]] == "-"}
    return any(sketches[k] in old for k in range(lo, hi) if firsts[marks[k]] == "+")


def _revert_condition(oracle: _Oracle, notes: list[str]) -> list[Candidate]:
    out: list[Candidate] = []
    long_lines = 0
    if long := oracle.changed_lines.long:
        for los, his in zip(oracle._lo, oracle._hi, strict=True):
            for lo, hi in zip(los, his, strict=True):
                long_lines += bisect.bisect_left(long, hi) - bisect.bisect_left(long, lo)
    if long_lines:
        notes.append(
            f"revert-condition: {long_lines} changed line{'s' if long_lines > 1 else ''} longer than "
            f"{MAX_CONDITION_LINE_BYTES} bytes not compared (minified or generated code)"
        )
    firsts = oracle.firsts
    for f, pf in enumerate(oracle.files):
        for h, hunk in enumerate(pf.hunks):
            removed = firsts.find("-", hunk.header_line + 1, hunk.end_line)
            if removed < 0 or firsts.find("+", removed, hunk.end_line) < 0:
                continue  # no removed line with an added line after it: nothing to pair
            if not _may_pair(oracle, oracle._lo[f][h], oracle._hi[f][h]):
                continue
            if _conditions(oracle, (f, h), out, notes):
                return out
    return out


def _conditions(oracle: _Oracle, ref: HunkRef, out: list[Candidate], notes: list[str]) -> bool:
    """Add the revert-condition mutants of hunk ``ref`` to ``out``; True when the bound stopped it (a note
    says so)."""
    hunk = oracle.files[ref[0]].hunks[ref[1]]
    body = oracle.body(ref)
    tags = oracle.firsts[hunk.header_line + 1 : hunk.end_line]
    for at, restored, what, old_text, new_text in _restored_bodies(body, tags):
        if len(out) == MAX_CONDITION_MUTANTS:
            notes.append(
                f"revert-condition: at most {MAX_CONDITION_MUTANTS} mutants are derived; the condition "
                f"changes from {_where(oracle, ref)} on are left out"
            )
            return True
        new_line = hunk.new_start + sum(1 for line in body[:at] if line[:1] in (b" ", b"+", b""))
        change = "operator" if what == "operator" else "condition"
        text = (
            f"swaps the {change} back in {oracle.path(ref[0])} (new line {new_line}): "
            f"`{_short(new_text.strip(), 60)}` -> `{_short(old_text.strip(), 60)}`"
        )
        out.append(("revert-condition", text, _Edit(bodies={ref: restored})))
    return False


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

    def __init__(self, oracle: _Oracle, base: BaseReader) -> None:
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

    def breaks(self, edit: _Edit) -> bool:
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


def _python_check(
    oracle: _Oracle,
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


def _broken_note(broken: list[str]) -> str:
    places = "; ".join(text.partition(": ")[0].removeprefix("swaps the ") for text in broken[:5])
    more = f" and {len(broken) - 5} more" if len(broken) > 5 else ""
    return (
        f"revert-condition: {len(broken)} mutant{'s' if len(broken) > 1 else ''} left out because the "
        f"Python file no longer parses with the old line back ({places}{more}): such a mutant measures "
        "the judge's sense of syntax, not its review"
    )


def derive_mutants(
    oracle: bytes,
    source: str = "oracle.diff",
    *,
    max_mutants: int = DEFAULT_MAX_MUTANTS,
    base: BaseReader | None = None,
) -> MutantSet:
    """Every mutant of ``oracle`` (the bytes of a unified diff), without duplicates, at most ``max_mutants``
    of them (round-robin over the kinds). ``base`` reads a file at the oracle's base commit: with it, a
    revert-condition mutant of a Python file that does not parse is left out (a note says which). Raises
    InputError when the oracle is not a diff."""
    if max_mutants < 0:
        raise InputError(None, "must be 0 or more", "--max-mutants")
    parsed = _Oracle(oracle, source)
    notes: list[str] = []
    one_place = _one_place(parsed, notes)
    conditions = _revert_condition(parsed, notes)
    check = _python_check(parsed, conditions, base, notes)
    candidates: dict[MutantKind, Iterable[Candidate]] = {
        "drop-hunk": _drop_hunk(parsed),
        "revert-file": _revert_file(parsed),
        "one-place": one_place,
        "revert-condition": conditions,
    }
    nothing_out = parsed.key(_Edit())
    seen: set[object] = set()
    # Per kind, in oracle order: (kind order, place in the oracle, kind, description, edit). Of a kind
    # taken without a check, no more than the cap can be taken: the others are only counted.
    found: dict[MutantKind, list[tuple[int, int, MutantKind, str | Callable[[], str], _Edit]]] = {}
    distinct = 0
    duplicates = 0
    for kind in _PRIORITY:
        order = KINDS.index(kind)
        kept = found[kind] = []
        limit = None if kind == "revert-condition" else max_mutants
        # No kind comes after the last to ask whether its mutants were seen (and they differ from each other).
        last = kind == _PRIORITY[-1]
        for n, (_, text, edit) in enumerate(candidates[kind]):
            key = parsed.key(edit)
            if key == nothing_out or parsed.empty(key):
                continue  # nothing left out, or the whole fix left out (the empty row)
            if key in seen:
                duplicates += 1
                continue
            if not last:
                seen.add(key)
            distinct += 1
            if limit is None or len(kept) < limit:
                kept.append((order, n, kind, text, edit))
    # Taken in turn from each kind, so a cap never leaves a kind out while another fills it. A Python
    # mutant is checked to parse as it is taken (a parse of its whole file each), not all of them first.
    broken: list[str] = []
    queues = [deque(found[kind]) for kind in KINDS]
    chosen: list[tuple[int, int, MutantKind, str | Callable[[], str], _Edit]] = []
    while len(chosen) < max_mutants and any(queues):
        for queue in queues:
            while queue and len(chosen) < max_mutants:
                entry = queue.popleft()
                if check is not None and entry[2] == "revert-condition" and check.breaks(entry[4]):
                    broken.append(_description(entry[3]))
                    continue
                chosen.append(entry)
                break
    if broken:
        notes.append(_broken_note(broken))
    derived = distinct - len(broken)
    capped = derived > len(chosen)
    chosen.sort(key=lambda entry: entry[:2])
    if capped:
        notes.append(
            f"capped: {derived} mutants derived, {len(chosen)} judged (taken in turn from each kind); "
            "raise --max-mutants to judge more"
        )
    mutants = []
    for _, _, kind, text, edit in chosen:
        diff = parsed.render(edit)
        mutants.append(
            Mutant(id=_mutant_id(kind, diff), kind=kind, description=_description(text), diff=diff)
        )
    return MutantSet(mutants, derived, duplicates, capped, notes)


# --- marking mutants harmless (the command line's file) ---------------------------------------------


def load_harmless(path: Path) -> dict[str, str]:
    """The mutants a maintainer marked harmless, from a text file: one ``<mutant id> <reason>`` per line;
    blank lines and lines starting with ``#`` are skipped. InputError naming the file and line for a line
    without a well-formed id or without a reason, or an id given twice."""
    try:
        text = read_input_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        mutant_id, _, reason = stripped.partition(" ")
        where = f"line {number}"
        if MUTANT_ID.fullmatch(mutant_id) is None:
            raise InputError(
                path,
                f"{_short(mutant_id, 40)!r} is not a mutant id (kind:hex, as rubric check prints)",
                where,
            )
        if not reason.strip():
            raise InputError(
                path, f"{mutant_id} has no reason: write why leaving that part out is harmless", where
            )
        if mutant_id in out:
            raise InputError(path, f"{mutant_id} is marked twice", where)
        out[mutant_id] = reason.strip()
    return out


# --- judging them ------------------------------------------------------------------------------------


class MutantRow(BaseModel):
    """One mutant judged like an admission row: caught when the rubric calls it not mergeable."""

    id: str
    kind: MutantKind
    description: str
    diff: str  # as the judge saw it
    mergeable: bool | None  # None on a judge failure
    caught: bool
    harmless: bool = False  # still mergeable, and a maintainer said that is fine
    harmless_reason: str = ""
    actual: str
    in_scope: bool
    integrity_ok: bool
    blockers_failed: list[str] = []
    blockers_not_measured: list[str] = []
    judge_failure: str | None = None
    judge: JudgeResult | None = None


class MutantReport(BaseModel):
    """Every judged mutant, and the counts a calibration run stores. Never part of admission."""

    task: str
    judge: str
    scripted: bool
    derived: int  # distinct mutants before the cap
    duplicates: int
    capped: bool
    notes: list[str] = []
    rows: list[MutantRow]
    total: int  # judged
    caught: int
    harmless: int  # still mergeable and marked harmless
    still_mergeable: list[str]  # ids the rubric still calls mergeable and nobody marked harmless
    judge_failures: int
    unknown_harmless: list[str] = []  # marked ids that are not among these mutants (another oracle?)
    calls: int = 0
    usage: Usage = Usage()


def describe(assessment: RubricAssessment) -> str:
    """A mutant's outcome in words, like an admission row's."""
    if assessment.judge_failure is not None:
        return f"judge failure: {assessment.judge_failure}"
    reasons = [f"fails {', '.join(assessment.blockers_failed)}"] if assessment.blockers_failed else []
    if not assessment.in_scope:
        reasons.append("out of scope")
    if not assessment.integrity_ok:
        reasons.append("test integrity fails")
    if reasons:
        return "caught: not mergeable: " + "; ".join(reasons)
    return "still mergeable: every measured blocker passes"


def mutant_row(
    rubric: Rubric,
    tests: TestsConfig | None,
    mutant: Mutant,
    result: JudgeResult,
    harmless: Mapping[str, str],
) -> MutantRow:
    """Grade one judged mutant: scope and integrity from its diff, the judge's verdicts, a harmless mark."""
    text = decode_diff(mutant.diff)
    changes = parse_diff(text.encode("utf-8"), f"mutant {mutant.id}")
    scope = check_scope(rubric.scope, changes, [])
    integrity = check_integrity(tests, changes, None, None, None, None)
    assessment = assess(rubric, scope, integrity, result)
    mergeable = assessment.mergeable
    reason = harmless.get(mutant.id, "") if mergeable is True else ""
    return MutantRow(
        id=mutant.id,
        kind=mutant.kind,
        description=mutant.description,
        diff=text,
        mergeable=mergeable,
        caught=mergeable is False,
        harmless=bool(reason),
        harmless_reason=reason,
        actual=describe(assessment),
        in_scope=assessment.in_scope,
        integrity_ok=assessment.integrity_ok,
        blockers_failed=assessment.blockers_failed,
        blockers_not_measured=assessment.blockers_not_measured,
        judge_failure=assessment.judge_failure,
        judge=result,
    )


# ``on_row(index, total, row)``: each mutant as soon as it is judged, in any order.
MutantCallback = Callable[[int, int, MutantRow], None]


def check_mutants(
    task_dir: Path,
    manifest_path: Path,
    judge: Backend | str,
    *,
    max_mutants: int = DEFAULT_MAX_MUTANTS,
    harmless: Mapping[str, str] | None = None,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    on_row: MutantCallback | None = None,
    rubric_path: Path | None = None,
    task_json: Path | None = None,
    checkout: Path | None = None,
    prompt_style: PromptStyle | None = None,
) -> MutantReport:
    """``rubric check --mutants``: the task folder read as :func:`grading.admission.check_task` reads it
    (``rubric_path``/``task_json`` for a held-out rubric; InputError for the same bad inputs), then
    :func:`judge_mutants` with the other arguments."""
    files = read_task_files(
        task_dir, manifest_path, rubric_path=rubric_path, task_json=task_json, admission=True
    )
    return judge_mutants(
        files,
        judge,
        max_mutants=max_mutants,
        harmless=harmless,
        cache=cache,
        settings=settings,
        on_row=on_row,
        checkout=checkout,
        prompt_style=prompt_style,
    )


def judge_mutants(
    files: TaskFiles,
    judge: Backend | str,
    *,
    max_mutants: int = DEFAULT_MAX_MUTANTS,
    harmless: Mapping[str, str] | None = None,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    on_row: MutantCallback | None = None,
    checkout: Path | None = None,
    prompt_style: PromptStyle | None = None,
) -> MutantReport:
    """Derive the mutants of the task's ``oracle_diff`` and judge each like an admission row (scope,
    integrity, the judge without the ``pass`` short-circuit), in memory.

    ``files`` is the task as :func:`grading.admission.check_admission` takes it. ``harmless`` maps mutant
    ids a maintainer marked harmless to the reason. Verdicts go through ``cache``: a mutant judged before
    costs no call. ``checkout`` (the repository holding task.json's ``base_commit``) lets revert-condition
    mutants of Python files be checked to parse. InputError for a task without a rubric or oracle diff, or
    a prompt style the task lacks.
    """
    backend = make_backend(judge) if isinstance(judge, str) else judge
    try:
        task = files.task.posed_as(prompt_style)  # the variant admission judges with
    except ValueError as exc:
        raise InputError(None, str(exc), "--prompt-style") from None
    rubric = files.rubric
    if rubric is None:
        raise InputError(Path(files.task_file).parent / RUBRIC_NAME, "file not found")
    tests = files.tests
    settings = settings or JudgeSettings()
    if files.oracle_diff is None:
        raise InputError(ORACLE_DIFF_NAME, "file not found")
    oracle = files.oracle_diff
    base: BaseReader | None = None
    if checkout is not None:
        tree = base_tree_for(task, checkout, Path(files.task_file))

        def base(path: str) -> bytes | None:
            return tree.read(path, MAX_PARSED_BYTES + 1)

    mutants = derive_mutants(oracle, "oracle.diff", max_mutants=max_mutants, base=base)
    marks = dict(harmless or {})
    jobs = []
    for n, mutant in enumerate(mutants.mutants):
        text = decode_diff(mutant.diff)
        check_diff_text(text, source=f"oracle.diff mutant {mutant.id}", max_chars=settings.max_diff_chars)
        changes = parse_diff(text.encode("utf-8"), f"mutant {mutant.id}")
        edited = bool(check_integrity(tests, changes, None, None, None, None).config_edits)
        jobs.append(SweepJob(label=str(n), task=task, rubric=rubric, diff_text=text, config_edited=edited))

    def progress(done: int, total: int, label: str, result: JudgeResult) -> None:
        if on_row is not None:
            n = int(label)
            on_row(n, total, mutant_row(rubric, tests, mutants.mutants[n], result, marks))

    sweep = asyncio.run(judge_sweep(jobs, backend, cache=cache, settings=settings, progress=progress))
    rows = [
        mutant_row(rubric, tests, mutant, result, marks)
        for mutant, result in zip(mutants.mutants, sweep.results, strict=True)
    ]
    ids = {row.id for row in rows}
    return MutantReport(
        task=task.id,
        judge=backend.spec,
        scripted=backend.scripted,
        derived=mutants.derived,
        duplicates=mutants.duplicates,
        capped=mutants.capped,
        notes=mutants.notes,
        rows=rows,
        total=len(rows),
        caught=sum(row.caught for row in rows),
        harmless=sum(row.harmless for row in rows),
        still_mergeable=[row.id for row in rows if row.mergeable is True and not row.harmless],
        judge_failures=sum(row.judge_failure is not None for row in rows),
        unknown_harmless=sorted(set(marks) - ids),
        calls=sweep.calls,
        usage=sweep.usage,
    )
