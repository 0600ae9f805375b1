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
  and a GPU backend), one kept and the others left out (each one kept in turn);
- ``revert-condition``: a changed line pair whose only change is a comparison or boolean operator, or the
  condition of an ``if``/``while``/``assert``, with the old line restored.

Every mutant is a diff that applies to the base: hunks are left out whole, later hunks of the same file
have their new-side start moved, and a restored line becomes context. A mutant's id is its kind and the
first hex digits of the sha256 of its diff, so it is stable for an unchanged oracle and names another
mutant once the oracle changes. Mutants with the same diff are kept once (the more specific kind wins),
an empty mutant (the whole fix left out: that is the admission's empty row) is not kept, and at most
``max_mutants`` are judged, taken round-robin over the kinds, with a note saying so.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from grading.diffs import MAX_DIFF_BYTES, ParsedDiff, ParsedFile, decode_diff, parse_diff, read_diff
from grading.errors import InputError
from grading.integrity import check_integrity
from grading.judge.backend import Backend
from grading.judge.cache import VerdictCache
from grading.judge.models import JudgeResult, Usage
from grading.judge.prompt import check_diff_text
from grading.judge.runner import JudgeSettings, SweepJob, judge_sweep
from grading.judge.specs import make_backend
from grading.outcome import RubricAssessment, assess
from grading.schema import (
    PromptStyle,
    Rubric,
    TestsConfig,
    load_manifest,
    load_rubric,
    load_task,
    read_input_bytes,
)
from grading.scope import check_scope

MutantKind = Literal["drop-hunk", "revert-file", "one-place", "revert-condition"]
KINDS: tuple[MutantKind, ...] = ("drop-hunk", "revert-file", "one-place", "revert-condition")
# Two kinds can give the same diff (a file's only hunk dropped is the file reverted): the more specific
# description is kept.
_PRIORITY: tuple[MutantKind, ...] = ("revert-condition", "one-place", "revert-file", "drop-hunk")

# Each mutant is a judge call; a large oracle gives hundreds of them.
DEFAULT_MAX_MUTANTS = 24
ID_HEX = 10
MUTANT_ID = re.compile(rf"(drop-hunk|revert-file|one-place|revert-condition):[0-9a-f]{{{ID_HEX}}}")

# Hunks whose changed lines are at least this similar (difflib ratio, whitespace ignored) are "the same
# fix in several places".
SIMILAR_RATIO = 0.8
# Shorter changed text (no whitespace) is not compared: a lone brace or blank line is similar to anything.
_MIN_SIMILAR_CHARS = 8
# Beyond this many hunks the pairwise comparison is skipped (quadratic); such an oracle gets no one-place
# mutants, and the note says so.
_MAX_COMPARED_HUNKS = 300


@dataclass(frozen=True, slots=True)
class Mutant:
    id: str
    kind: MutantKind
    description: str
    diff: bytes


@dataclass(frozen=True, slots=True)
class MutantSet:
    mutants: list[Mutant]  # the ones to judge, in kind order (at most the cap)
    derived: int  # distinct mutants before the cap
    duplicates: int  # left out because another mutant has the same diff
    capped: bool
    notes: list[str]


# --- rebuilding a diff with parts left out -------------------------------------------------------------

_HUNK_HEAD = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

HunkRef = tuple[int, int]  # (file index, hunk index) in ParsedDiff.files


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
        self.files = self.parsed.files

    def path(self, f: int) -> str:
        change = self.files[f].change
        return change.new_path or change.old_path or "?"

    def body(self, ref: HunkRef) -> list[bytes]:
        hunk = self.files[ref[0]].hunks[ref[1]]
        return self.lines[hunk.header_line + 1 : hunk.end_line]

    def hunk_refs(self) -> list[HunkRef]:
        return [(f, h) for f, pf in enumerate(self.files) for h in range(len(pf.hunks))]

    def render(self, edit: _Edit) -> bytes:
        out: list[bytes] = list(self.lines[: self.files[0].first_line]) if self.files else []
        bodies = edit.bodies or {}
        files = 0
        for f, pf in enumerate(self.files):
            if f in edit.drop_files:
                continue
            kept = self._file(f, pf, edit.drop_hunks, bodies)
            if kept is not None:
                out += kept
                files += 1
        if not files:
            return b""  # the whole fix left out
        out += self.lines[self.files[-1].end_line :]
        return b"\n".join(out) + (b"\n" if self.final_newline else b"")

    def _file(
        self, f: int, pf: ParsedFile, drop: frozenset[HunkRef], bodies: Mapping[HunkRef, list[bytes]]
    ) -> list[bytes] | None:
        if not pf.hunks:
            return list(self.lines[pf.first_line : pf.end_line])  # binary, mode-only or empty file
        out = list(self.lines[pf.first_line : pf.hunks[0].header_line])
        shift = 0  # lines the left-out hunks before this one added to the new side
        kept = 0
        for h, hunk in enumerate(pf.hunks):
            body = bodies.get((f, h), self.body((f, h)))
            if (f, h) in drop or not any(line[:1] in (b"+", b"-") for line in body):
                shift += hunk.new_count - hunk.old_count
                continue
            header = self.lines[hunk.header_line]
            if shift:
                match = _HUNK_HEAD.match(header)
                assert match is not None  # the parser read this header
                header = (
                    header[: match.start(3)] + str(hunk.new_start - shift).encode() + header[match.end(3) :]
                )
            out.append(header)
            out += body
            kept += 1
        # A file whose every hunk is left out is left out whole: its header alone would claim a change (the
        # index line's blobs differ) that is not there.
        return out if kept else None


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


def _drop_hunk(oracle: _Oracle) -> list[tuple[MutantKind, str, _Edit]]:
    return [
        ("drop-hunk", f"leaves out {_where(oracle, ref)}", _Edit(drop_hunks=frozenset([ref])))
        for ref in oracle.hunk_refs()
    ]


def _revert_file(oracle: _Oracle) -> list[tuple[MutantKind, str, _Edit]]:
    n = len(oracle.files)
    if n < 2:
        return []
    out: list[tuple[MutantKind, str, _Edit]] = []
    for f, pf in enumerate(oracle.files):
        others = f"keeps the other {n - 1} file{'s' if n > 2 else ''}"
        text = f"reverts {oracle.path(f)} ({pf.change.status} in the oracle), {others}"
        out.append(("revert-file", text, _Edit(drop_files=frozenset([f]))))
    return out


def _changed_text(body: Sequence[bytes]) -> str:
    lines = [line for line in body if line[:1] in (b"+", b"-")]
    return "\n".join(line[:1].decode() + " ".join(decode_diff(line[1:]).split()) for line in lines)


def _similar_groups(oracle: _Oracle, notes: list[str]) -> list[list[HunkRef]]:
    refs = oracle.hunk_refs()
    texts = {ref: _changed_text(oracle.body(ref)) for ref in refs}
    refs = [ref for ref in refs if len("".join(texts[ref].split())) >= _MIN_SIMILAR_CHARS + 2]
    if len(refs) > _MAX_COMPARED_HUNKS:
        notes.append(
            f"one-place: {len(refs)} hunks are too many to compare pairwise (limit {_MAX_COMPARED_HUNKS}); "
            "no one-place mutants"
        )
        return []
    parent = {ref: ref for ref in refs}

    def root(ref: HunkRef) -> HunkRef:
        while parent[ref] != ref:
            parent[ref] = parent[parent[ref]]
            ref = parent[ref]
        return ref

    for i, a in enumerate(refs):
        for b in refs[i + 1 :]:
            if root(a) == root(b):
                continue  # already in one group (single linkage): comparing them changes nothing
            matcher = difflib.SequenceMatcher(None, texts[a], texts[b], autojunk=False)
            if matcher.real_quick_ratio() >= SIMILAR_RATIO and matcher.ratio() >= SIMILAR_RATIO:
                parent[root(b)] = root(a)
    groups: dict[HunkRef, list[HunkRef]] = {}
    for ref in refs:
        groups.setdefault(root(ref), []).append(ref)
    return [group for group in groups.values() if len(group) >= 2]


def _one_place(oracle: _Oracle, notes: list[str]) -> list[tuple[MutantKind, str, _Edit]]:
    out: list[tuple[MutantKind, str, _Edit]] = []
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


def _restored_bodies(body: list[bytes]) -> list[tuple[int, list[bytes], str, str, str]]:
    """For each condition pair in a hunk body: (index of the added line, the body with the old line
    restored, what changed, old text, new text).

    A pair is a removed line and the added line of the same block (removed lines, then added lines) most
    like it among those that differ from it only in a condition: blocks need not pair line for line (a
    comment added above a changed comparison).
    """
    out: list[tuple[int, list[bytes], str, str, str]] = []
    i = 0
    n = len(body)
    while i < n:
        if body[i][:1] != b"-":
            i += 1
            continue
        start = i
        while i < n and body[i][:1] == b"-":
            i += 1
        middle = i
        while i < n and body[i][:1] == b"+":
            i += 1
        removed, added = body[start:middle], body[middle:i]
        if not added or (i < n and body[i][:1] == b"\\"):
            continue  # nothing added, or at the end of a file without its newline: left alone
        new_texts = [decode_diff(line[1:]) for line in added]
        for k, old in enumerate(removed):
            old_text = decode_diff(old[1:])
            pairs = [
                (difflib.SequenceMatcher(None, old_text, new_text, autojunk=False).ratio(), j, what)
                for j, new_text in enumerate(new_texts)
                if (what := condition_change(old_text, new_text)) is not None
            ]
            if not pairs:
                continue
            _, j, what = max(pairs, key=lambda pair: (pair[0], -pair[1]))
            # The restored line takes the added line's place: old lines before it stay before it in the old
            # file, new lines before it stay before it in the new one.
            block = [*removed[:k], *added[:j], b" " + old[1:], *removed[k + 1 :], *added[j + 1 :]]
            out.append((middle + j, [*body[:start], *block, *body[i:]], what, old_text, new_texts[j]))
    return out


def _revert_condition(oracle: _Oracle) -> list[tuple[MutantKind, str, _Edit]]:
    out: list[tuple[MutantKind, str, _Edit]] = []
    for ref in oracle.hunk_refs():
        hunk = oracle.files[ref[0]].hunks[ref[1]]
        body = oracle.body(ref)
        for at, restored, what, old_text, new_text in _restored_bodies(body):
            new_line = hunk.new_start + sum(1 for line in body[:at] if line[:1] in (b" ", b"+", b""))
            change = "operator" if what == "operator" else "condition"
            text = (
                f"swaps the {change} back in {oracle.path(ref[0])} (new line {new_line}): "
                f"`{_short(new_text.strip(), 60)}` -> `{_short(old_text.strip(), 60)}`"
            )
            out.append(("revert-condition", text, _Edit(bodies={ref: restored})))
    return out


def derive_mutants(
    oracle: bytes, source: str = "oracle.diff", *, max_mutants: int = DEFAULT_MAX_MUTANTS
) -> MutantSet:
    """Every mutant of ``oracle`` (the bytes of a unified diff), without duplicates, at most ``max_mutants``
    of them (round-robin over the kinds). Raises InputError when the oracle is not a diff."""
    if max_mutants < 0:
        raise InputError(None, "must be 0 or more", "--max-mutants")
    parsed = _Oracle(oracle, source)
    notes: list[str] = []
    candidates: dict[MutantKind, list[tuple[MutantKind, str, _Edit]]] = {
        "drop-hunk": _drop_hunk(parsed),
        "revert-file": _revert_file(parsed),
        "one-place": _one_place(parsed, notes),
        "revert-condition": _revert_condition(parsed),
    }
    by_diff: dict[bytes, tuple[int, int, Mutant]] = {}  # diff -> (kind order, place in the oracle, mutant)
    duplicates = 0
    for kind in _PRIORITY:
        for n, (_, text, edit) in enumerate(candidates[kind]):
            diff = parsed.render(edit)
            if not diff or diff == oracle:
                continue  # the whole fix left out (the empty row), or nothing left out
            if diff in by_diff:
                duplicates += 1
                continue
            mutant = Mutant(id=_mutant_id(kind, diff), kind=kind, description=text, diff=diff)
            by_diff[diff] = (KINDS.index(kind), n, mutant)
    everything = [m for _, _, m in sorted(by_diff.values(), key=lambda entry: entry[:2])]
    if len(everything) <= max_mutants:
        return MutantSet(everything, len(everything), duplicates, False, notes)
    # Taken in turn from each kind, so a cap never leaves a kind out while another fills it.
    queues = [[m for m in everything if m.kind == kind] for kind in KINDS]
    chosen: set[str] = set()
    while len(chosen) < max_mutants:
        for queue in queues:
            if queue and len(chosen) < max_mutants:
                chosen.add(queue.pop(0).id)
    kept = [m for m in everything if m.id in chosen]
    notes.append(
        f"capped: {len(everything)} mutants derived, {len(kept)} judged (taken in turn from each kind); "
        "raise --max-mutants to judge more"
    )
    return MutantSet(kept, len(everything), duplicates, True, notes)


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
    prompt_style: PromptStyle | None = None,
) -> MutantReport:
    """Derive the mutants of ``task_dir/oracle.diff`` and judge each like an admission row (scope,
    integrity, the judge without the ``pass`` short-circuit).

    ``harmless`` maps mutant ids a maintainer marked harmless to the reason. Reads the same files as
    :func:`grading.admission.check_task` (``rubric_path``/``task_json`` for a held-out rubric) and raises
    InputError for the same bad inputs. Verdicts go through ``cache``: a mutant judged before costs no call.
    """
    backend = make_backend(judge) if isinstance(judge, str) else judge
    try:
        task = load_task(task_dir, task_json).posed_as(prompt_style)  # the variant admission judges with
    except ValueError as exc:
        raise InputError(None, str(exc), "--prompt-style") from None
    rubric = load_rubric(task_dir / "rubric.json" if rubric_path is None else rubric_path)
    tests = load_manifest(manifest_path).tests
    settings = settings or JudgeSettings()
    oracle_path = task_dir / "oracle.diff"
    try:
        oracle = read_input_bytes(oracle_path, MAX_DIFF_BYTES)
    except InputError as exc:
        raise InputError("oracle.diff", exc.message) from None
    mutants = derive_mutants(oracle, "oracle.diff", max_mutants=max_mutants)
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
