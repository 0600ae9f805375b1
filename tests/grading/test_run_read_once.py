"""A run and a task are read once (grading.checks.run), and grading them in memory is grading their
folders."""

from __future__ import annotations

import builtins
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from grading import LoadedTask, grade, grade_run, make_run, make_task_files, read_run, read_task_files
from tests.grading.task_helpers import Task, captured_run


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return Task(tmp_path)


def _run_with_every_file(task: Task) -> Path:
    # A config file hidden in a self-ignoring directory: scope, integrity and the judge all look at it.
    run = captured_run(task, "full", {"build/conftest.py": "x\n", "build/.gitignore": "*\n"})
    (run / "run.json").write_text(json.dumps({"task": "fix_add", "arm": "a", "model": "m"}))
    (run / "tests_list.txt").write_text("tests/test_calc.py::test_zero\n")
    (task.dir / "tests_base.txt").write_text("tests/test_calc.py::test_zero\n")
    (task.dir / "oracle_grade.json").write_text(json.dumps({"pass": True, "tests_skipped": 0}))
    task.manifest.write_text(
        'tests:\n  globs: ["tests/**"]\n  config_globs: ["**/conftest.py"]\n'
        '  list: "pytest --collect-only -q"\n'
    )
    return run


def test_grade_run_opens_each_file_of_the_run_and_the_task_once(
    task: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run_with_every_file(task)
    task.backend()
    opened: Counter[str] = Counter()
    real_open = builtins.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        path = Path(file) if isinstance(file, str | Path) else None
        if path is not None and (path.is_relative_to(run) or path.is_relative_to(task.dir)):
            opened[path.name] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    metrics = grade_run(task.dir, run, task.manifest, f"scripted:{task.judge}", write=False)
    monkeypatch.setattr(builtins, "open", real_open)

    assert metrics.details.integrity is not None and metrics.details.integrity.config_edits
    run_files = ("grade.json", "workspace.diff", "ignored_created.txt", "run.json", "tests_list.txt")
    task_files = ("git_dir_changes.txt", "task.json", "rubric.json", "oracle_grade.json", "tests_base.txt")
    for name in run_files + task_files:
        assert opened[name] == 1, (name, opened)
    assert max(opened.values()) == 1, opened


def test_grading_bytes_in_memory_gives_what_grading_the_folders_gives(task: Task) -> None:
    run_dir = _run_with_every_file(task)
    task.backend()
    judge = f"scripted:{task.judge}"
    from_folders = grade_run(task.dir, run_dir, task.manifest, judge, write=False)

    def maybe(name: str, root: Path = run_dir) -> bytes | None:
        return (root / name).read_bytes() if (root / name).exists() else None

    run = make_run(
        "run 7",
        grade_json=(run_dir / "grade.json").read_bytes(),
        diff=(run_dir / "workspace.diff").read_bytes(),
        run_json=maybe("run.json"),
        ignored_created=maybe("ignored_created.txt"),
        tests_list=maybe("tests_list.txt"),
        git_dir_changes=maybe("git_dir_changes.txt"),
    )
    files: LoadedTask = make_task_files(
        "task fix_add",
        task_json=(task.dir / "task.json").read_bytes(),
        rubric_json=(task.dir / "rubric.json").read_bytes(),
        manifest=task.manifest.read_bytes(),
        oracle_grade=maybe("oracle_grade.json", task.dir),
        tests_base=maybe("tests_base.txt", task.dir),
    )
    assert run == read_run(run_dir).model_copy(update={"source": "run 7"})
    in_memory = grade(files, run, judge)
    assert in_memory == from_folders
    assert in_memory.details.status == from_folders.details.status != "grader_failure"
    assert files == read_task_files(task.dir, task.manifest).model_copy(update={"task_file": files.task_file})


def test_bad_bytes_name_the_source_and_the_file(task: Task) -> None:
    with pytest.raises(Exception, match=r"run 7/ignored_created.txt: line 1"):
        make_run("run 7", grade_json=b'{"pass": true}', diff=b"", ignored_created=b"/etc/passwd\n")
    with pytest.raises(Exception, match=r"run 7/grade.json"):
        make_run("run 7", grade_json=b'{"passed": true}', diff=b"")


def test_a_rubric_without_a_diff_is_bad_input_and_no_rubric_needs_none(task: Task) -> None:
    run = make_run("run 7", grade_json=b'{"pass": true}', diff=None)
    files = read_task_files(task.dir, task.manifest)
    task.backend()
    with pytest.raises(Exception, match=r"run 7/workspace.diff: file not found"):
        grade(files, run, f"scripted:{task.judge}")
    no_rubric = files.model_copy(update={"rubric": None, "rubric_sha256": None})
    assert grade(no_rubric, run, f"scripted:{task.judge}").details.status == "not_measured"
