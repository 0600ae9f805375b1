"""Negatives generated from the oracle: mechanical variants of ``oracle.diff`` that a sound rubric should
refuse, judged like admission rows (scope, integrity, the judge; no ``pass`` short-circuit).

§5 checks a rubric against one hand-written lazy diff. A mutant is the oracle with part of the fix taken
out, so it usually no longer fixes the task: a rubric that still calls it mergeable either has a hole (a
blocker to add) or the part taken out did not matter (a maintainer marks the mutant harmless). The list
is an authoring aid shown beside the admission rows; it never changes whether a rubric is admitted.

This module derives the set of mutants to judge: the kinds' candidates (:mod:`grading.mutants.kinds`) told
apart, capped, checked to parse (:mod:`grading.mutants.parse`) and rendered as diffs
(:mod:`grading.mutants.diff`). Judging them is :mod:`grading.mutants.judging`'s.

A mutant's id is its kind and the first hex digits of the sha256 of its diff, so it is stable for an
unchanged oracle and names another mutant once the oracle changes. Mutants with the same diff are kept once
(the more specific kind wins), an empty mutant (the whole fix left out: that is the admission's empty row)
is not kept, and at most ``max_mutants`` are judged, taken round-robin over the kinds, with a note saying
so. Mutants are told apart by what they leave out and replace, so only those judged are rendered:
derivation stays linear in the oracle's size. A 10 MB oracle of either shape (a lock file, or the tens of
thousands of one-line hunks of a rename) derives in under two seconds (``benchmarks/mutant_derivation.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from grading.errors import InputError
from grading.mutants.diff import DiffEdit, OracleLines
from grading.mutants.kinds import (
    KINDS,
    Candidate,
    ChangedLines,
    MutantKind,
    describe,
    drop_hunk,
    one_place_candidates,
    revert_condition,
    revert_file,
)
from grading.mutants.parse import BaseReader, broken_note, python_check

# Two kinds can give the same diff (a file's only hunk dropped is the file reverted): the more specific
# description is kept.
_PRIORITY: tuple[MutantKind, ...] = ("revert-condition", "one-place", "revert-file", "drop-hunk")

# Each mutant is a judge call; a large oracle gives hundreds of them.
DEFAULT_MAX_MUTANTS = 24
ID_HEX = 10
MUTANT_ID = re.compile(rf"(drop-hunk|revert-file|one-place|revert-condition):[0-9a-f]{{{ID_HEX}}}")


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


def _mutant_id(kind: MutantKind, diff: bytes) -> str:
    return f"{kind}:{hashlib.sha256(diff).hexdigest()[:ID_HEX]}"


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
    parsed = OracleLines(oracle, source)
    notes: list[str] = []
    table = ChangedLines(parsed)
    one_place = one_place_candidates(parsed, table, notes)
    conditions = revert_condition(parsed, table, notes)
    check = python_check(parsed, conditions, base, notes)
    candidates: dict[MutantKind, Iterable[Candidate]] = {
        "drop-hunk": drop_hunk(parsed),
        "revert-file": revert_file(parsed),
        "one-place": one_place,
        "revert-condition": conditions,
    }
    nothing_out = parsed.key(DiffEdit())
    seen: set[object] = set()
    # Per kind, in oracle order: (kind order, place in the oracle, kind, description, edit). Of a kind
    # taken without a check, no more than the cap can be taken: the others are only counted.
    found: dict[MutantKind, list[tuple[int, int, MutantKind, str | Callable[[], str], DiffEdit]]] = {}
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
    chosen: list[tuple[int, int, MutantKind, str | Callable[[], str], DiffEdit]] = []
    while len(chosen) < max_mutants and any(queues):
        for queue in queues:
            while queue and len(chosen) < max_mutants:
                entry = queue.popleft()
                if check is not None and entry[2] == "revert-condition" and check.breaks(entry[4]):
                    broken.append(describe(entry[3]))
                    continue
                chosen.append(entry)
                break
    if broken:
        notes.append(broken_note(broken))
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
        mutants.append(Mutant(id=_mutant_id(kind, diff), kind=kind, description=describe(text), diff=diff))
    return MutantSet(mutants, derived, duplicates, capped, notes)
