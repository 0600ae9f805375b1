"""The mutant kinds: each kind's candidates (kind, description, edit) derived from the oracle's hunks as
:mod:`grading.mutants.diff` indexes them, before any is told apart from another or rendered.

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
  the restored line keeps the new line's indentation. A line longer than ``MAX_CONDITION_LINE_BYTES`` is
  never paired, and at most ``MAX_CONDITION_MUTANTS`` are derived (notes say so): both are quadratic past
  those bounds. Whether a Python mutant still parses is :mod:`grading.mutants.parse`'s.

What the kinds ask of each hunk's changed lines is read for all hunks at once (:class:`ChangedLines`), as
an oracle of many one-line hunks (a rename) has tens of thousands of them.
"""

from __future__ import annotations

import bisect
import collections
import difflib
import functools
import itertools
import operator
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Literal

from grading.diffs import decode_diff
from grading.mutants.diff import DiffEdit, HunkRef, OracleLines

MutantKind = Literal["drop-hunk", "revert-file", "one-place", "revert-condition"]
KINDS: tuple[MutantKind, ...] = ("drop-hunk", "revert-file", "one-place", "revert-condition")

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
# _HEAD_HINTS with the line start as a "\n" (the changed lines joined, after a "\n"): the same matches, found
# by a scan for the literal "\n" rather than by trying the pattern at every byte.
_HEAD_HINTS_AFTER_NEWLINE = re.compile(b"\n" + _HEAD_HINTS.pattern[1:])
# _NOT_OPERANDS for ASCII bytes.
_ASCII_OPERANDS = re.compile(rb"\b(?:and|or|not|is|in)\b|[<>=!&|() \t\n\r\x0b\x0c\x1c-\x1f]")


_ONES = itertools.repeat(ord("1"))
# A mutant before it is judged: its kind, its description (or how to write it), what it changes.
Candidate = tuple[MutantKind, str | Callable[[], str], DiffEdit]


def describe(text: str | Callable[[], str]) -> str:
    return text if isinstance(text, str) else text()


def _where(oracle: OracleLines, ref: HunkRef) -> str:
    pf = oracle.files[ref[0]]
    hunk = pf.hunks[ref[1]]
    section = hunk.section.strip()
    place = f"hunk {ref[1] + 1} of {len(pf.hunks)} in {oracle.path(ref[0])} (old line {hunk.old_start}"
    return place + (f", {shorten(section, 50)})" if section else ")")


