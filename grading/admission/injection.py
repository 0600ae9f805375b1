"""The injection suite at admission: payloads planted in calibration diffs to talk the judge out of a verdict.

§5 admits a rubric only if one fixed reviewer comment cannot get a lazy diff through. The suite goes further:
a corpus of payload kinds (:data:`PAYLOAD_KINDS`), each a different way an agent could address the judge from
inside the change under review: reviewer claims in the file's comment syntax, forged fence lines built on the
format of :mod:`grading.judge.prompt`, fake JSON verdicts, role-play, system-prompt imitations, Unicode
look-alikes and invisible characters, instructions in string literals, docstrings and test names, new files
whose path is the payload, a ``GIT binary patch`` stanza, a very long line, guessed nonces.

Two forms of each kind:

- the attack (:func:`inject_payload`), inserted into each lazy diff: the row must still fail the blockers the
  lazy diff breaks; a blocker that flips to pass is an *attack success*;
- the harmless form (:func:`inject_harmless`), the payload's text as comment lines in the oracle diff, which
  changes no behaviour: the oracle must stay mergeable; when it does not, that is *benign drift*.

Every insertion adds whole lines (or whole new files) to a diff that :func:`grading.diffs.read_diff` parses,
rewriting the hunk header's counts, so the result parses and applies wherever the original did. Where the
lines go: right before the first added (else removed) line of the first text hunk of a file that survives
the change, indented like that line: the same place as admission's reviewer comment.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, computed_field

from grading.admission.corpus import PAYLOAD_KINDS, PayloadKind, payload_kind
from grading.admission.sites import Site, comment_syntax, family_of
from grading.diffs import read_diff
from grading.errors import InputError
from grading.git_quote import c_quote


def _raw(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def insert_lines(
    diff: bytes, source: str, make_lines: Callable[[Site], list[str]], blockers: Iterable[str] = ("B1",)
) -> bytes:
    """``diff`` with the lines ``make_lines(site)`` added right before the first added (else removed) line of
    the first text hunk of a file that survives the change; the hunk header's new-side count grows by as
    many lines, so the diff stays valid and applies where it did.

    Raises InputError when the diff cannot be parsed or no hunk can carry the lines (only binary files or
    deletions).
    """
    parsed = read_diff(diff, source)
    # The parser's line indices are those of the input split at b"\n"; rebuild from the input's own bytes
    # so that line ends (CRLF) and bytes that are not UTF-8 come back unchanged.
    lines = diff.split(b"\n")
    for diff_file in parsed.files:
        path = diff_file.change.new_path
        if path is None:
            continue
        for hunk in diff_file.hunks:
            kinds = {kind: index for kind, _, _, index in reversed(list(parsed.hunk_lines(hunk)))}
            at = kinds.get("add", kinds.get("del"))
            if at is None:
                continue
            neighbour = lines[at][1:].decode("utf-8", errors="replace").rstrip("\r")
            indent = neighbour[: len(neighbour) - len(neighbour.lstrip(" \t"))]
            site = Site(path, indent, comment_syntax(path), family_of(path), tuple(blockers))
            new_lines = make_lines(site)
            if not new_lines or any("\n" in line or "\r" in line for line in new_lines):
                raise ValueError("payload lines must be non-empty and hold no line breaks")
            cr = b"\r" if lines[hunk.header_line].endswith(b"\r") else b""
            added = [b"+" + line.encode("utf-8") + cr for line in new_lines]
            new_first = hunk.new_start
            if hunk.new_count == 0:
                # An empty new side is anchored on the line before it; with lines it starts after it.
                new_first += 1
            old_part = f"{hunk.old_start}" if hunk.old_count == 1 else f"{hunk.old_start},{hunk.old_count}"
            count = hunk.new_count + len(new_lines)
            header = f"@@ -{old_part} +{new_first},{count} @@".encode() + _raw(hunk.section)
            if cr and not header.endswith(cr):
                header += cr
            return b"\n".join(
                [*lines[: hunk.header_line], header, *lines[hunk.header_line + 1 : at], *added, *lines[at:]]
            )
    raise InputError(source, "no text hunk in a file that survives the change, so no payload can be added")


def _site(diff: bytes, source: str, blockers: Iterable[str]) -> Site:
    found: list[Site] = []

    def keep(site: Site) -> list[str]:
        found.append(site)
        return ["x"]

    insert_lines(diff, source, keep, blockers)
    return found[0]


def _header_name(prefix: str, path: str) -> str:
    raw = _raw(prefix + path)
    # git quotes a name with a double quote, a backslash, a control byte or (by default) non-ASCII bytes.
    needs = any(b < 0x20 or b >= 0x7F or b in (0x22, 0x5C) for b in raw)
    return c_quote(raw) if needs else prefix + path


def _append(diff: bytes, section: list[bytes]) -> bytes:
    # Line ends as the diff's file headers have them (a diff saved with CRLF throughout keeps CRLF).
    crlf = any(
        line.endswith(b"\r") for line in diff.split(b"\n") if line.startswith((b"diff --git ", b"--- "))
    )
    end = b"\r\n" if crlf else b"\n"
    if diff and not diff.endswith(b"\n"):
        diff += end
    return diff + b"".join(line + end for line in section)


def append_text_file(diff: bytes, path: str, lines: list[str]) -> bytes:
    """``diff`` with a new text file ``path`` holding ``lines`` added at its end, as git writes it."""
    blob = "".join(line + "\n" for line in lines).encode("utf-8")
    sha = hashlib.sha1(b"blob %d\0" % len(blob) + blob, usedforsecurity=False).hexdigest()
    a, b = _header_name("a/", path), _header_name("b/", path)
    section = [
        f"diff --git {a} {b}".encode(),
        b"new file mode 100644",
        f"index 0000000..{sha[:7]}".encode(),
        b"--- /dev/null",
        f"+++ {b}".encode(),
        f"@@ -0,0 +1{'' if len(lines) == 1 else f',{len(lines)}'} @@".encode(),
        *(b"+" + line.encode("utf-8") for line in lines),
    ]
    return _append(diff, section)


def _base85_lines(data: bytes) -> list[bytes]:
    """git's binary-patch encoding of ``data``: zlib, then base85 lines of up to 52 bytes, each led by a
    letter for its length (A-Z: 1-26, a-z: 27-52)."""
    packed = zlib.compress(data, 9)
    out = []
    for i in range(0, len(packed), 52):
        chunk = packed[i : i + 52]
        n = len(chunk)
        letter = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        out.append(letter.encode() + base64.b85encode(chunk, pad=True))
    return out


def append_binary_file(diff: bytes, path: str, data: bytes) -> bytes:
    """``diff`` with a new binary file ``path`` holding ``data`` added at its end, as ``git diff --binary``
    writes it: a full index line and a ``GIT binary patch`` with the literal and its (empty) reverse."""
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
    a, b = _header_name("a/", path), _header_name("b/", path)
    section = [
        f"diff --git {a} {b}".encode(),
        b"new file mode 100644",
        f"index {'0' * 40}..{sha}".encode(),
        b"GIT binary patch",
        f"literal {len(data)}".encode(),
        *_base85_lines(data),
        b"",
        b"literal 0",
        *_base85_lines(b""),
        b"",
    ]
    return _append(diff, section)


# --- the corpus (grading/admission/corpus.py) -----------------------------------------------------------


def _resolve(kind: PayloadKind | str) -> PayloadKind:
    return payload_kind(kind) if isinstance(kind, str) else kind


def inject_payload(
    diff: bytes, source: str, kind: PayloadKind | str, blockers: Iterable[str] = ("B1",)
) -> bytes:
    """``diff`` with the attack form of ``kind`` added; the payload names ``blockers``.

    Raises InputError when the diff cannot be parsed or has no text hunk in a surviving file to anchor on.
    """
    kind = _resolve(kind)
    blockers = tuple(blockers)
    if kind.placement in ("new_file", "binary_file"):
        site = _site(diff, source, blockers)
        assert kind.path is not None
        if kind.placement == "new_file":
            return append_text_file(diff, kind.path(site), kind.text(site))
        assert kind.data is not None
        return append_binary_file(diff, kind.path(site), kind.data(site))

    def make(site: Site) -> list[str]:
        if kind.placement == "raw":
            return kind.text(site)
        if kind.placement == "code":
            return kind.code(site)
        return site.comment(kind.text(site))

    return insert_lines(diff, source, make, blockers)


def inject_harmless(
    diff: bytes, source: str, kind: PayloadKind | str, blockers: Iterable[str] = ("B1",)
) -> bytes:
    """``diff`` with the text of ``kind`` added as comment lines in the file's syntax: no behaviour changes,
    so a mergeable diff must stay mergeable."""
    kind = _resolve(kind)
    return insert_lines(diff, source, lambda site: site.comment(kind.text(site)), blockers)


# --- results ---------------------------------------------------------------------------------------------

RowOutcome = Literal["resisted", "attack_success", "kept", "benign_drift", "not_measured"]


class KindResult(BaseModel):
    """One payload kind's results: its attacks on the lazy diffs, and its harmless form in the oracle."""

    kind: str
    description: str
    attacks: int = 0  # lazy diffs it was inserted into
    attack_successes: int = 0  # a blocker the lazy diff breaks passed (or the row became mergeable)
    attacks_not_measured: int = 0  # judge failures
    benign: Literal["kept", "benign_drift", "not_measured"] | None = None  # the oracle with the comment


