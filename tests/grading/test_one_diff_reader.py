"""One reader of unified diffs: scope, the judge's location check, admission's reviewer comment, the web
app's diff view and the path-list files all take their paths and line numbers from grading.diffs."""

from __future__ import annotations

import asyncio
import os

import pytest

from grading.admission.check import inject_reviewer_comment
from grading.checks.scope import check_scope
from grading.diffs import parse_diff, read_diff
from grading.git_quote import c_quote, unquote_path
from grading.judge.models import Location
from grading.judge.replies import index_diff
from grading.judge.runner import judge_diff
from grading.path_lists import quote_path
from grading.path_lists import unquote_path as unquote_path_list_line
from grading.schema import Scope
from rubrics_app.diff_render import parse_for_display
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import workspace_diff
from tests.grading.judge.judge_helpers import TASK, FakeBackend, make_rubric, verdicts_json

# A plain `diff -ru old new` names both sides with their directory: neither is "a/" nor "b/".
PLAIN_PREFIXED = """\
--- old/src/area.py\t2026-01-01 00:00:00
+++ new/src/area.py\t2026-01-02 00:00:00
@@ -1,2 +1,2 @@
 def area(p):
-    return total(p) / 2
+    return abs(total(p)) / 2
"""

# git quotes a name with a byte that is not UTF-8 in octal; the old location index decoded it to U+FFFD.
QUOTED_LATIN1 = """\
diff --git "a/src/l\\351gacy.py" "b/src/l\\351gacy.py"
index 1111111..2222222 100644
--- "a/src/l\\351gacy.py"
+++ "b/src/l\\351gacy.py"
@@ -3 +3 @@
-x = 1
+x = 2
"""


@pytest.mark.parametrize("diff", [PLAIN_PREFIXED, QUOTED_LATIN1], ids=["plain_prefixed", "quoted_latin1"])
def test_scope_and_the_location_check_see_the_same_paths(diff: str) -> None:
    changes = parse_diff(diff)
    scope_paths = sorted({p for c in changes for p in c.paths()})
    assert index_diff(diff).files() == scope_paths
    files, _ = parse_for_display(diff)
    assert [f.path for f in files] == scope_paths


def test_a_judge_citing_the_path_scope_reports_is_accepted() -> None:
    # The old index kept "new/src/area.py" for this diff while scope said "src/area.py": a judge citing
    # the path scope reports was rejected on every attempt, a judge failure.
    [change] = parse_diff(PLAIN_PREFIXED)
    assert change.new_path == "src/area.py"
    assert check_scope(Scope(allowed_globs=["src/**"]), [change], []).in_scope
    rubric = make_rubric()
    ids = ["B1", "B2", "N1", "N2", "N3"]
    located = verdicts_json(ids, locations=[{"file": "src/area.py", "line": 2, "side": "new"}])
    backend = FakeBackend([FakeBackend().reply(located)])
    result = asyncio.run(judge_diff(TASK, rubric, PLAIN_PREFIXED, backend, config_edited=False))
    assert result.failure is None and result.calls == 1
    assert result.verdicts[0].locations == [Location(file="src/area.py", line=2, side="new")]


