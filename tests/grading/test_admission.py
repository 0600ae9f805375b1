"""Admission (§5): the reviewer-comment injection on real git diffs, and the row table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from grading.admission.check import REVIEWER_COMMENT, evaluate_row, inject_reviewer_comment
from grading.admission.sites import comment_syntax
from grading.admission.store import AdmissionReport, AdmissionRow, AdmissionStore, default_store_path
from grading.checks.outcome import RubricAssessment
from grading.errors import InputError
from grading.judge.runner import JudgeSettings
from grading.schema import CONFIG_BLOCKER_ID
from tests.gitrepo import GitRepo
from tests.grading.task_helpers import ALL_IDS, Task, answers, diff_of

BASE_FILES = {
    "src/area.py": "def area(points):\n    total = 0\n    for a, b in zip(points, points[1:]):\n"
    "        total += a[0] * b[1] - b[0] * a[1]\n    return total / 2\n",
    "src/area.c": "int area(void) {\n    return 1;\n}\n",
    "docs/README.md": "# Area\n\nComputes areas.\n",
    "db/schema.sql": "-- schema\nCREATE TABLE t (a INT);\n-- end\n",
    "old.txt": "one\ntwo\n",
}


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
    with pytest.raises(InputError, match="line 6: expected a hunk line"):
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
        ("docs/source/index.rst", (".. ", "")),  # reST has no HTML comments
        ("solver.f90", ("! ", "")),
        ("lib.fs", ("// ", "")),
        ("build.bat", ("REM ", "")),
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


# --- check_task end to end: real git diffs, the scripted judge through the real runner -------------------


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task(tmp_path)


def rows_by_kind(report: AdmissionReport) -> dict[str, AdmissionRow]:
    return {row.kind: row for row in report.rows}


def test_a_sound_rubric_is_admitted(task: Task) -> None:
    backend = task.backend()
    report = task.check(backend=backend)
    assert [(r.kind, r.name) for r in report.rows] == [
        ("empty", "(empty diff)"),
        ("oracle", "oracle.diff"),
        ("lazy", "calib/lazy.diff"),
        ("lazy_comment", "calib/lazy.diff + reviewer comment"),
        ("alt", "calib/alt.diff"),
    ]
    assert [r.holds for r in report.rows] == [True] * 5, [r.actual for r in report.rows]
    assert report.admitted and report.scripted and not report.from_store
    assert backend.calls == report.calls == 5
    rows = rows_by_kind(report)
    assert rows["empty"].blockers_failed == ["B2"]
    assert rows["lazy"].must_fail == ["B1"] and rows["lazy_comment"].must_fail == ["B1"]
    # The commented row really judged a different diff, one that carries the comment.
    assert rows["lazy_comment"].judge is not None and rows["lazy"].judge is not None
    assert rows["lazy_comment"].judge.cache_key != rows["lazy"].judge.cache_key


def test_a_judge_persuaded_by_the_reviewer_comment_fails_admission(task: Task) -> None:
    lazy = (task.dir / "calib/lazy.diff").read_bytes()
    commented = inject_reviewer_comment(lazy, "calib/lazy.diff")
    task.script["by_diff_sha256"][hashlib.sha256(commented).hexdigest()] = answers()
    report = task.check()
    rows = rows_by_kind(report)
    assert rows["lazy"].holds
    assert not rows["lazy_comment"].holds
    assert rows["lazy_comment"].actual == "mergeable, every measured blocker passes; does not fail B1"
    assert not report.admitted


def test_the_commented_row_must_fail_every_blocker_the_plain_lazy_diff_failed(task: Task) -> None:
    task.rubric["calibration"]["lazy"] = ["calib/lazy.diff"]  # breaks names nothing
    task.write_rubric()
    task.answer("calib/lazy.diff", answers(("B1", "B2")))
    commented = inject_reviewer_comment((task.dir / "calib/lazy.diff").read_bytes(), "calib/lazy.diff")
    task.script["by_diff_sha256"][hashlib.sha256(commented).hexdigest()] = answers(("B2",))
    rows = rows_by_kind(task.check())
    assert rows["lazy"].holds and rows["lazy"].must_fail == []
    assert rows["lazy_comment"].must_fail == ["B1", "B2"]
    assert not rows["lazy_comment"].holds


@pytest.mark.parametrize(
    ("rel", "verdicts", "kinds"),
    [
        ("", answers(), ["empty"]),  # the rubric cannot tell an untouched workspace from a fix
        ("oracle.diff", answers(("B2",)), ["oracle"]),  # the maintainer's own fix fails a blocker
        # Fails a blocker, but not the one it breaks; the commented copy (still failing only B1) then no
        # longer fails everything the plain diff failed.
        ("calib/lazy.diff", answers(("B2",)), ["lazy", "lazy_comment"]),
        ("calib/alt.diff", answers(("B1",)), ["alt"]),  # the valid alternative is penalised
        ("oracle.diff", answers(nowhere=("N1",)), ["oracle"]),  # no acceptable reply: judge failure
    ],
)
def test_each_row_can_fail_admission(
    task: Task, rel: str, verdicts: dict[str, Any], kinds: list[str]
) -> None:
    task.answer(rel, verdicts)
    report = task.check()
    assert [r.kind for r in report.rows if not r.holds] == kinds
    assert not report.admitted


def test_scope_applies_to_the_oracle(task: Task) -> None:
    task.set_diff("oracle.diff", {"src/calc.py": "def add(a, b):\n    return a + b\n", "NOTES.md": "notes\n"})
    task.answer("oracle.diff", answers())
    oracle = rows_by_kind(task.check())["oracle"]
    assert not oracle.holds and not oracle.in_scope and oracle.blockers_failed == []
    assert oracle.actual == "not mergeable: out of scope"


def test_integrity_applies_to_the_oracle(task: Task) -> None:
    task.set_diff(
        "oracle.diff", {"src/calc.py": "def add(a, b):\n    return a + b\n", "tests/test_calc.py": None}
    )
    task.answer("oracle.diff", answers())
    oracle = rows_by_kind(task.check())["oracle"]
    assert not oracle.holds and not oracle.integrity_ok and oracle.in_scope


def test_a_test_config_edit_adds_the_fixed_blocker(task: Task) -> None:
    task.set_diff("calib/alt.diff", {"src/calc.py": "def add(a, b):\n    return sum([a, b])\n",
                                     "conftest.py": "# fixtures\nimport sys\n"})  # fmt: skip
    task.answer("calib/alt.diff", answers(ids=ALL_IDS))  # no verdict for TEST_CONFIG: a judge failure
    alt = rows_by_kind(task.check())["alt"]
    assert not alt.holds and alt.judge_failure is not None and CONFIG_BLOCKER_ID in alt.judge_failure

    task.answer("calib/alt.diff", answers((CONFIG_BLOCKER_ID,), ids=(*ALL_IDS, CONFIG_BLOCKER_ID)))
    alt = rows_by_kind(task.check())["alt"]
    assert not alt.holds and alt.blockers_failed == [CONFIG_BLOCKER_ID]

    task.answer("calib/alt.diff", answers(ids=(*ALL_IDS, CONFIG_BLOCKER_ID)))
    assert rows_by_kind(task.check())["alt"].holds


def test_a_stored_report_is_not_paid_for_twice(task: Task, tmp_path: Path) -> None:
    store = AdmissionStore(tmp_path / "store" / "admission.sqlite3")
    first = task.check(store=store)
    assert first.admitted and first.calls == 5 and store.count() == 1

    again = task.backend()
    second = task.check(backend=again, store=store)
    assert again.calls == 0
    assert second.from_store and second.key == first.key and second.rows == first.rows

    refreshed = task.backend()
    assert not task.check(backend=refreshed, store=store, refresh=True).from_store
    assert refreshed.calls == 5


@pytest.mark.parametrize(
    "change",
    ["rubric", "lazy diff", "alt diff", "oracle diff", "judge script", "manifest", "task prompt"],
)
def test_any_change_to_what_admission_reads_misses_the_store(task: Task, tmp_path: Path, change: str) -> None:
    store = AdmissionStore(tmp_path / "admission.sqlite3")
    task.check(store=store)
    if change == "rubric":
        task.rubric["intent"] = "add returns the arithmetic sum"
        task.write_rubric()
    elif change == "lazy diff":
        task.set_diff(
            "calib/lazy.diff", {"src/calc.py": "def add(a, b):\n    return 5 if a == 2 else a - b\n"}
        )
    elif change == "alt diff":
        task.set_diff("calib/alt.diff", {"src/calc.py": "def add(a, b):\n    return b + a\n"})
        task.answer("calib/alt.diff", answers())
    elif change == "oracle diff":
        task.set_diff("oracle.diff", {"src/calc.py": "def add(a, b):\n    return (a + b)\n"})
        task.answer("oracle.diff", answers())
    elif change == "judge script":
        task.script["default"]["N3"]["reason"] = "N3 is met, as reworded."
    elif change == "manifest":
        task.manifest.write_text('tests:\n  globs: ["tests/**", "**/test_*.py"]\n')
    else:
        (task.dir / "task.json").write_text(json.dumps({"id": "fix_add", "prompt": "add() is wrong."}))
    backend = task.backend()
    report = task.check(backend=backend, store=store)
    assert not report.from_store and backend.calls > 0
    assert store.count() == 2


def test_a_report_with_a_judge_failure_is_not_stored(task: Task, tmp_path: Path) -> None:
    store = AdmissionStore(tmp_path / "admission.sqlite3")
    task.answer("oracle.diff", answers(nowhere=("B2",)))
    report = task.check(store=store)
    assert rows_by_kind(report)["oracle"].judge_failure is not None
    assert store.count() == 0


def test_the_default_store_honours_xdg_cache_home(tmp_path: Path) -> None:
    assert (
        default_store_path({"XDG_CACHE_HOME": str(tmp_path)})
        == tmp_path / "mergeability-grading/admission.sqlite3"
    )
    assert default_store_path({"XDG_CACHE_HOME": "relative"}).is_relative_to(Path.home())
    assert default_store_path({"RUBRIC_ADMISSION_STORE": str(tmp_path / "x.db")}) == tmp_path / "x.db"


def test_bad_inputs_are_input_errors(task: Task) -> None:
    (task.dir / "oracle.diff").unlink()
    with pytest.raises(InputError, match="file not found") as err:
        task.check()
    assert err.value.file == "oracle.diff"


def test_a_calibration_diff_that_is_not_utf8_is_judged_with_those_bytes_escaped(task: Task) -> None:
    # Runs are judged on that text (grading.diffs.decode_diff), so admission calibrates on the same.
    data = b"--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1 +1 @@\n-\xff\n+caf\xe9\n"
    (task.dir / "calib/alt.diff").write_bytes(data)
    escaped = "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1 +1 @@\n-\\xff\n+caf\\xe9\n"
    task.script["by_diff_sha256"][hashlib.sha256(escaped.encode()).hexdigest()] = answers(("N2",))
    alt = rows_by_kind(task.check())["alt"]
    assert alt.judge is not None and alt.judge.failure is None
    assert [v.item_id for v in alt.judge.verdicts if v.verdict == "fail"] == ["N2"]


def test_a_lazy_diff_that_cannot_carry_the_comment_is_an_input_error(task: Task) -> None:
    task.set_diff("calib/lazy.diff", {"tests/test_calc.py": None})
    with pytest.raises(InputError, match="no text hunk"):
        task.check()


def test_a_needs_tree_blocker_is_not_measured_and_cannot_be_what_a_lazy_diff_breaks(task: Task) -> None:
    task.rubric["blockers"].append(
        {"id": "B3", "criterion": "every backend is changed", "evidence": "src/", "needs_tree": True}
    )
    task.write_rubric()
    report = task.check()
    rows = rows_by_kind(report)
    assert report.admitted and rows["oracle"].blockers_not_measured == ["B3"]
    assert rows["oracle"].judge is not None and rows["oracle"].judge.not_measured == ["B3"]

    task.rubric["calibration"]["lazy"] = [{"path": "calib/lazy.diff", "breaks": ["B1", "B3"]}]
    task.write_rubric()
    lazy = rows_by_kind(task.check())["lazy"]
    assert not lazy.holds
    assert lazy.actual == "not mergeable: fails B1 (B3 not measured: needs_tree); does not fail B3"


def test_a_diff_over_the_judges_limit_is_an_input_error_naming_it(task: Task) -> None:
    # Every other diff of the task is far below 1000 characters; the alternative is far above.
    task.set_diff(
        "calib/alt.diff", {"src/calc.py": "def add(a, b):\n    return sum([a, b])  # " + "x" * 1000 + "\n"}
    )
    with pytest.raises(InputError, match="too large to review: 2 changed lines / ") as err:
        task.check(settings=JudgeSettings(max_diff_chars=1000))
    assert err.value.file == "calib/alt.diff"
    assert (
        task.check(settings=JudgeSettings(max_diff_chars=2000)).admitted is False
    )  # unanswered: judged default


def test_on_row_reports_every_row_once_as_it_is_known(task: Task) -> None:
    seen: list[tuple[int, int, str, bool]] = []
    report = task.check(on_row=lambda n, total, row: seen.append((n, total, row.kind, row.holds)))
    assert sorted(seen) == [(n, 5, row.kind, row.holds) for n, row in enumerate(report.rows)]
    # A commented lazy row is only reported once its plain lazy row is (it needs its failed blockers).
    order = [n for n, _, _, _ in seen]
    assert order.index(3) > order.index(2)


def test_on_row_sees_a_stored_report_too(task: Task, tmp_path: Path) -> None:
    store = AdmissionStore(tmp_path / "store.sqlite3")
    task.check(store=store)
    seen: list[int] = []
    again = task.check(store=store, on_row=lambda n, total, row: seen.append(n))
    assert again.from_store and sorted(seen) == [0, 1, 2, 3, 4]
