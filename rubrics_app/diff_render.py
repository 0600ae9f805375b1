"""A unified diff as a readable, syntax-highlighted HTML table.

Diff text is untrusted (an agent or a drafter wrote every byte), so every character of it reaches the page
through pygments' HTML formatter or ``escape``; nothing from the diff is ever marked safe unescaped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

# A diff beyond these is cut, with a note: a page must stay readable (and fast) whatever the agent wrote.
MAX_DIFF_CHARS = 400_000
MAX_DIFF_LINES = 8_000

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
    for diff_file in files:
        _highlight(diff_file)
    return files, truncated


def _highlight(diff_file: DiffFile) -> None:
    code_lines = [ln for ln in diff_file.lines if ln.kind in ("add", "del", "ctx")]
    if code_lines:
        source = "\n".join(ln.text for ln in code_lines) + "\n"
        formatted = highlight(source, _lexer_for(diff_file.path or "x.txt"), HtmlFormatter(nowrap=True))
        html_lines = formatted.split("\n")
        for ln, html in zip(code_lines, html_lines, strict=False):
            ln.html = html
        # A lexer that ate or added a line break would shift every later line: fall back to plain text.
        if len(html_lines) - 1 != len(code_lines):
            for ln in code_lines:
                ln.html = str(escape(ln.text))
    for ln in diff_file.lines:
        if ln.kind not in ("add", "del", "ctx"):
            ln.html = str(escape(ln.text))


_MARKERS = {"add": "+", "del": "-", "ctx": " "}


def render_diff(text: str | bytes | None, *, empty: str = "(empty diff)") -> SafeString:
    """The diff as HTML: one table per file with old/new line numbers, highlighted by the file's language."""
    if text is None or text == "" or text == b"":
        return format_html('<p class="diff-empty">{}</p>', empty)
    if isinstance(text, bytes):
        # Non-UTF-8 bytes are shown as replacement characters, never guessed at.
        text = text.decode("utf-8", errors="replace")
    files, truncated = parse_for_display(text)
    parts: list[str] = ['<div class="diff">']
    for index, diff_file in enumerate(files):
        parts.append('<section class="diff-file">')
        if diff_file.path:
            parts.append(str(format_html('<h4 class="diff-path"><code>{}</code></h4>', diff_file.path)))
        parts.append('<table class="diff-table"><tbody>')
        for ln in diff_file.lines:
            old = "" if ln.old_no is None else str(ln.old_no)
            new = "" if ln.new_no is None else str(ln.new_no)
            marker = _MARKERS.get(ln.kind, "")
            # An anchor per line (file index, side, number), where a judge's cited line links to.
            anchor = line_anchor(index, "new", ln.new_no) if ln.new_no is not None else ""
            if not anchor and ln.old_no is not None:
                anchor = line_anchor(index, "old", ln.old_no)
            row_id = f' id="{anchor}"' if anchor else ""
            # ln.html is pygments output (escaped by the formatter) or escape()d text.
            parts.append(
                f'<tr class="diff-{ln.kind}"{row_id}><td class="ln">{old}</td><td class="ln">{new}</td>'
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
