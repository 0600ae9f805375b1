"""A unified diff as a readable, syntax-highlighted HTML table.

Diff text is untrusted (an agent or a drafter wrote every byte), so every character of it reaches the page
through pygments' HTML formatter or ``escape``; nothing from the diff is ever marked safe unescaped.
"""

from __future__ import annotations

import functools
import io
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

from grading import read_diff

# A diff beyond these is cut, with a note: a page must stay readable (and fast) whatever the agent wrote.
MAX_DIFF_CHARS = 400_000
MAX_DIFF_LINES = 8_000
# Longer lines are shown plain (minified code, generated data): no lexer ever sees them.
MAX_HIGHLIGHT_LINE = 1_000
# What one page may spend on syntax highlighting (HighlightBudget).
HIGHLIGHT_SECONDS = 0.3

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


# The lexer classes this process has made a lexer of (see _lexer_for).
_loaded_lexers: set[type[Lexer]] = set()


def _lexer_for(path: str, budget: HighlightBudget) -> Lexer:
    """The lexer of ``path``'s language (plain text for a name pygments does not know).

    The first time a lexer class is asked for in a process, pygments imports its module and compiles its
    patterns: that start-up is given back to ``budget`` (it is not highlighting, and it made the first diff
    opened after a start "take too long to colour"). It happens once per class and process, so what a page
    can spend beyond its budget this way is bounded by the lexers pygments has; finding the lexer of a file
    name, every time after, counts.
    """
    started = time.monotonic()
    lexer: Lexer
    try:
        lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    if type(lexer) not in _loaded_lexers:
        _loaded_lexers.add(type(lexer))
        budget.give_back(time.monotonic() - started)
    return lexer


@functools.cache
def _formatter() -> HtmlFormatter[str]:
    """The one HTML formatter (its style is imported when it is made: once, before any budget starts)."""
    return HtmlFormatter(nowrap=True)


def parse_for_display(text: str) -> tuple[list[DiffFile], bool]:
    """Split a diff into files and numbered lines. Returns (files, truncated).

    Files, paths and hunks come from grading.diffs (the parser scope and the judge use), read leniently:
    this is for reading, not grading, so what that parser cannot read (and a diff cut for length) is
    still shown line by line rather than hidden behind an error.
    """
    truncated = False
    if len(text) > MAX_DIFF_CHARS:
        text, truncated = text[:MAX_DIFF_CHARS], True
    raw_lines = text.split("\n")
    if len(raw_lines) > MAX_DIFF_LINES:
        raw_lines, truncated = raw_lines[:MAX_DIFF_LINES], True
    parsed = read_diff("\n".join(raw_lines), strict=False)
    lines = parsed.lines
    files: list[DiffFile] = []

    def shown_as_is(start: int, end: int) -> None:
        # Header lines ("index ...", "Binary files ... differ"), text between files, and the unparsed rest.
        if start < end and not files:
            files.append(DiffFile(path=""))
        for index in range(start, end):
            kind = "note" if lines[index].startswith("\\") else "meta"
            files[-1].lines.append(DiffLine(kind, lines[index]))

    done = 0
    for parsed_file in parsed.files:
        shown_as_is(done, parsed_file.first_line)
        change = parsed_file.change
        current = DiffFile(path=change.new_path or change.old_path or "")
        files.append(current)
        position = parsed_file.first_line
        for hunk in parsed_file.hunks:
            shown_as_is(position, hunk.header_line)
            current.has_hunk = True
            current.lines.append(DiffLine("hunk", lines[hunk.header_line]))
            for kind, old_no, new_no, index in parsed.hunk_lines(hunk):
                line = lines[index]
                current.lines.append(
                    DiffLine(kind, line) if kind == "note" else DiffLine(kind, line[1:], old_no, new_no)
                )
            position = hunk.end_line
        shown_as_is(position, parsed_file.end_line)
        done = parsed_file.end_line
    shown_as_is(done, len(lines))
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

    def give_back(self, seconds: float) -> None:
        """Move the deadline by ``seconds`` spent on something other than highlighting (loading a lexer)."""
        self.deadline += seconds

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
        tokens = _lex_within(_lexer_for(diff_file.path or "x.txt", budget), source, budget)
        if tokens is None:
            return
        out = io.StringIO()
        _formatter().format(tokens, out)
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
    highlight_seconds: float | None = None,
) -> SafeString:
    """The diff as HTML: one table per file with old/new line numbers, highlighted by the file's language
    within ``highlight_seconds`` (the rest plain; by default :data:`HIGHLIGHT_SECONDS`, read at each call).

    ``cited`` marks lines a judge cited: (path, "new" | "old", line number) -> names (letters only, e.g.
    "primary"), each added as a ``cited-<name>`` class on the line's row.
    """
    if text is None or text == "" or text == b"":
        return format_html('<p class="diff-empty">{}</p>', empty)
    if isinstance(text, bytes):
        # Non-UTF-8 bytes are shown as replacement characters, never guessed at.
        text = text.decode("utf-8", errors="replace")
    files, truncated = parse_for_display(text)
    _formatter()  # made before the clock starts: its first making imports the style
    budget = HighlightBudget(HIGHLIGHT_SECONDS if highlight_seconds is None else highlight_seconds)
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
    for index, diff_file in enumerate(files):
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
            # An anchor per line (file index, side, number), where a judge's cited line links to.
            anchor = line_anchor(index, "new", ln.new_no) if ln.new_no is not None else ""
            if not anchor and ln.old_no is not None:
                anchor = line_anchor(index, "old", ln.old_no)
            row_id = f' id="{anchor}"' if anchor else ""
            # ln.html is pygments output (escaped by the formatter) or escape()d text.
            parts.append(
                f'<tr class="{row_class}"{row_id}><td class="ln">{old}</td><td class="ln">{new}</td>'
                f'<td class="code"><span class="marker">{marker}</span>{ln.html}</td></tr>'
            )
        parts.append("</tbody></table></section>")
    if truncated:
        parts.append('<p class="diff-truncated">The diff is longer than a page shows; the rest is cut.</p>')
    parts.append("</div>")
    return mark_safe("".join(parts))  # every piece above is escaped


def line_anchor(file_index: int, side: str, number: int) -> str:
    """The id of a diff line in :func:`render_diff`'s table (digits and letters only: safe in HTML)."""
    return f"d{file_index}-{'n' if side == 'new' else 'o'}{number}"


def pygments_css() -> str:
    # Only the token rules, scoped to the diff table; pygments' global "pre"/"td.linenos" rules would leak.
    rules = str(HtmlFormatter(style="default").get_style_defs(CSS_SCOPE)).splitlines()  # type: ignore[no-untyped-call]
    return "\n".join(rule for rule in rules if rule.startswith(CSS_SCOPE + " ."))
