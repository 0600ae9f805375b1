from __future__ import annotations

import pytest

from grading.judge.models import Location
from grading.judge.replies import finding_disagrees, index_diff


@pytest.mark.parametrize(
    ("verdict", "finding", "disagrees"),
    [("pass", "satisfied", False), ("fail", "violated", False), ("pass", "violated", True),
     ("fail", "satisfied", True)],
)  # fmt: skip
def test_a_verdict_disagreeing_with_its_own_finding_is_flagged(
    verdict: str, finding: str, disagrees: bool
) -> None:
    assert finding_disagrees(verdict, finding) is disagrees  # type: ignore[arg-type]


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
