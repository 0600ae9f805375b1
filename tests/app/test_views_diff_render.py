"""The diff view and the evidence filter: untrusted text is escaped, line numbers follow the hunks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rubrics_app.diff_render import (
    MAX_DIFF_LINES,
    MAX_HIGHLIGHT_LINE,
    HighlightBudget,
    highlight_file,
    parse_for_display,
    render_diff,
)
from rubrics_app.templatetags.rubrics import evidence
from tests.app.render_helpers import LONG_JS_LINE
from tests.app.worker_helpers import ROOT

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


# --- no input makes a page slow (issue 8 §2; the timings are in benchmarks/app_pages.py) -------------------


def js_diff(*added: str) -> str:
    body = "".join(f"+{line}\n" for line in added)
    return f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1,{len(added)} @@\n{body}"


def test_a_long_line_is_shown_plain_and_the_short_ones_around_it_highlighted() -> None:
    html = render_diff(js_diff("var a = 1; // short", LONG_JS_LINE, "var b = '<b>';"))
    row = next(r for r in html.split("<tr ") if "/*&quot;\\\\/*" in r)
    assert "<span" not in row.split('<span class="marker">+</span>', 1)[1]  # no pygments token markup
    assert LONG_JS_LINE.replace('"', "&quot;") in row  # every character, escaped
    assert f"Lines over {MAX_HIGHLIGHT_LINE:,} characters are shown without colours." in html
    # The lines before and after it are still lexed as JavaScript (each run on its own).
    assert '<span class="c1">// short</span>' in html
    assert "<span class=\"s1\">'&lt;b&gt;'</span>" in html


def test_a_line_at_the_limit_is_still_highlighted() -> None:
    line = "var x = 1; //" + "y" * (MAX_HIGHLIGHT_LINE - 13)
    assert len(line) == MAX_HIGHLIGHT_LINE
    html = render_diff(js_diff(line))
    assert '<span class="c1">//yyy' in html
    assert "shown without colours" not in html


def test_out_of_highlighting_time_the_rest_is_plain_and_the_page_says_so() -> None:
    html = render_diff(HOSTILE, highlight_seconds=0)
    assert '<span class="c1">' not in html  # not one token coloured
    assert "# &lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "This diff takes too long to colour: part of it is shown plain." in html
    files, _ = parse_for_display(HOSTILE)
    # Every line is still there, numbered as before.
    assert html.count("<tr ") == sum(len(f.lines) for f in files)
    assert "takes too long" not in render_diff(HOSTILE)


def test_the_budget_is_shared_by_every_file_of_the_diff() -> None:
    budget = HighlightBudget(seconds=60)
    first, second = parse_for_display(HOSTILE)[0]
    highlight_file(first, budget)
    assert any("<span" in ln.html for ln in first.lines)
    budget.deadline = 0  # spent on the first file
    highlight_file(second, budget)
    assert budget.exhausted
    assert [ln.html for ln in second.lines if ln.kind == "add"] == ["int b;", "int c;"]


# The other input: 100 KB of letters in a blocker's evidence (the old pattern took 33 s).
@pytest.mark.parametrize(
    "text",
    [
        "a" * 100_000,
        "http://." * 12_500,  # a URL start on every 8th character of one run
        "a:1:" * 25_000,  # a reference on every 4th
        "a/" * 50_000 + ":x",  # one path run that is not a reference after all
    ],
)
def test_evidence_of_100_kb_is_shown_whole_and_escaped(text: str) -> None:
    html = evidence(text + " <b>")
    assert html.endswith(" &lt;b&gt;")
    assert len(html) >= len(text)


def test_evidence_keeps_its_meaning_with_the_linear_pattern() -> None:
    html = evidence("(see a.py:3-9), http://x.org/p?q=1). x.c:12a https://... 12:30 b/c:4/")
    assert '(see <code class="ref">a.py:3-9</code>), ' in html
    assert '<a href="http://x.org/p?q=1" rel="noopener noreferrer nofollow">http://x.org/p?q=1</a>). ' in html
    assert "x.c:12a" in html and "x.c:12a</code>" not in html  # not a line number
    assert "https://..." in html and 'href="https://' not in html  # a scheme and punctuation only
    assert "12:30" in html and "12:30</code>" not in html  # a time, not a file
    assert "b/c:4/" in html and "b/c:4</code>" not in html


# A fresh process that renders the first diff it sees, on a clock that stands still except while a module is
# imported (each import costs it a second): only loading can spend the budget, never the machine's speed.
COLD_START = """
import importlib.abc
import sys
import time

clock = [0.0]


class SlowImports(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        clock[0] += 1.0
        return None


time.monotonic = lambda: clock[0]
sys.meta_path.insert(0, SlowImports())

from rubrics_app.diff_render import HIGHLIGHT_SECONDS, render_diff

before = clock[0]
html = render_diff(sys.stdin.read())
assert HIGHLIGHT_SECONDS == 0.3
print("imported while rendering:", clock[0] > before)
print(html)
"""

SMALL_DIFF = """diff --git a/shapes/area.py b/shapes/area.py
--- a/shapes/area.py
+++ b/shapes/area.py
@@ -1,2 +1,3 @@
 def area(points):
-    return signed_area(points)
+    # The absolute value: either orientation.
+    return abs(signed_area(points))
"""


def test_the_first_diff_after_a_cold_start_is_coloured_whatever_loading_the_highlighter_costs() -> None:
    command = [sys.executable, "-c", COLD_START]
    done = subprocess.run(command, input=SMALL_DIFF, capture_output=True, text=True, check=True, cwd=ROOT)
    # The page's renderer loaded the Python lexer (and so imported modules) after it was called...
    assert done.stdout.startswith("imported while rendering: True\n")
    # ...and that start-up, seconds on this clock against a budget of 0.3, did not count.
    assert "takes too long to colour" not in done.stdout
    assert '<span class="c1"># The absolute value: either orientation.</span>' in done.stdout
    assert '<span class="k">return</span>' in done.stdout