def shorten(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def drop_hunk(oracle: OracleLines) -> Iterator[Candidate]:
    # One per hunk, and few of them judged: made one at a time (not all kept), and each description is
    # written when the mutant is taken.
    for f, pf in enumerate(oracle.files):
        for h in range(len(pf.hunks)):
            ref = (f, h)
            yield (
                "drop-hunk",
                functools.partial(_left_out, oracle, ref),
                DiffEdit(drop_hunks=frozenset([ref])),
            )


def _left_out(oracle: OracleLines, ref: HunkRef) -> str:
    return f"leaves out {_where(oracle, ref)}"


def revert_file(oracle: OracleLines) -> list[Candidate]:
    n = len(oracle.files)
    if n < 2:
        return []
    out: list[Candidate] = []
    for f, pf in enumerate(oracle.files):
        others = f"keeps the other {n - 1} file{'s' if n > 2 else ''}"
        text = f"reverts {oracle.path(f)} ({pf.change.status} in the oracle), {others}"
        out.append(("revert-file", text, DiffEdit(drop_files=frozenset([f]))))
    return out


def _changed_text(body: Sequence[bytes]) -> str:
    lines = [line for line in body if line[:1] in (b"+", b"-")]
    return "\n".join(line[:1].decode() + " ".join(decode_diff(line[1:]).split()) for line in lines)


def _trigrams(text: str) -> frozenset[Hashable]:
    """The character trigrams of ``text`` as a set that keeps repeats apart (a trigram's first occurrence is
    the trigram itself, its n-th after that ``(trigram, n)``, n from 1), so a set intersection counts a
    multiset's. Most trigrams of a hunk occur once: only the repeated ones are counted and paired."""
    grams = [text[i : i + 3] for i in range(len(text) - 2)]
    distinct: set[Hashable] = set(grams)
    if len(distinct) < len(grams):
        repeated = collections.Counter(grams)
        distinct.update((gram, n) for gram, count in repeated.items() if count > 1 for n in range(1, count))
    return frozenset(distinct)


class ChangedLines:
    """What the kinds ask of each hunk's changed lines, read for all of them at once (in C, over the lines
    joined) and kept as prefix sums per changed line in ``OracleLines.marks`` order: a hunk's answer is a
    difference, not a step per line, so the many hunks of a rename cost little. Read once per oracle, for
    one-place and revert-condition."""

    def __init__(self, oracle: OracleLines) -> None:
        lines = list(map(oracle.lines.__getitem__, oracle.marks))
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
        starts = [m.start() for m in _HEAD_HINTS_AFTER_NEWLINE.finditer(b"\n" + joined)]
        heads = list(
            map(
                operator.sub, map(bisect.bisect_right, itertools.repeat(offsets), starts), itertools.repeat(1)
            )
        )
        self.odd = sorted({*odd, *heads})
        self.sketches = joined.translate(None, _NOT_SKETCH.replace(b"\n", b"") + b"+-").split(b"\n")
        self.long = list(itertools.compress(range(n), [len(x) > MAX_CONDITION_LINE_BYTES + 1 for x in lines]))


def _similar_groups(oracle: OracleLines, table: ChangedLines, notes: list[str]) -> list[list[HunkRef]]:
    refs: list[HunkRef] = []
    too_large = 0
    sizes, visible = table.bytes, table.visible
    for f, (los, his) in enumerate(zip(oracle.lo, oracle.hi, strict=True)):
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
    component = similar_components([_trigrams(_changed_text(oracle.changed(ref))) for ref in refs])
    groups: dict[int, list[HunkRef]] = {}
    for ref, c in zip(refs, component, strict=True):
        groups.setdefault(c, []).append(ref)
    return [group for group in groups.values() if len(group) >= 2]


def similar_components(sets: Sequence[frozenset[Hashable]]) -> list[int]:
    """The connected components of ``sets`` linked by a Dice coefficient of at least ``SIMILAR_RATIO``
    (single linkage), as one set's index per set.

    Every pair that may pass is compared exactly, but as bits: only the elements two sets or more hold can
    be shared, so each set becomes an integer with one bit per such element (the commonest first), and an
    overlap is one ``&`` and a bit count in C rather than a set intersection hashing every element. A set
    is compared only with those within the size window Dice allows (the smaller at least R / (2 - R) of the
    larger: the overlap is at most the smaller size, tested in the comparison's own floating-point
    arithmetic so that rounding never cuts a pair exactly at R), and never with one already in its
    component (which would change nothing)."""
    parent = list(range(len(sets)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    count = collections.Counter(itertools.chain.from_iterable(sets))
    shared = sorted((gram for gram, n in count.items() if n > 1), key=count.__getitem__, reverse=True)
    # Each shared element is a digit of a binary numeral, from 1 (a set's other elements all fall on digit
    # 0, the leading one, cleared after): the digits are set and the numeral read by int(), in C.
    digit = {gram: i for i, gram in enumerate(shared, 1)}
    masks: list[int] = []
    for grams in sets:
        numeral = bytearray(b"0" * (len(digit) + 1))
        collections.deque(map(numeral.__setitem__, map(digit.get, grams, itertools.repeat(0)), _ONES), 0)
        numeral[0] = ord("0")
        masks.append(int(numeral, 2))
    sizes = list(map(len, sets))
    by_size = sorted(range(len(sets)), key=sizes.__getitem__)
    for k, a in enumerate(by_size):
        size_a, mask_a = sizes[a], masks[a]
        for b in by_size[k + 1 :]:
            size_b = sizes[b]
            if 2 * size_a < SIMILAR_RATIO * (size_a + size_b):
                break  # the overlap is at most size_a; larger sets are further still
            if root(a) == root(b):
                continue
            if 2 * (mask_a & masks[b]).bit_count() >= SIMILAR_RATIO * (size_a + size_b):
                parent[root(b)] = root(a)
    return [root(i) for i in range(len(sets))]


def one_place_candidates(oracle: OracleLines, table: ChangedLines, notes: list[str]) -> list[Candidate]:
    out: list[Candidate] = []
    for group in _similar_groups(oracle, table, notes):
        for keep in group:
            others = [ref for ref in group if ref != keep]
            text = (
                f"keeps the fix only in {_where(oracle, keep)}, one of {len(group)} near-identical places; "
                f"leaves out the one{'s' if len(others) > 1 else ''} in "
                + ", ".join(f"{oracle.path(f)} hunk {h + 1}" for f, h in others)
            )
            out.append(("one-place", text, DiffEdit(drop_hunks=frozenset(others))))
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


def _may_pair(oracle: OracleLines, table: ChangedLines, lo: int, hi: int) -> bool:
    """False when no removed line among changed lines ``[lo, hi)`` can pair with an added one: all ASCII,
    none may hold a condition, and no removed line has the sketch of an added one. True when it cannot
    tell. Cheap, so that the many hunks of a rename cost little."""
    if bisect.bisect_left(table.odd, lo) < bisect.bisect_left(table.odd, hi):
        return True
    sketches, marks, lines = table.sketches, oracle.marks, oracle.lines
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


def revert_condition(oracle: OracleLines, table: ChangedLines, notes: list[str]) -> list[Candidate]:
    out: list[Candidate] = []
    long_lines = 0
    if long := table.long:
        for los, his in zip(oracle.lo, oracle.hi, strict=True):
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
            if not _may_pair(oracle, table, oracle.lo[f][h], oracle.hi[f][h]):
                continue
            if _conditions(oracle, (f, h), out, notes):
                return out
    return out


def _conditions(oracle: OracleLines, ref: HunkRef, out: list[Candidate], notes: list[str]) -> bool:
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
            f"`{shorten(new_text.strip(), 60)}` -> `{shorten(old_text.strip(), 60)}`"
        )
        out.append(("revert-condition", text, DiffEdit(bodies={ref: restored})))
    return False
