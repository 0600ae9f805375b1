"""The diff view and the evidence filter: untrusted text is escaped, line numbers follow the hunks."""

from __future__ import annotations

from rubrics_app.diff_render import MAX_DIFF_LINES, parse_for_display, render_diff
from rubrics_app.templatetags.rubrics import evidence

HOSTILE = """diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -10,3 +10,3 @@ def f():
 x = 1
-y = "<script>alert(1)</script>"
+y = 2  # </td></tr></table><img src=x onerror=alert(1)>
 return x
--- a/lib.c
+++ b/lib.c
@@ -1 +1,2 @@
--- int a;
+int b;
+int c;
"""


def test_it_escapes_every_line_of_the_diff() -> None:
    html = render_diff(HOSTILE)
    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_it_numbers_lines_from_the_hunk_header() -> None:
    files, truncated = parse_for_display(HOSTILE)
    assert not truncated
    assert [f.path for f in files] == ["src/app.py", "lib.c"]
    app = [(ln.kind, ln.old_no, ln.new_no) for ln in files[0].lines if ln.kind in ("add", "del", "ctx")]
    assert app == [("ctx", 10, 10), ("del", 11, None), ("add", None, 11), ("ctx", 12, 12)]
    # "--- int a;" inside a hunk is a removed line "-- int a;", not a new file header.
    lib = [(ln.kind, ln.text) for ln in files[1].lines if ln.kind in ("add", "del", "ctx")]
    assert lib == [("del", "-- int a;"), ("add", "int b;"), ("add", "int c;")]


def test_it_highlights_by_the_language_of_the_file() -> None:
    html = render_diff(HOSTILE)
    # pygments' Python lexer marks the comment token; a plain-text fallback would not.
    assert '<span class="c1"># &lt;/td&gt;' in html


def test_it_cuts_a_huge_diff_and_says_so() -> None:
    lines = "".join(f"+line {i}\n" for i in range(MAX_DIFF_LINES + 50))
    text = f"--- a/x.txt\n+++ b/x.txt\n@@ -0,0 +1,{MAX_DIFF_LINES + 50} @@\n{lines}"
    html = render_diff(text)
    assert "the rest is cut" in html
    assert f"line {MAX_DIFF_LINES + 10}" not in html


def test_it_shows_non_utf8_bytes_as_replacement_characters() -> None:
    html = render_diff(b"--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-caf\xe9\n+cafe\n")
    assert "caf\ufffd" in html


def test_it_says_when_a_diff_is_empty() -> None:
    assert "(empty diff)" in render_diff("")


def test_evidence_links_urls_and_marks_path_line_as_code() -> None:
    html = evidence('Review: https://github.com/o/r/pull/7#r1. Also src/x.cpp:120 and "<b>bold</b>" at 10:30')
    assert '<a href="https://github.com/o/r/pull/7#r1" rel="noopener noreferrer nofollow">' in html
    assert '<code class="ref">src/x.cpp:120</code>' in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "10:30" in html and '<code class="ref">10:30' not in html


def test_evidence_does_not_link_other_schemes() -> None:
    html = evidence("javascript:alert(1) data:text/html,<x>")
    assert "<a " not in html
    assert "&lt;x&gt;" in html
