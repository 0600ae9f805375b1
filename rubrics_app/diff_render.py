"""A unified diff as a readable, syntax-highlighted HTML table.

Diff text is untrusted (an agent or a drafter wrote every byte), so every character of it reaches the page
through pygments' HTML formatter or ``escape``; nothing from the diff is ever marked safe unescaped.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

# A diff beyond these is cut, with a note: a page must stay readable (and fast) whatever the agent wrote.
MAX_DIFF_CHARS = 400_000
MAX_DIFF_LINES = 8_000
# Longer lines are shown plain (minified code, generated data): no lexer ever sees them.
MAX_HIGHLIGHT_LINE = 1_000
# What one page may spend on syntax highlighting (HighlightBudget).
HIGHLIGHT_SECONDS = 0.3

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")

# The CSS scope the pygments style sheet is generated for (static/rubrics/pygments.css).
CSS_SCOPE = ".diff .code"


@dataclass
class DiffLine:
    kind: str  # "add", "del", "ctx", "hunk", "meta", "note"
    text: str
    old_no: int | None = None
    new_no: int | None = None
    html: str = ""


@dataclass
class DiffFile:
    path: str
    lines: list[DiffLine] = field(default_factory=list)
    has_hunk: bool = False


def _lexer_for(path: str) -> Lexer:
    lexer: Lexer
    try:
        lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    return lexer


def _path_from_header(line: str) -> str | None:
    match = _GIT_HEADER.match(line)
    if match:
        return match.group(2)
    if line.startswith("+++ ") or line.startswith("--- "):
        name = line[4:].split("\t", 1)[0].strip()
        if name == "/dev/null":
            return None
        return name[2:] if name[:2] in ("a/", "b/") else name
    return None


def parse_for_display(text: str) -> tuple[list[DiffFile], bool]:
    """Split a diff into files and numbered lines. Returns (files, truncated).

    Lenient on purpose: this is for reading, not grading, so a diff that grading.diffs would reject is still
    shown line by line rather than hidden behind an error.
    """
    truncated = False
    if len(text) > MAX_DIFF_CHARS:
        text, truncated = text[:MAX_DIFF_CHARS], True
    raw_lines = text.splitlines()
    if len(raw_lines) > MAX_DIFF_LINES:
        raw_lines, truncated = raw_lines[:MAX_DIFF_LINES], True

    files: list[DiffFile] = []
    current: DiffFile | None = None
    old_no = new_no = 0
    # Lines left in the current hunk, from its header: a "--- x" line inside a hunk is a removed line,
    # after it a file header.
    old_left = new_left = 0
    for index, line in enumerate(raw_lines):
        in_hunk = old_left > 0 or new_left > 0
        next_line = raw_lines[index + 1] if index + 1 < len(raw_lines) else ""
        starts_file = line.startswith("diff --git ") or (
            line.startswith("--- ") and next_line.startswith("+++ ") and (current is None or current.has_hunk)
        )
        if not in_hunk and starts_file:
            current = DiffFile(path=_path_from_header(line) or "")
            files.append(current)
            current.lines.append(DiffLine("meta", line))
            continue
        if current is None:
            current = DiffFile(path="")
            files.append(current)
        hunk = _HUNK.match(line)
        if not in_hunk and hunk:
            old_no, new_no = int(hunk.group(1)), int(hunk.group(3))
            old_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
            new_left = int(hunk.group(4)) if hunk.group(4) is not None else 1
            current.has_hunk = True
            current.lines.append(DiffLine("hunk", line))
            continue
        if in_hunk and line.startswith("+"):
            current.lines.append(DiffLine("add", line[1:], None, new_no))
            new_no, new_left = new_no + 1, new_left - 1
        elif in_hunk and line.startswith("-"):
            current.lines.append(DiffLine("del", line[1:], old_no, None))
            old_no, old_left = old_no + 1, old_left - 1
        elif in_hunk and (line.startswith(" ") or line == ""):
            current.lines.append(DiffLine("ctx", line[1:], old_no, new_no))
            old_no, new_no = old_no + 1, new_no + 1
            old_left, new_left = old_left - 1, new_left - 1
        elif line.startswith("\\"):
            current.lines.append(DiffLine("note", line))
        else:
            # "--- a/x", "+++ b/x", "index ...", "Binary files ... differ", mode lines, or a hunk that
            # ended early: shown as they are.
            old_left = new_left = 0
            path = _path_from_header(line)
            if path and (line.startswith("+++ ") or not current.path):
                current.path = path
            current.lines.append(DiffLine("meta", line))
    return files, truncated


class HighlightBudget:
    """How long one page may spend on syntax highlighting; what is left over is shown plain.

    A time budget, not a size one: pygments' lexers are fast on ordinary code but some are quadratic on
    hostile input (JavaScript, Rust, XML and PHP on a long line; any lexer whose patterns cross lines on the
    right text), so no size cap that lets a real diff be highlighted bounds their time. Plain text is always
    a correct rendering, so running out only costs colour.
    """

    def __init__(self, seconds: float = HIGHLIGHT_SECONDS) -> None:
        self.deadline = time.monotonic() + seconds
        self.exhausted = False

    def spent(self) -> bool:
        if not self.exhausted and time.monotonic() >= self.deadline:
            self.exhausted = True
        return self.exhausted


def _lex_within(lexer: Lexer, source: str, budget: HighlightBudget) -> list[tuple[Any, str]] | None:
    """The tokens of ``source``, or None when the budget runs out first (checked between tokens, so one
    token's regex scan, bounded by the segment's length, is the most a page overruns by)."""
    tokens: list[tuple[Any, str]] = []
    for count, token in enumerate(lexer.get_tokens(source)):
        if count % 64 == 0 and budget.spent():
            return None
        tokens.append(token)
    return tokens


def _segments(lines: list[DiffLine]) -> Iterator[list[DiffLine]]:
    """Runs of consecutive code lines short enough to highlight; a long line ends a run (and is shown
    plain), so the lexer never sees it."""
    run: list[DiffLine] = []
    for ln in lines:
        if len(ln.text) > MAX_HIGHLIGHT_LINE:
            if run:
                yield run
            run = []
        else:
            run.append(ln)
    if run:
        yield run


def highlight_file(diff_file: DiffFile, budget: HighlightBudget) -> None:
    """Fill in ``html`` of every line: pygments' markup while the budget lasts, else escaped text."""
    for ln in diff_file.lines:
        ln.html = str(escape(ln.text))
    code_lines = [ln for ln in diff_file.lines if ln.kind in ("add", "del", "ctx")]
    for segment in _segments(code_lines):
        if budget.spent():
            return
        source = "\n".join(ln.text for ln in segment) + "\n"
        tokens = _lex_within(_lexer_for(diff_file.path or "x.txt"), source, budget)
        if tokens is None:
            return
        out = io.StringIO()
        HtmlFormatter(nowrap=True).format(tokens, out)
        html_lines = out.getvalue().split("\n")
        # A lexer that ate or added a line break would shift every later line: keep this run plain.
        if len(html_lines) - 1 == len(segment):
            for ln, html in zip(segment, html_lines, strict=False):
                ln.html = html


