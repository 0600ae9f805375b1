"""``path:line`` citations in a blocker's evidence text: the one reader, for the draft checks and re-review.

A citation is ``path:line`` or ``path:first-last``: "shapes/polygon.py:18", "src/a.c:34-35",
".github/workflows/ci.yml:7". What is not one:

- a path without a dot or a slash ("ratio 3:2", "note: 3");
- a URL's host and port ("http://host.example:8080", "www.example.com:80"): a candidate right after a
  path character, ``/`` or ``:``, or starting with ``www.``;
- a path with a ``..`` segment (not a path inside the repository);
- a line number followed by a letter or digit ("a.py:12abc"), or of more than nine digits.

Line numbers are read as written: a caller decides what a line 0 or a range ending before it starts
means (the draft checks report it, re-review skips it). Bounded repeats keep the scan linear on any text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PATH_CHARS = 600
MAX_LINE_DIGITS = 9

_CITATION = re.compile(
    rf"(?<![\w./:-])([\w.][\w./-]{{0,{MAX_PATH_CHARS - 1}}}):(\d{{1,{MAX_LINE_DIGITS}}})"
    rf"(?:-(\d{{1,{MAX_LINE_DIGITS}}}))?(?!\w)"
)


@dataclass(frozen=True)
class Citation:
    path: str
    start: int  # the first cited line, as written
    end: int  # the last: ``start`` for a single line


def parse_citations(evidence: str) -> list[Citation]:
    """Every ``path:line`` or ``path:first-last`` citation in ``evidence``, in order."""
    out: list[Citation] = []
    for match in _CITATION.finditer(evidence):
        path = match.group(1)
        if "/" not in path and "." not in path:
            continue
        if path.startswith("www.") or ".." in path.split("/"):
            continue
        start = int(match.group(2))
        out.append(Citation(path, start, int(match.group(3) or start)))
    return out
