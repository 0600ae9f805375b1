"""Template filters for rubric pages: evidence with its links and ``path:line`` references, diffs, and
judges' names."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from rubrics_app.diff_render import render_diff
from rubrics_app.models import JudgeSetting

register = template.Library()

# Evidence cites a review comment (an http(s) URL), a guidance line or a line of the base source
# (`path:line`, optionally `path:line-line`). Anything else stays plain text.
#
# Linear time whatever the text (a maintainer or an imported rubric may put 100 KB of letters there: the
# backtracking pattern this replaces took 33 s on it). Possessive quantifiers never give back what they took,
# and a reference may only start where a run of path characters starts (the lookbehind), so each character is
# scanned a bounded number of times. A URL takes the whole run of non-space characters; the closing
# punctuation of the sentence is given back to the text afterwards, in _url_end.
_EVIDENCE_TOKEN = re.compile(
    r"(?P<url>https?://[^\s<>\"'`]++)"
    r"|(?<![\w/.:-])(?P<ref>[\w./-]++:\d++(?:-\d++)?)(?![\w/])"
)
_URL_TRAILING = ".,;:)]"
_HAS_LETTER = re.compile(r"[A-Za-z_]")


def _url_end(url: str) -> int:
    """Where a URL taken from running text ends: not on the sentence's closing punctuation."""
    return len(url.rstrip(_URL_TRAILING))


@register.filter(is_safe=True)
def evidence(value: str | None) -> SafeString:
    """Escaped evidence text with http(s) URLs as links and ``path:line`` as code."""
    if not value:
        return mark_safe("")
    parts: list[str] = []
    last = 0
    for match in _EVIDENCE_TOKEN.finditer(value):
        if match.group("url"):
            url = match.group("url")
            url = url[: _url_end(url)]
            if url.endswith("://"):
                continue  # a scheme and nothing after it: plain text
            parts.append(str(escape(value[last : match.start()])))
            parts.append(str(format_html('<a href="{}" rel="noopener noreferrer nofollow">{}</a>', url, url)))
            last = match.start() + len(url)
        else:
            ref = match.group("ref")
            if not _HAS_LETTER.search(ref):
                continue  # "10:30" is a time, not a file
            parts.append(str(escape(value[last : match.start()])))
            parts.append(str(format_html('<code class="ref">{}</code>', ref)))
            last = match.end()
    parts.append(str(escape(value[last:])))
    return mark_safe("".join(parts))  # every piece is escaped above


@register.filter(is_safe=True)
def diff(value: str | bytes | memoryview | None) -> SafeString:
    # A BinaryField reads back as memoryview on PostgreSQL and bytes on SQLite.
    return render_diff(bytes(value) if isinstance(value, memoryview) else value)


@register.filter
def judge_name(spec: str | None) -> str:
    """A judge spec as a list names it: the model id, or "scripted" (the full spec goes in a title)."""
    return JudgeSetting.judge_name(spec or "")


@register.filter
def lookup(mapping: object, key: object) -> object:
    """``mapping|lookup:key`` for a key held in a variable (validation errors by field name)."""
    if isinstance(mapping, dict):
        return mapping.get(key, ())
    return ()


@register.filter
def bytes_text(value: bytes | memoryview | None) -> str:
    """Stored file bytes as text for a page (autoescaped there); non-UTF-8 bytes become replacement marks."""
    return bytes(value or b"").decode("utf-8", errors="replace")
