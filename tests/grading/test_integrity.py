"""Test integrity (§3) on runs made in real git repositories, with test lists printed by a real command."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grading.checks.integrity import check_integrity, integrity_for_run
from grading.cli.rubric import main
from grading.diffs import FileChange, parse_diff
from grading.errors import InputError
from grading.schema import GradeJson, TestsConfig
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import workspace_diff, write_run

# The list command prints one test id per line: path::name for every test function under tests/.
LIST_COMMAND = r"grep -rHoE 'def test_[A-Za-z0-9_]+' tests | sed 's/:def /::/' | sort"
MANIFEST = f"""\
name: example
tests:
  globs: ["**/test/**", "**/tests/**", "**/*_test.*", "**/test_*"]
  config_globs: ["**/conftest.py", "**/pytest.ini", "**/BUILD", "**/BUILD.bazel"]
  list: "{LIST_COMMAND}"
"""

TESTS = TestsConfig(
    globs=["**/tests/**"], config_globs=["**/conftest.py", "**/pytest.ini"], list_command="true"
)


def list_tests(repo: GitRepo) -> str:
    # The framework runs tests.list in the checkout; the test does the same with the manifest's command.
    return subprocess.run(
        LIST_COMMAND, shell=True, cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def project(git_repo: GitRepo, tmp_path: Path) -> tuple[GitRepo, str, Path, Path]:
    """A repository with tests and test config, its base, a task dir (tests_base.txt, oracle), a manifest."""
    r = git_repo
    r.write("src/calc.py", "def add(a, b):\n    return a + b\n")
    r.write("tests/test_calc.py", "def test_add():\n    pass\n\ndef test_zero():\n    pass\n")
    r.write("tests/test_more.py", "def test_more():\n    pass\n")
    r.write("tests/conftest.py", "import pytest\n")
    r.write("pytest.ini", "[pytest]\naddopts = -q\n")
    base = r.commit("base")
    task = tmp_path / "task"
    task.mkdir()
    (task / "tests_base.txt").write_text(list_tests(r))
    (task / "oracle_grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 1}))
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text(MANIFEST)
    return r, base, task, manifest


def finish_run(repo: GitRepo, base: str, run: Path, grade: dict[str, Any] | None = None) -> Path:
    write_run(run, repo, base)
    (run / "tests_list.txt").write_text(list_tests(repo))
    (run / "grade.json").write_text(
        json.dumps(grade if grade is not None else {"pass": True, "tests_skipped": 1})
    )
    return run


def summary(result: Any) -> list[tuple[str, str | None]]:
    return [(v.rule, v.path) for v in result.violations]


def test_a_clean_run_is_ok_and_every_part_is_measured(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path
) -> None:
    repo, base, task, manifest = project
    assert (task / "tests_base.txt").read_text().splitlines() == [
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_zero",
        "tests/test_more.py::test_more",
    ]
    repo.write("src/calc.py", "def add(a, b):\n    return b + a\n")
    repo.write(
        "tests/test_calc.py", "def test_add():\n    pass\n\ndef test_zero():\n    pass\n\ndef test_neg():\n"
    )
    result = integrity_for_run(task, finish_run(repo, base, tmp_path / "run"), manifest)
    assert result.model_dump() == {
        "ok": True,
        "violations": [],
        "config_edits": [],
        "measured": ["deleted_files", "tests_skipped", "test_cases", "git_dir"],
        "not_measured": {},
    }


def test_a_deleted_test_file_fails_and_its_cases_are_missing(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path
) -> None:
    repo, base, task, manifest = project
    (repo.path / "tests/test_more.py").unlink()
    result = integrity_for_run(task, finish_run(repo, base, tmp_path / "run"), manifest)
    assert not result.ok
    assert summary(result) == [
        ("test_file_deleted", "tests/test_more.py"),
        ("test_case_removed", "tests/test_more.py::test_more"),
    ]


def test_a_moved_test_file_is_a_deletion(project: tuple[GitRepo, str, Path, Path], tmp_path: Path) -> None:
    repo, base, task, manifest = project
    (repo.path / "tests/unit").mkdir()
    repo.git("mv", "tests/test_calc.py", "tests/unit/test_calc.py")
    run = finish_run(repo, base, tmp_path / "run")
    result = integrity_for_run(task, run, manifest)
    assert ("test_file_deleted", "tests/test_calc.py") in summary(result)
    # The ids carry the path, so the cases are gone from the list too.
    assert ("test_case_removed", "tests/test_calc.py::test_add") in summary(result)
    assert not result.ok


def test_deleting_a_config_file_fails_and_editing_one_is_listed(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path
) -> None:
    repo, base, task, manifest = project
    (repo.path / "pytest.ini").unlink()
    repo.write("tests/conftest.py", "import pytest\ncollect_ignore = ['test_more.py']\n")
    repo.write(
        "conftest.py", "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    )  # new root conftest
    result = integrity_for_run(task, finish_run(repo, base, tmp_path / "run"), manifest)
    assert summary(result) == [("config_file_deleted", "pytest.ini")]
    assert result.config_edits == ["conftest.py", "tests/conftest.py"]


def test_config_edits_alone_do_not_fail(project: tuple[GitRepo, str, Path, Path], tmp_path: Path) -> None:
    repo, base, task, manifest = project
    repo.write("pytest.ini", "[pytest]\naddopts = -q -k 'not zero'\n")
    result = integrity_for_run(task, finish_run(repo, base, tmp_path / "run"), manifest)
    assert result.ok
    assert result.config_edits == ["pytest.ini"]


def test_more_tests_skipped_than_the_oracle_fails(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path
) -> None:
    repo, base, task, manifest = project
    repo.write("src/calc.py", "def add(a, b):\n    return 0\n")
    same = integrity_for_run(
        task, finish_run(repo, base, tmp_path / "same", {"pass": True, "tests_skipped": 1}), manifest
    )
    assert same.ok
    more = integrity_for_run(
        task, finish_run(repo, base, tmp_path / "more", {"pass": True, "tests_skipped": 2}), manifest
    )
    assert [(v.rule, v.detail) for v in more.violations] == [
        ("more_tests_skipped", "2 tests skipped, oracle run 1")
    ]
    fewer = integrity_for_run(
        task, finish_run(repo, base, tmp_path / "fewer", {"pass": True, "tests_skipped": 0}), manifest
    )
    assert fewer.ok


def test_a_test_file_replaced_by_a_symlink_is_not_a_deletion(git_repo: GitRepo) -> None:
    # git shows a type change as a deletion and an addition of one path; the path still exists.
    git_repo.write("tests/test_a.py", "def test_a():\n    pass\n")
    base = git_repo.commit("base")
    (git_repo.path / "tests/test_a.py").unlink()
    (git_repo.path / "tests/test_a.py").symlink_to("/dev/null")
    changes = parse_diff(workspace_diff(git_repo, base))
    assert [c.status for c in changes] == ["deleted", "added"]
    result = check_integrity(TESTS, changes, None, None, None, None)
    assert result.ok
    assert result.measured == ["deleted_files"]


@pytest.mark.parametrize(
    ("remove", "part", "reason"),
    [
        ("tests_base.txt", "test_cases", "no tests_base.txt (tests.list on the base) for the task"),
        ("tests_list.txt", "test_cases", "no tests_list.txt (tests.list in the workspace) for the run"),
        ("oracle_grade.json", "tests_skipped", "no oracle_grade.json for the task"),
        ("grade.json", "tests_skipped", "no grade.json for the run"),
    ],
)
def test_a_missing_input_is_not_measured_never_passed(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path, remove: str, part: str, reason: str
) -> None:
    repo, base, task, manifest = project
    # A run that would fail the part if it were measured: it is still not reported as failed or passed.
    (repo.path / "tests/test_more.py").write_text("")
    run = finish_run(repo, base, tmp_path / "run", {"pass": True, "tests_skipped": 5})
    ((task if remove in ("tests_base.txt", "oracle_grade.json") else run) / remove).unlink()
    result = integrity_for_run(task, run, manifest)
    assert result.not_measured == {part: reason}
    assert part not in result.measured
    assert result.violations and all(
        v.rule != {"test_cases": "test_case_removed", "tests_skipped": "more_tests_skipped"}[part]
        for v in result.violations
    )


def test_parts_without_a_source_in_grade_json_or_the_manifest(tmp_path: Path) -> None:
    no_counts = GradeJson.model_validate({"pass": True})
    counted = GradeJson.model_validate({"pass": True, "tests_skipped": 0})
    result = check_integrity(None, [], no_counts, counted, ["t1"], [])
    assert result.ok
    assert result.measured == []
    assert result.not_measured == {
        "deleted_files": "the manifest has no tests block",
        "tests_skipped": "grade.json does not report tests_skipped",
        "test_cases": "the manifest's tests block has no list command",
    }
    no_list = TestsConfig(globs=["tests/**"])
    result = check_integrity(no_list, [], counted, no_counts, [], ["t1"])
    assert result.not_measured == {
        "tests_skipped": "oracle_grade.json does not report tests_skipped",
        "test_cases": "the manifest's tests block has no list command",
    }
    listed = TestsConfig(list_command="pytest --collect-only -q")
    result = check_integrity(listed, [], None, None, [], ["t1"])
    assert (
        result.not_measured["deleted_files"]
        == "the manifest's tests block has neither globs nor config_globs"
    )
    assert result.not_measured["test_cases"] == "tests_base.txt lists no test ids"


def test_removed_ids_are_reported_once_in_base_order() -> None:
    base = ["a::t1", "a::t2", "b::t3", "a::t2"]
    result = check_integrity(TESTS, [], None, None, base, ["b::t3", "new::t9"])
    assert summary(result) == [("test_case_removed", "a::t1"), ("test_case_removed", "a::t2")]


def test_a_listing_that_fails_in_the_workspace_breaks_integrity_only_given_a_base_list() -> None:
    error = "'pytest' exited with status 2: ERROR tests/test_x.py"
    result = check_integrity(TESTS, [], None, None, ["a::t1"], None, run_list_error=error)
    assert not result.ok and "test_cases" in result.measured
    assert summary(result) == [("test_listing_broken", None)]
    assert (
        result.violations[0].detail == f"tests.list succeeds on the base and fails in the workspace: {error}"
    )
    # An empty base list still shows the listing works on the base.
    assert summary(check_integrity(TESTS, [], None, None, [], None, run_list_error=error)) == [
        ("test_listing_broken", None)
    ]
    # Without a base list nothing is known: not measured (grading makes it a grader failure).
    result = check_integrity(TESTS, [], None, None, None, None, run_list_error=error)
    assert result.ok and "test_cases" in result.not_measured


# --- `rubric integrity` ------------------------------------------------------------------------------


def test_cli_json_shape_and_exit_codes(
    project: tuple[GitRepo, str, Path, Path], tmp_path: Path, capsys: Any
) -> None:
    repo, base, task, manifest = project
    repo.write("tests/conftest.py", "import pytest  # edited\n")
    run = finish_run(repo, base, tmp_path / "ok")
    assert main(["integrity", str(task), str(run), "--manifest", str(manifest), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "ok": True,
        "violations": [],
        "config_edits": ["tests/conftest.py"],
        "measured": ["deleted_files", "tests_skipped", "test_cases", "git_dir"],
        "not_measured": {},
    }
    (repo.path / "tests/test_more.py").unlink()
    run = finish_run(repo, base, tmp_path / "bad")
    (task / "oracle_grade.json").unlink()
    assert main(["integrity", str(task), str(run), "--manifest", str(manifest), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    assert out["violations"] == [
        {"rule": "test_file_deleted", "path": "tests/test_more.py", "detail": "matches tests.globs"},
        {
            "rule": "test_case_removed",
            "path": "tests/test_more.py::test_more",
            "detail": "in tests_base.txt, not in the run",
        },
    ]
    assert out["not_measured"] == {"tests_skipped": "no oracle_grade.json for the task"}


def test_cli_human_output(project: tuple[GitRepo, str, Path, Path], tmp_path: Path, capsys: Any) -> None:
    repo, base, task, manifest = project
    repo.write("pytest.ini", "[pytest]\n")
    (repo.path / "tests/test_more.py").unlink()
    run = finish_run(repo, base, tmp_path / "run")
    (run / "tests_list.txt").unlink()
    assert main(["integrity", str(task), str(run), "--manifest", str(manifest)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "test integrity: FAILED",
        "  test_file_deleted: 'tests/test_more.py' (matches tests.globs)",
        "  config edited: 'pytest.ini' (the judge checks it does not disable or narrow any test)",
        "  measured: deleted_files, tests_skipped, git_dir",
        "  not measured: test_cases (no tests_list.txt (tests.list in the workspace) for the run)",
    ]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no_manifest", r"repo_manifest.yaml: file not found"),
        ("bad_yaml", r"repo_manifest.yaml: line 3: malformed YAML"),
        ("bad_glob", r"repo_manifest.yaml: tests.globs\[0\]: invalid glob '/abs/\*\*'"),
        ("unknown_key", r"repo_manifest.yaml: tests.lists: unknown key"),
        ("malformed_grade", r"run/grade.json: line 1 column 2: malformed JSON"),
        ("grade_not_object", r"run/grade.json: grade.json is a JSON object"),
        ("negative_skipped", r"task/oracle_grade.json: tests_skipped: .*greater than or equal to 0"),
        ("binary_list", r"run/tests_list.txt: line 2: NUL byte"),
        ("no_diff", r"run/workspace.diff: file not found"),
        ("garbage_diff", r"run/workspace.diff: line 1: not a diff"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(
    project: tuple[GitRepo, str, Path, Path],
    tmp_path: Path,
    capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    message: str,
) -> None:
    repo, base, task, manifest = project
    run = finish_run(repo, base, tmp_path / "run")
    if setup == "no_manifest":
        manifest.unlink()
    elif setup == "bad_yaml":
        manifest.write_text("tests:\n  globs: [unclosed\n")
    elif setup == "bad_glob":
        manifest.write_text('tests:\n  globs: ["/abs/**"]\n')
    elif setup == "unknown_key":
        manifest.write_text('tests:\n  lists: "pytest --co"\n')
    elif setup == "malformed_grade":
        (run / "grade.json").write_text("{pass: true}")
    elif setup == "grade_not_object":
        (run / "grade.json").write_text("[true]")
    elif setup == "negative_skipped":
        (task / "oracle_grade.json").write_text('{"pass": true, "tests_skipped": -1}')
    elif setup == "binary_list":
        (run / "tests_list.txt").write_bytes(b"t1\n\x00\x01\x02")
    elif setup == "no_diff":
        (run / "workspace.diff").unlink()
    elif setup == "garbage_diff":
        (run / "workspace.diff").write_bytes(b"\xff\xfe\x89garbage\x01\x02\nmore\n")
    monkeypatch.chdir(tmp_path)
    code = main(["integrity", "task", "run", "--manifest", manifest.name, "--json"])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert len(captured.err.splitlines()) == 1, captured.err
    assert re.search(message, captured.err), captured.err


def test_a_missing_run_dir_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("{}\n")
    with pytest.raises(InputError, match="run: not a directory"):
        integrity_for_run(tmp_path, tmp_path / "run", tmp_path / "m.yaml")


def test_a_diff_deleting_tens_of_thousands_of_files_is_checked_in_linear_time() -> None:
    # An agent removing a vendored tree deletes that many files; a list-membership test per path made
    # this quadratic (about a minute for 50,000 deletions).
    count = 60_000
    changes = [
        FileChange(old_path=f"tests/d{i // 100}/test_{i}.py", new_path=None, status="deleted", removed=1)
        for i in range(count)
    ]
    changes += [
        FileChange(old_path=None, new_path=f"pkg{i}/conftest.py", status="added", added=1)
        for i in range(count)
    ]
    result = check_integrity(TESTS, changes, None, None, None, None)
    assert len(result.violations) == count and len(result.config_edits) == count
    assert result.violations[0].path == "tests/d0/test_0.py"
    assert result.config_edits[-1] == f"pkg{count - 1}/conftest.py"