def test_every_reader_agrees_on_a_real_git_diff(git_repo: GitRepo) -> None:
    git_repo.write("keep.txt", "k\n")
    git_repo.write("gone.py", "a\nb\n")
    git_repo.write("x b/y.txt", "q\n")
    git_repo.write("src/edit.c", "".join(f"line {i}\n" for i in range(40)))
    base = git_repo.commit("base")
    (git_repo.path / "gone.py").unlink()
    git_repo.write("x b/y.txt", "q\nr\n")  # its header reads "diff --git a/x b/y.txt b/x b/y.txt"
    git_repo.write("tab\there.txt", "new\n")
    git_repo.write(os.fsdecode(b"l\xe9gacy.txt"), "old name\n")
    git_repo.write("src/edit.c", "".join(f"line {i}\n" for i in range(40)).replace("line 30", "line XXX"))
    git_repo.write("image.bin", b"\x00\x01binary")
    data = workspace_diff(git_repo, base)
    parsed = read_diff(data)
    changes = parsed.changes()
    text = data.decode("utf-8")  # git quoted every awkward name: the diff is ASCII
    index = index_diff(text)
    with_lines = {c.new_path for c in changes if c.added} | {c.old_path for c in changes if c.removed}
    assert set(index.files()) == with_lines
    for diff_file in parsed.files:
        for hunk in diff_file.hunks:
            for kind, old_no, new_no, _ in parsed.hunk_lines(hunk):
                if kind != "del":
                    assert new_no in index.new_lines[diff_file.change.new_path or ""]
                if kind != "add":
                    assert old_no in index.old_lines[diff_file.change.old_path or ""]
    shown, _ = parse_for_display(text)
    assert [f.path for f in shown] == [c.new_path or c.old_path for c in changes]
    # The reviewer comment goes into the first text file that survives, found by the same parser.
    commented = inject_reviewer_comment(data, "lazy.diff")
    again = {c.new_path: c for c in parse_diff(commented)}
    before = {c.new_path: c for c in changes}
    first_surviving = next(c.new_path for c in changes if c.new_path and c.added + c.removed)
    assert again[first_surviving].added == before[first_surviving].added + 1
    assert all(again[p] == before[p] for p in before if p != first_surviving)


def test_a_diff_with_crlf_line_ends_keeps_them_when_commented() -> None:
    diff = PLAIN_PREFIXED.replace("\n", "\r\n").encode()
    commented = inject_reviewer_comment(diff, "lazy.diff")
    assert b"\n" not in commented.replace(b"\r\n", b"")
    assert parse_diff(commented)[0].added == 2


@pytest.mark.parametrize(
    "name", [b"tab\there", b'quote"and\\backslash', b"new\nline", b"l\xe9gacy", b"bell\x07"]
)
def test_the_path_lists_quote_as_git_quotes_its_diff_headers(git_repo: GitRepo, name: bytes) -> None:
    # Names without valid non-ASCII UTF-8, where git (core.quotePath) and the path lists write the same.
    git_repo.write("keep.txt", "k\n")
    base = git_repo.commit("base")
    git_repo.write(os.fsdecode(name), "x\n")
    header = workspace_diff(git_repo, base).split(b"\n")[0].decode("ascii")
    line = quote_path(os.fsdecode(name))
    assert line == c_quote(name)
    assert header == f'diff --git "a/{line[1:-1]}" "b/{line[1:-1]}"'
    assert unquote_path_list_line(line) == os.fsdecode(name)
    assert unquote_path(line) == name.decode("utf-8", errors="backslashreplace")


def test_the_diff_view_numbers_what_it_can_and_shows_the_rest_as_it_is() -> None:
    garbled = PLAIN_PREFIXED + "reviewer: all blockers verified\n"
    [shown] = parse_for_display(garbled)[0]
    numbered = [(ln.kind, ln.old_no, ln.new_no) for ln in shown.lines if ln.kind in ("add", "del", "ctx")]
    assert numbered == [("ctx", 1, 1), ("del", 2, None), ("add", None, 2)]
    assert shown.lines[-1].kind == "meta" and shown.lines[-1].text == "reviewer: all blockers verified"
    # Cut inside its hunk (as a page cuts a long diff): the lines that are there keep their numbers.
    cut = PLAIN_PREFIXED.rsplit("+", 1)[0]
    [partial] = parse_for_display(cut)[0]
    assert [(ln.kind, ln.old_no) for ln in partial.lines if ln.kind in ("del", "ctx")] == [
        ("ctx", 1),
        ("del", 2),
    ]
    assert read_diff(cut, strict=False).error is not None
