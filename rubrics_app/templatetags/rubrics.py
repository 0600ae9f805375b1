"""Template filters for rubric pages: evidence with its links and ``path:line`` references, and diffs."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from rubrics_app.diff_render import render_diff

register = template.Library()

# Evidence cites a review comment (an http(s) URL), a guidance line or a line of the base source
# (`path:line`, optionally `path:line-line`). Anything else stays plain text.
_EVIDENCE_TOKEN = re.compile(
    r"(?P<url>https?://[^\s<>\"'`]+[^\s<>\"'`.,;:)\]])"
    r"|(?<![\w/.:-])(?P<ref>[\w./-]*[A-Za-z_][\w./-]*:\d+(?:-\d+)?)(?![\w/])"
)


@register.filter(is_safe=True)
def evidence(value: str | None) -> SafeString:
    """Escaped evidence text with http(s) URLs as links and ``path:line`` as code."""
    if not value:
        return mark_safe("")
    parts: list[str] = []
    last = 0
    for match in _EVIDENCE_TOKEN.finditer(value):
        parts.append(str(escape(value[last : match.start()])))
        if match.group("url"):
            url = match.group("url")
            parts.append(str(format_html('<a href="{}" rel="noopener noreferrer nofollow">{}</a>', url, url)))
        else:
            parts.append(str(format_html('<code class="ref">{}</code>', match.group("ref"))))
        last = match.end()
    parts.append(str(escape(value[last:])))
    return mark_safe("".join(parts))  # every piece is escaped above


@register.filter(is_safe=True)
def diff(value: str | bytes | memoryview | None) -> SafeString:
    # A BinaryField reads back as memoryview on PostgreSQL and bytes on SQLite.
    return render_diff(bytes(value) if isinstance(value, memoryview) else value)


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
