"""Admission (§5): the reviewer-comment injection on real git diffs, and the row table."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from grading.admission import REVIEWER_COMMENT, comment_syntax, evaluate_row, inject_reviewer_comment
from grading.errors import InputError
from grading.outcome import RubricAssessment
from tests.gitrepo import GitRepo

BASE_FILES = {
    "src/area.py": "def area(points):\n    total = 0\n    for a, b in zip(points, points[1:]):\n"
    "        total += a[0] * b[1] - b[0] * a[1]\n    return total / 2\n",
    "src/area.c": "int area(void) {\n    return 1;\n}\n",
    "docs/README.md": "# Area\n\nComputes areas.\n",
    "db/schema.sql": "-- schema\nCREATE TABLE t (a INT);\n-- end\n",
    "old.txt": "one\ntwo\n",
}


def diff_of(repo: GitRepo) -> bytes:
    repo.git("add", "-A")
    out = subprocess.run(
        ["git", "diff", "--cached", "--no-renames", "--binary", "HEAD"],
        cwd=repo.path,
        capture_output=True,
        check=True,
    )
    return out.stdout


def applies(repo: GitRepo, diff: bytes, tmp: Path) -> None:
    """The diff applies cleanly on the base commit (git checks the hunk counts)."""
    repo.git("reset", "-q", "--hard", "HEAD")
    patch = tmp / "patch.diff"
    patch.write_bytes(diff)
    repo.git("apply", "--check", str(patch))
    repo.git("apply", str(patch))


@pytest.fixture
def base(git_repo: GitRepo) -> GitRepo:
    for rel, text in BASE_FILES.items():
        git_repo.write(rel, text)
    git_repo.commit("base")
    return git_repo


@pytest.mark.parametrize(
    ("rel", "new_text", "expected_line"),
    [
        (
            "src/area.py",
            BASE_FILES["src/area.py"].replace("return total / 2", "return abs(total) / 2"),
            f"    # {REVIEWER_COMMENT}",
        ),
        ("src/area.c", "int area(void) {\n    return 2;\n}\n", f"    // {REVIEWER_COMMENT}"),
        ("docs/README.md", "# Area\n\nComputes signed areas.\n", f"<!-- {REVIEWER_COMMENT} -->"),
        ("db/schema.sql", "-- schema\nCREATE TABLE t (a BIGINT);\n-- end\n", f"-- {REVIEWER_COMMENT}"),
    ],
)
def test_it_adds_the_comment_in_the_files_syntax_and_the_diff_still_applies(
    base: GitRepo, tmp_path: Path, rel: str, new_text: str, expected_line: str
) -> None:
    base.write(rel, new_text)
    injected = inject_reviewer_comment(diff_of(base), "lazy.diff")
    applies(base, injected, tmp_path)
    lines = (base.path / rel).read_text().splitlines()
    assert expected_line in lines
    # Placed right before the first added line, the rest of the change intact.
    assert lines == [*new_text.splitlines()[: lines.index(expected_line)], expected_line,
                     *new_text.splitlines()[lines.index(expected_line):]]  # fmt: skip


def test_it_skips_deleted_and_binary_files_and_uses_the_first_surviving_one(
    base: GitRepo, tmp_path: Path
) -> None:
    (base.path / "old.txt").unlink()
    base.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x01\x02")
    base.write("src/area.c", "int area(void) {\n    return 3;\n}\n")
    injected = inject_reviewer_comment(diff_of(base), "lazy.diff")
    applies(base, injected, tmp_path)
    assert f"// {REVIEWER_COMMENT}" in (base.path / "src/area.c").read_text()
    assert not (base.path / "old.txt").exists()


def test_removed_lines_that_look_like_file_headers_are_hunk_body(base: GitRepo, tmp_path: Path) -> None:
    # Deleting schema.sql gives body lines "--- schema" and "--- end"; the hunk counts, not the look,
    # end the body, so they are not taken for the next file's header.
    (base.path / "db/schema.sql").unlink()
    base.write("src/area.c", "int area(void) {\n}\n")
    diff = diff_of(base)
    assert b"\n--- schema\n" in diff
    injected = inject_reviewer_comment(diff, "lazy.diff")
    applies(base, injected, tmp_path)
    assert not (base.path / "db/schema.sql").exists()
    # A removal-only hunk: the comment goes right before the first removed line.
    assert (base.path / "src/area.c").read_text() == f"int area(void) {{\n    // {REVIEWER_COMMENT}\n}}\n"


def test_a_new_file_and_a_file_emptied_entirely(base: GitRepo, tmp_path: Path) -> None:
    base.write("old.txt", "")
    emptied = inject_reviewer_comment(diff_of(base), "lazy.diff")
    assert b"@@ -1,2 +1,1 @@" in emptied
    applies(base, emptied, tmp_path)
    assert (base.path / "old.txt").read_text() == f"# {REVIEWER_COMMENT}\n"

    base.git("reset", "-q", "--hard", "HEAD")
    base.write("src/new.rs", "fn main() {}\n")
    added = inject_reviewer_comment(diff_of(base), "lazy.diff")
    assert b"@@ -0,0 +1,2 @@" in added
    applies(base, added, tmp_path)
    assert (base.path / "src/new.rs").read_text() == f"// {REVIEWER_COMMENT}\nfn main() {{}}\n"


def test_no_newline_at_end_of_file(base: GitRepo, tmp_path: Path) -> None:
    base.write("src/area.c", "int area(void) {\n    return 5;\n}")
    injected = inject_reviewer_comment(diff_of(base), "lazy.diff")
    assert b"\\ No newline at end of file" in injected
    applies(base, injected, tmp_path)
    assert (base.path / "src/area.c").read_text().endswith("return 5;\n}")


def test_a_diff_with_nothing_to_carry_the_comment_is_an_input_error(base: GitRepo) -> None:
    (base.path / "old.txt").unlink()
    base.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00")
    with pytest.raises(InputError, match="no text hunk") as err:
        inject_reviewer_comment(diff_of(base), "calib/lazy.diff")
    assert err.value.file == "calib/lazy.diff"
    with pytest.raises(InputError, match="no text hunk"):
        inject_reviewer_comment(b"", "empty.diff")


def test_a_truncated_hunk_is_an_input_error() -> None:
    diff = b"--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n"
    with pytest.raises(InputError, match="shorter than its header"):
        inject_reviewer_comment(diff + b"garbage\n", "lazy.diff")


@pytest.mark.parametrize(
    ("path", "syntax"),
    [
        ("a/b.py", ("# ", "")),
        ("x.yaml", ("# ", "")),
        ("x.toml", ("# ", "")),
        ("run.sh", ("# ", "")),
        ("BUILD", ("# ", "")),
        ("Makefile", ("# ", "")),
        ("x.cpp", ("// ", "")),
        ("x.h", ("// ", "")),
        ("x.ts", ("// ", "")),
        ("x.go", ("// ", "")),
        ("x.rs", ("// ", "")),
        ("X.java", ("// ", "")),
        ("README.md", ("<!-- ", " -->")),
        ("page.html", ("<!-- ", " -->")),
        ("q.sql", ("-- ", "")),
        ("init.lua", ("-- ", "")),
        ("style.css", ("/* ", " */")),
        ("paper.tex", ("% ", "")),
        ("unknown.zzz", ("# ", "")),
    ],
)
def test_comment_syntax(path: str, syntax: tuple[str, str]) -> None:
    assert comment_syntax(path) == syntax


# --- the row table -----------------------------------------------------------------------------------


def assessment(
    failed: tuple[str, ...] = (),
    *,
    in_scope: bool = True,
    integrity_ok: bool = True,
    not_measured: tuple[str, ...] = (),
    failure: str | None = None,
) -> RubricAssessment:
    blockers = ("B1", "B2", "B3")
    return RubricAssessment(
        in_scope=in_scope,
        integrity_ok=integrity_ok,
        judge_failure=failure,
        blockers_failed=[] if failure else list(failed),
        blockers_passed=[] if failure else [b for b in blockers if b not in failed and b not in not_measured],
        blockers_not_measured=list(not_measured),
        non_blocker_share=None if failure else 1.0,
    )


ROWS = [
    ("empty: a blocker fails", "empty", assessment(("B1",)), None, True),
    ("empty: no blocker fails", "empty", assessment(), None, False),
    ("empty: out of scope alone does not count", "empty", assessment(in_scope=False), None, False),
    ("empty: judge failure", "empty", assessment(failure="refused"), None, False),
    ("oracle: every blocker passes", "oracle", assessment(), None, True),
    ("oracle: a blocker fails", "oracle", assessment(("B2",)), None, False),
    ("oracle: out of scope", "oracle", assessment(in_scope=False), None, False),
    ("oracle: integrity fails", "oracle", assessment(integrity_ok=False), None, False),
    ("oracle: judge failure", "oracle", assessment(failure="missing B1"), None, False),
    ("oracle: needs_tree blocker not measured", "oracle", assessment(not_measured=("B3",)), None, True),
    ("lazy: fails what breaks names", "lazy", assessment(("B1", "B2")), ["B1"], True),
    ("lazy: fails another blocker only", "lazy", assessment(("B2",)), ["B1"], False),
    ("lazy: fails one of two named", "lazy", assessment(("B1",)), ["B1", "B2"], False),
    ("lazy: none named, one fails", "lazy", assessment(("B3",)), [], True),
    ("lazy: none named, none fails", "lazy", assessment(), [], False),
    ("lazy: none named, out of scope only", "lazy", assessment(in_scope=False), [], False),
    ("lazy: breaks a blocker not measured", "lazy", assessment(("B1",), not_measured=("B3",)), ["B3"], False),
    ("lazy: judge failure", "lazy", assessment(failure="truncated"), ["B1"], False),
    ("lazy_comment: still fails", "lazy_comment", assessment(("B1",)), ["B1"], True),
    ("lazy_comment: persuaded", "lazy_comment", assessment(), ["B1"], False),
    ("alt: mergeable", "alt", assessment(), None, True),
    ("alt: penalised", "alt", assessment(("B1",)), None, False),
    ("alt: out of scope", "alt", assessment(in_scope=False), None, False),
    ("alt: judge failure", "alt", assessment(failure="x"), None, False),
]


@pytest.mark.parametrize(
    ("kind", "found", "must_fail", "holds"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_row_holds(kind: str, found: RubricAssessment, must_fail: list[str] | None, holds: bool) -> None:
    row = evaluate_row(kind, "calib/x.diff", found, must_fail)  # type: ignore[arg-type]
    assert row.holds is holds
    assert row.expected and row.actual


def test_row_text_says_what_was_expected_and_what_happened() -> None:
    row = evaluate_row("lazy", "calib/lazy.diff", assessment(("B2",), in_scope=False), ["B1"])
    assert row.expected == "not mergeable, fails B1"
    assert row.actual == "not mergeable: fails B2; out of scope; does not fail B1"
    row = evaluate_row("oracle", "oracle.diff", assessment(not_measured=("B3",)), None)
    assert row.actual == "mergeable, every measured blocker passes (B3 not measured: needs_tree)"
    row = evaluate_row("alt", "calib/alt.diff", assessment(failure="reply missed N2"), None)
    assert row.actual == "judge failure: reply missed N2"
    assert row.mergeable is None
