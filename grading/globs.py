"""The glob dialect of rubric scopes and manifests: git's wildmatch in pathname mode.

``**`` crosses ``/`` when it is a whole path segment; ``*`` and ``?`` never do; ``*`` matches names
that start with a dot; bracket expressions follow wildmatch (``[abc]``, ``[a-z]``, ``[!a]``, ``[^a]``,
``[[:alpha:]]``). Python's fnmatch is not this dialect: its ``*`` crosses ``/``.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

_CLASSES: dict[str, str] = {
    "alnum": string.ascii_letters + string.digits,
    "alpha": string.ascii_letters,
    "blank": " \t",
    "cntrl": "".join(chr(c) for c in range(32)) + "\x7f",
    "digit": string.digits,
    "graph": "".join(chr(c) for c in range(33, 127)),
    "lower": string.ascii_lowercase,
    "print": "".join(chr(c) for c in range(32, 127)),
    "punct": string.punctuation,
    "space": " \t\n\r\f\v",
    "upper": string.ascii_uppercase,
    "xdigit": string.hexdigits,
}

_EXTGLOB = re.compile(r"[!@+*?]\(")


class _Unmatchable(Exception):
    """The pattern is malformed in a way wildmatch treats as matching nothing."""


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """Translate the bracket expression starting at ``pattern[i] == '['``; return (regex, next index)."""
    n = len(pattern)
    j = i + 1
    negate = False
    if j < n and pattern[j] in "!^":
        negate = True
        j += 1
    items: list[str] = []
    first = True
    while True:
        if j >= n:
            raise _Unmatchable("unclosed bracket expression")
        c = pattern[j]
        if c == "]" and not first:
            j += 1
            break
        first = False
        if c == "\\":
            j += 1
            if j >= n:
                raise _Unmatchable("bracket expression ends in a backslash")
            c = pattern[j]
        elif c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            if end != -1:
                name = pattern[j + 2 : end]
                if name not in _CLASSES:
                    raise _Unmatchable(f"unknown character class [:{name}:]")
                items.append("".join(re.escape(ch) for ch in _CLASSES[name]))
                j = end + 2
                continue
        # A range a-z (a '-' before ']' is literal).
        if j + 2 < n and pattern[j + 1] == "-" and pattern[j + 2] != "]":
            hi_index = j + 2
            hi = pattern[hi_index]
            if hi == "\\":
                hi_index += 1
                if hi_index >= n:
                    raise _Unmatchable("bracket expression ends in a backslash")
                hi = pattern[hi_index]
            if ord(hi) >= ord(c):
                items.append(f"{re.escape(c)}-{re.escape(hi)}")
            j = hi_index + 1
            continue
        items.append(re.escape(c))
        j += 1
    body = "".join(items)
    if negate:
        return f"[^/{body}]", j
    if not body:
        return "(?!)", j
    return f"(?!/)[{body}]", j


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole_segment = (j - i == 2) and (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if whole_segment:
                if j == n:
                    out.append(".*")
                    i = j
                else:
                    out.append("(?:.*/)?")
                    i = j + 1
            else:
                out.append("[^/]*")
                i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            regex, i = _bracket(pattern, i)
            out.append(regex)
        elif c == "\\":
            if i + 1 >= n:
                raise _Unmatchable("pattern ends in a backslash")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str] | None:
    """Compile ``pattern`` once; None for a pattern that wildmatch treats as matching nothing."""
    try:
        return re.compile(_translate(pattern), re.DOTALL)
    except _Unmatchable:
        return None


def match_glob(pattern: str, path: str) -> bool:
    """True when ``path`` (relative, ``/``-separated) matches ``pattern`` in the rubric glob dialect."""
    compiled = compile_glob(pattern)
    return compiled is not None and compiled.fullmatch(path) is not None


def match_any(patterns: list[str] | tuple[str, ...], path: str) -> bool:
    return any(match_glob(p, path) for p in patterns)


def glob_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid rubric glob, or None when it is."""
    if not pattern or not pattern.strip():
        return "empty glob"
    if pattern.startswith("/"):
        return "absolute path; globs are relative to the repository root"
    if re.match(r"^[A-Za-z]:[\\/]", pattern):
        return "absolute path; globs are relative to the repository root"
    if _EXTGLOB.search(pattern):
        return "extglob such as !(a|b) is not part of the dialect; use denied_globs to carve paths out"
    segments = pattern.split("/")
    if ".." in segments:
        return "'..' segments are not allowed; globs are relative to the repository root"
    for seg in segments:
        if "**" in seg and seg != "**":
            return f"'**' must be a whole path segment (found {seg!r})"
    try:
        _translate(pattern)
    except _Unmatchable as exc:
        return str(exc)
    return None