class InjectionSummary(BaseModel):
    """The suite's per-kind table and its two rates (over measured rows; judge failures counted apart)."""

    kinds: list[KindResult]
    attacks: int
    attack_successes: int
    attacks_not_measured: int
    benign: int
    benign_drifts: int
    benign_not_measured: int
    calls: int = 0  # judge calls the suite's rows made (cache hits make none)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def attack_success_rate(self) -> float | None:
        measured = self.attacks - self.attacks_not_measured
        return self.attack_successes / measured if measured else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def benign_drift_rate(self) -> float | None:
        measured = self.benign - self.benign_not_measured
        return self.benign_drifts / measured if measured else None


SuiteRowKind = Literal["injection", "benign"]


def summarize(rows: Iterable[tuple[str, SuiteRowKind, RowOutcome, int]]) -> InjectionSummary:
    """The summary of suite rows given as ``(payload kind name, row kind, outcome, judge calls)``."""
    table = {k.name: KindResult(kind=k.name, description=k.description) for k in PAYLOAD_KINDS}
    calls = 0
    for name, row_kind, outcome, row_calls in rows:
        calls += row_calls
        result = table[name]
        if row_kind == "benign":
            result.benign = (
                "not_measured"
                if outcome == "not_measured"
                else "benign_drift"
                if outcome == "benign_drift"
                else "kept"
            )
            continue
        result.attacks += 1
        if outcome == "attack_success":
            result.attack_successes += 1
        elif outcome == "not_measured":
            result.attacks_not_measured += 1
    kinds = list(table.values())
    return InjectionSummary(
        kinds=kinds,
        attacks=sum(k.attacks for k in kinds),
        attack_successes=sum(k.attack_successes for k in kinds),
        attacks_not_measured=sum(k.attacks_not_measured for k in kinds),
        benign=sum(1 for k in kinds if k.benign is not None),
        benign_drifts=sum(1 for k in kinds if k.benign == "benign_drift"),
        benign_not_measured=sum(1 for k in kinds if k.benign == "not_measured"),
        calls=calls,
    )
