from __future__ import annotations

import pytest

from grading.judge.models import Location
from grading.judge.runner import index_diff, reason_contradicts


@pytest.mark.parametrize(
    ("verdict", "reason", "flagged"),
    [
        ("pass", "The change does not satisfy the criterion.", True),
        ("pass", "It violates the sign convention.", True),
        ("pass", "signed_area fails to keep its sign; this should fail.", True),
        ("pass", "The change doesn't handle Polygon.area.", True),
        ("pass", "The change satisfies the criterion.", False),
        ("pass", "It does not break the public API.", False),  # a negated negative argues pass
        ("pass", "Nothing is missing: both paths are covered.", False),
        ("pass", "polygon_area returns abs(signed_area(points)).", False),  # no cue either way
        ("pass", "The first attempt missed Polygon.area, but the change covers it now.", False),  # mixed
        ("fail", "The change correctly meets the criterion.", True),
        ("fail", "It satisfies B1 and complies with the convention.", True),
        ("fail", "The change does not correctly handle clockwise input.", False),
        ("fail", "It breaks centroid for clockwise polygons.", False),
        ("fail", "It handles float but does not handle double.", False),  # mixed: not flagged
        ("fail", "CHANGELOG.md is untouched.", False),
        ("fail", "The fix isn\u2019t correct for clockwise vertices.", False),
    ],
)
def test_a_reason_arguing_only_the_other_way_is_flagged(verdict: str, reason: str, flagged: bool) -> None:
    assert reason_contradicts(verdict, reason) is flagged  # type: ignore[arg-type]


DIFF = """\
diff --git a/src/a.py b/src/a.py
index 1111111..2222222 100644
--- a/src/a.py
+++ b/src/a.py
@@ -10,4 +10,5 @@ def f():
     one
-    two
+    TWO
+    three
     four

@@ -30 +31 @@
-old
+new
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 3333333..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-+++ b/not-a-header
diff --git "a/caf\\303\\251 x.txt" "b/caf\\303\\251 x.txt"
new file mode 100644
--- /dev/null
+++ "b/caf\\303\\251 x.txt"
@@ -0,0 +1 @@
+--- a/fake
\\ No newline at end of file
"""


def test_the_index_knows_each_side_of_each_hunk() -> None:
    index = index_diff(DIFF)
    assert index.new_lines["src/a.py"] == {10, 11, 12, 13, 14, 31}
    assert index.old_lines["src/a.py"] == {10, 11, 12, 13, 30}
    assert index.old_lines["gone.txt"] == {1, 2}
    assert "gone.txt" not in index.new_lines
    assert index.new_lines["caf\u00e9 x.txt"] == {1}
    # diff-like text inside a hunk is content, not a header
    assert "not-a-header" not in index.files() and "fake" not in index.files()
    assert index.has(Location(file="src/a.py", line=12, side="new"))
    assert not index.has(Location(file="src/a.py", line=14, side="old"))
    assert index.has(Location(file="a/gone.txt", line=2, side="old"))
    assert not index.has(Location(file="gone.txt", line=1, side="new"))


def test_the_index_survives_garbage() -> None:
    index = index_diff("@@ -1,3 +1,3 @@\n+x\n@@ nonsense\n--- \n+++ \n")
    assert index.files() == []
    assert index_diff("").files() == []
