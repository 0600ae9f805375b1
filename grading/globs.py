"""The glob dialect of rubric scopes and manifests: git's wildmatch in pathname mode (``WM_PATHNAME``).

``**`` crosses ``/`` when it is a whole path segment (``**/x``, ``a/**/x``, ``a/**``); ``*`` and ``?``
never do; ``*`` matches names that start with a dot; bracket expressions follow wildmatch (``[abc]``,
``[a-z]``, ``[!a]``, ``[^a]``, ``[[:alpha:]]``) and never match ``/``. Python's fnmatch is not this
dialect: its ``*`` crosses ``/``.

Like git, matching works on the bytes of the path (UTF-8): ``?`` matches one byte, so it does not match
``é``. A pattern is translated once into a regular expression with the same meaning as git's
``dowild()`` (wildmatch.c), whose early-abort returns only prune the search and never change a result.
Malformed patterns (an unclosed bracket, an unknown ``[:class:]``, a trailing backslash) match nothing,
as in git; :func:`glob_error` rejects them, and the other forms rubric authors get wrong, before use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Character classes as git defines them (git-compat-util.h/ctype.c: ASCII only). Note [:space:] is
# " \t\n\r": git's isspace() leaves out \v and \f, unlike C's and Python's.
_SPACE = b" \t\n\r"
_PUNCT = bytes(c for c in range(33, 127) if not chr(c).isalnum())
_CLASSES: dict[bytes, frozenset[int]] = {
    name.encode(): frozenset(members)
    for name, members in {
        "alnum": b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "alpha": b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "blank": b" \t",
        "cntrl": bytes([*range(32), 127]),
        "digit": b"0123456789",
        "graph": bytes(range(33, 127)),
        "lower": b"abcdefghijklmnopqrstuvwxyz",
        "print": bytes(range(32, 127)),
        "punct": _PUNCT,
        "space": _SPACE,
        "upper": b"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "xdigit": b"0123456789abcdefABCDEF",
    }.items()
}
_SLASH = ord("/")
_ALL_BYTES = frozenset(range(256))

# Extglob forms ?(..) *(..) +(..) @(..) !(..): plain literals to wildmatch, so a rubric that uses them
# would silently match nothing (or the wrong files).
_EXTGLOB = re.compile(r"(?<!\\)[!@+*?]\([^)]*\)")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


class _Unmatchable(Exception):
    """The pattern is malformed in a way wildmatch treats as matching nothing (WM_ABORT_ALL)."""


def _byte_class(members: Iterable[int]) -> bytes:
    allowed = sorted(set(members) - {_SLASH})  # pathname mode: a bracket never matches '/'
    if not allowed:
        return rb"(?!)"
    return b"[" + b"".join(b"\\x%02x" % c for c in allowed) + b"]"


def _bracket(pat: bytes, i: int) -> tuple[bytes, int]:
    """Translate the bracket expression at ``pat[i] == '['`` exactly as dowild() reads it.

    Returns (regex, index after the closing ']').
    """
    n = len(pat)

    def at(k: int) -> int:
        return pat[k] if k < n else 0

    p = i + 1
    ch = at(p)
    if ch == ord("^"):
        ch = ord("!")
    negated = ch == ord("!")
    if negated:
        p += 1
        ch = at(p)
    members: set[int] = set()
    prev = 0
    # do { ... } while (prev_ch = p_ch, (p_ch = *++p) != ']'): the first member may be a ']'.
    while True:
        if ch == 0:
            raise _Unmatchable("unclosed bracket expression")
        if ch == ord("\\"):
            p += 1
            ch = at(p)
            if ch == 0:
                raise _Unmatchable("bracket expression ends in a backslash")
            members.add(ch)
        elif ch == ord("-") and prev and at(p + 1) and at(p + 1) != ord("]"):
            p += 1
            ch = at(p)
            if ch == ord("\\"):
                p += 1
                ch = at(p)
                if ch == 0:
                    raise _Unmatchable("bracket expression ends in a backslash")
            members.update(range(prev, ch + 1))  # empty when the range is reversed
            ch = 0  # a range end never starts another range
        elif ch == ord("[") and at(p + 1) == ord(":"):
            start = p + 2
            end = start
            while at(end) and at(end) != ord("]"):
                end += 1
            if not at(end):
                raise _Unmatchable("unclosed bracket expression")
            length = end - start - 1
            if length < 0 or pat[end - 1] != ord(":"):
                # No ":]": the '[' is an ordinary member and scanning resumes after it.
                members.add(ord("["))
                p = start - 2
                ch = ord("[")
            else:
                name = pat[start : start + length]
                if name not in _CLASSES:
                    raise _Unmatchable(f"unknown character class [:{name.decode(errors='replace')}:]")
                members.update(_CLASSES[name])
                p = end
                ch = 0
        else:
            members.add(ch)
        prev = ch
        p += 1
        ch = at(p)
        if ch == ord("]"):
            break
    return _byte_class(_ALL_BYTES - members if negated else members), p + 1


_ANY_DIRS = rb"(?:.*/)?"
_ANY = rb".*"
_STAR = rb"[^/]*"


def _translate(pat: bytes) -> bytes:
    out: list[bytes] = []
    i = 0
    n = len(pat)
    while i < n:
        c = pat[i]
        if c == ord("*"):
            j = i
            while j < n and pat[j] == ord("*"):
                j += 1
            # dowild(): a run of two or more stars is "**" when it follows the start or a '/' and is
            # followed by the end, '/' or an escaped '/'; otherwise it is one '*'.
            after_slash = i == 0 or pat[i - 1] == _SLASH
            if j - i >= 2 and after_slash and (j == n or pat[j] == _SLASH or pat[j : j + 2] == b"\\/"):
                if j == n:
                    out.append(_ANY)  # trailing "**" matches everything below
                    i = j
                elif pat[j] == _SLASH:
                    # "**/" matches zero or more whole directories; "**/**/" is the same as "**/".
                    if not out or out[-1] != _ANY_DIRS:
                        out.append(_ANY_DIRS)
                    i = j + 1
                else:
                    out.append(_ANY)  # "**\/": no zero-directory shortcut in dowild()
                    i = j
            else:
                out.append(_STAR)
                i = j
        elif c == ord("?"):
            out.append(rb"[^/]")
            i += 1
        elif c == ord("["):
            regex, i = _bracket(pat, i)
            out.append(regex)
        elif c == ord("\\"):
            if i + 1 >= n:
                raise _Unmatchable("pattern ends in a backslash")
            out.append(re.escape(pat[i + 1 : i + 2]))
            i += 2
        else:
            out.append(re.escape(pat[i : i + 1]))
            i += 1
    return _atomic_stars(out)


def _atomic_stars(out: list[bytes]) -> bytes:
    """Join the pieces, matching each ``*X*`` (X fixed-width) as an atomic group on X's leftmost end.

    A backtracking regex tries every split of a name between the stars: ``*.*.*.*.x`` took seconds on a
    name of 255 dots, and agents choose the names. Taking the leftmost X is always enough when another
    ``*`` follows: a later X leaves only non-'/' text in between, which that star absorbs (the argument
    behind fnmatch's own atomic translation). git's dowild() prunes the same search with its aborts.
    """
    joined: list[bytes] = []
    i = 0
    while i < len(out):
        if out[i] == _STAR:
            j = i + 1
            while j < len(out) and out[j] not in (_STAR, _ANY_DIRS, _ANY):
                j += 1
            if j < len(out) and out[j] == _STAR and j > i + 1:
                joined.append(rb"(?>[^/]*?" + b"".join(out[i + 1 : j]) + rb")")
                i = j
                continue
        joined.append(out[i])
        i += 1
    return b"".join(joined)


def _encode(text: str) -> bytes:
    # surrogateescape: paths unquoted from a diff may carry bytes that are not UTF-8. Any other lone
    # surrogate (JSON can spell one, "\\ud800") is kept as its 3 bytes rather than raising.
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[bytes] | None:
    """Compile ``pattern`` once (cached); None for a pattern that wildmatch treats as matching nothing.

    The expression matches UTF-8 bytes; use :func:`match_glob` rather than calling it directly.
    """
    try:
        return re.compile(_translate(_encode(pattern)), re.DOTALL)
    except _Unmatchable:
        return None


def match_glob(pattern: str, path: str) -> bool:
    """True when ``path`` (relative, ``/``-separated) matches ``pattern`` as git's wildmatch does."""
    compiled = compile_glob(pattern)
    return compiled is not None and compiled.fullmatch(_encode(path)) is not None


def match_any(patterns: Iterable[str], path: str) -> bool:
    """True when ``path`` matches at least one of ``patterns``."""
    return any(match_glob(p, path) for p in patterns)


def glob_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid rubric glob, or None when it is."""
    if not pattern or not pattern.strip():
        return "empty glob"
    if "\0" in pattern:
        return "a NUL character can never be part of a path"
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode text (a lone surrogate)"
    if pattern.startswith("/") or _DRIVE.match(pattern):
        return "absolute path; globs are relative to the repository root"
    if _EXTGLOB.search(pattern):
        return (
            "extglob such as !(a|b) is not part of the dialect; use denied_globs to carve paths out "
            "(write \\( for a literal parenthesis)"
        )
    if pattern.startswith("!"):
        return "negation ('!') is not part of the dialect; list the paths to exclude in denied_globs"
    segments = pattern.split("/")
    if ".." in segments:
        return "'..' segments are not allowed; globs are relative to the repository root"
    if "." in segments:
        return "'.' segments are not allowed; paths are written without './'"
    if pattern.endswith("/"):
        return f"a trailing '/' matches no file; write {pattern + '**'!r} for everything below"
    if "" in segments:
        return "empty path segment ('//')"
    for seg in segments:
        if "**" in seg and seg != "**":
            return f"'**' must be a whole path segment (found {seg!r}); use '*' within a name"
    try:
        _translate(_encode(pattern))
    except _Unmatchable as exc:
        return str(exc)
    return None