_MARKERS = {"add": "+", "del": "-", "ctx": " "}


def render_diff(
    text: str | bytes | None,
    *,
    empty: str = "(empty diff)",
    cited: dict[tuple[str, str, int], list[str]] | None = None,
    highlight_seconds: float = HIGHLIGHT_SECONDS,
) -> SafeString:
    """The diff as HTML: one table per file with old/new line numbers, highlighted by the file's language
    within ``highlight_seconds`` (the rest plain).

    ``cited`` marks lines a judge cited: (path, "new" | "old", line number) -> names (letters only, e.g.
    "primary"), each added as a ``cited-<name>`` class on the line's row.
    """
    if text is None or text == "" or text == b"":
        return format_html('<p class="diff-empty">{}</p>', empty)
    if isinstance(text, bytes):
        # Non-UTF-8 bytes are shown as replacement characters, never guessed at.
        text = text.decode("utf-8", errors="replace")
    files, truncated = parse_for_display(text)
    budget = HighlightBudget(highlight_seconds)
    for diff_file in files:
        highlight_file(diff_file, budget)
    parts: list[str] = ['<div class="diff">']
    if any(len(ln.text) > MAX_HIGHLIGHT_LINE for f in files for ln in f.lines if ln.kind in _MARKERS):
        parts.append(
            f'<p class="diff-plain">Lines over {MAX_HIGHLIGHT_LINE:,} characters are shown without '
            "colours.</p>"
        )
    if budget.exhausted:
        parts.append(
            '<p class="diff-plain">This diff takes too long to colour: part of it is shown plain.</p>'
        )
    for diff_file in files:
        parts.append('<section class="diff-file">')
        if diff_file.path:
            parts.append(str(format_html('<h4 class="diff-path"><code>{}</code></h4>', diff_file.path)))
        parts.append('<table class="diff-table"><tbody>')
        for ln in diff_file.lines:
            old = "" if ln.old_no is None else str(ln.old_no)
            new = "" if ln.new_no is None else str(ln.new_no)
            marker = _MARKERS.get(ln.kind, "")
            row_class = f"diff-{ln.kind}"
            if cited:
                names = cited.get((diff_file.path, "new", ln.new_no or 0), []) + cited.get(
                    (diff_file.path, "old", ln.old_no or 0), []
                )
                row_class += "".join(f" cited cited-{name}" for name in sorted(set(names)) if name.isalpha())
            # ln.html is pygments output (escaped by the formatter) or escape()d text.
            parts.append(
                f'<tr class="{row_class}"><td class="ln">{old}</td><td class="ln">{new}</td>'
                f'<td class="code"><span class="marker">{marker}</span>{ln.html}</td></tr>'
            )
        parts.append("</tbody></table></section>")
    if truncated:
        parts.append('<p class="diff-truncated">The diff is longer than a page shows; the rest is cut.</p>')
    parts.append("</div>")
    return mark_safe("".join(parts))  # every piece above is escaped


def pygments_css() -> str:
    # Only the token rules, scoped to the diff table; pygments' global "pre"/"td.linenos" rules would leak.
    rules = str(HtmlFormatter(style="default").get_style_defs(CSS_SCOPE)).splitlines()  # type: ignore[no-untyped-call]
    return "\n".join(rule for rule in rules if rule.startswith(CSS_SCOPE + " ."))
