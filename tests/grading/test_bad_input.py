"""Bad input the probe found (issue 7 §8, §1): each one a clear one-line error and exit 2, never a traceback,
and nothing written (no metrics.json)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.errors import InputError, InputErrors
from grading.loaders import parse_rubric
from grading.schema import rubric_json_schema
from grading.strict_json import read_json
from grading.workspace.diff import write_snapshot
from grading.workspace.record import record_path
from tests.grading.cli_helpers import grade_argv, own_stores
from tests.grading.task_helpers import FIXED, Task, answer_run, answers

BIG = "9" * 5000  # past Python's 4,300-digit limit for int()


@pytest.fixture
def task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    own_stores(tmp_path, monkeypatch)
    return Task(tmp_path)


def judge_argv(task: Task, run: Path, *extra: str) -> list[str]:
    task.backend()
    return ["judge", str(task.dir), str(run), "--judge", f"scripted:{task.judge}", *extra]


def exit_2_one_line(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rubric: error: "), captured.err
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


def good_run(task: Task) -> Path:
    run = task.make_run("r", FIXED, {"pass": True})
    answer_run(task, run, answers())
    return run


# --- integers past 4,300 digits ------------------------------------------------------------------------


def test_a_hunk_header_number_past_the_int_limit(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    (run / "workspace.diff").write_text(f"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,{BIG} +1 @@\n-a\n+b\n")
    exit_2_one_line(["scope", str(task.dir), str(run)], capsys, "workspace.diff", "hunk header")
    exit_2_one_line(grade_argv(task, run), capsys, "workspace.diff")
    assert not (run / "metrics.json").exists()


def test_a_hunk_header_number_past_the_int_limit_in_a_calibration_diff(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    (task.dir / "calib" / "lazy.diff").write_text(
        f"diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1 +1,{BIG} @@\n"
        "-a\n+b\n"
    )
    task.backend()
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", f"scripted:{task.judge}"]
    exit_2_one_line(argv, capsys, "lazy.diff")


def test_the_judge_command_reads_a_huge_hunk_header_without_a_crash(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    # No manifest, so only the judge's location index reads the diff: it skips a header it cannot read.
    run = good_run(task)
    (run / "workspace.diff").write_text(f"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,{BIG} +1 @@\n-a\n+b\n")
    answer_run(task, run, answers())
    assert main(judge_argv(task, run, "--json")) == 0
    assert json.loads(capsys.readouterr().out)["failure"] is None


def test_a_binary_literal_size_past_the_int_limit(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    (run / "workspace.diff").write_text(
        "diff --git a/x.bin b/x.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\n"
        f"literal {BIG}\nzcmV\n\nliteral 0\nHcmV?d00001\n\n"
    )
    exit_2_one_line(["scope", str(task.dir), str(run)], capsys, "workspace.diff")


def test_a_manifest_integer_past_the_int_limit(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    task.manifest.write_text(f"version: {BIG}\ntests:\n  globs: ['tests/**']\n")
    exit_2_one_line(
        ["integrity", str(task.dir), str(run), "--manifest", str(task.manifest)],
        capsys,
        "repo_manifest.yaml",
        "line 1",
        "integer too long",
    )


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (BIG, "out of range"),
        ("[" * 100_000, "nested too deeply"),
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "Infinity"),
        ("1e400", "out of range"),
    ],
)
def test_decoding_values_json_cannot_carry(
    task: Task, capsys: pytest.CaptureFixture[str], value: str, needle: str
) -> None:
    run = good_run(task)
    line = exit_2_one_line(
        judge_argv(task, run, "--render-only", "--decoding", f"temperature={value}"),
        capsys,
        "--decoding",
        needle,
    )
    assert len(line) < 300
    second = ["--second-judge", f"scripted:{task.judge}", "--second-decoding", f"top_p={value}"]
    exit_2_one_line(grade_argv(task, run, *second), capsys, "--second-decoding")
    assert not (run / "metrics.json").exists()


# --- weights, numbers and text that JSON cannot carry -------------------------------------------------------


@pytest.mark.parametrize("weight", ["1.7e308", "100.5", "101", "0", "-1", "true"])
def test_weights_are_bounded(task: Task, capsys: pytest.CaptureFixture[str], weight: str) -> None:
    rubric = json.dumps(task.rubric).replace('"quality 1"', f'"quality 1", "weight": {weight}')
    (task.dir / "rubric.json").write_text(rubric)
    exit_2_one_line(
        ["validate", str(task.dir / "rubric.json")], capsys, "non_blockers[0].weight", "at most 100"
    )


def test_an_integer_weight_of_10_to_the_400(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    # In a file, the number is refused as JSON no double can hold ...
    rubric = json.dumps(task.rubric).replace('"quality 1"', '"quality 1", "weight": 1' + "0" * 400)
    (task.dir / "rubric.json").write_text(rubric)
    exit_2_one_line(["validate", str(task.dir / "rubric.json")], capsys, "rubric.json", "out of range")
    # ... and as data (the web app's path), by the bound, where it once raised OverflowError.
    task.rubric["non_blockers"][0]["weight"] = 10**400
    with pytest.raises(InputErrors, match="at most 100") as err:
        parse_rubric(task.rubric)
    assert err.value.errors[0][0] == "non_blockers[0].weight"
    task.rubric["non_blockers"][0]["weight"] = 100
    assert parse_rubric(task.rubric).non_blockers[0].weight == 100


def test_two_huge_weights_never_give_nan(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the bound, two weights of 1.7e308 summed to inf and merge_score was NaN."""
    for item in task.rubric["non_blockers"][:2]:
        item["weight"] = 1.7e308
    task.write_rubric()
    run = good_run(task)
    main(grade_argv(task, run))
    assert "at most 100" in capsys.readouterr().err
    assert not (run / "metrics.json").exists()
    for item in task.rubric["non_blockers"]:
        item["weight"] = 100
    task.write_rubric()
    assert main(grade_argv(task, run)) == 0
    text = (run / "metrics.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["merge_score"] == 1.0


def test_a_number_past_a_double_in_grade_json_is_refused_not_written_as_null(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    run = good_run(task)
    (run / "grade.json").write_text('{"pass": true, "runtime": 1e400}')
    exit_2_one_line(grade_argv(task, run), capsys, "grade.json", "1e400", "out of range")
    assert not (run / "metrics.json").exists()
    (run / "grade.json").write_text('{"pass": true, "count": ' + "1" * 400 + "}")
    exit_2_one_line(grade_argv(task, run), capsys, "grade.json", "out of range")
    (run / "grade.json").write_text('{"pass": true, "count": ' + BIG + "}")
    exit_2_one_line(grade_argv(task, run), capsys, "grade.json", "out of range")


def test_a_lone_surrogate_in_the_intent(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    text = json.dumps(task.rubric).replace('"add returns the sum"', '"add returns the sum \\ud800"')
    (task.dir / "rubric.json").write_text(text)
    exit_2_one_line(["validate", str(task.dir / "rubric.json")], capsys, "rubric.json", "intent", "surrogate")
    run = good_run(task)
    exit_2_one_line(judge_argv(task, run), capsys, "rubric.json", "intent", "surrogate")


def test_a_lone_surrogate_in_the_prompt_or_a_key(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    (task.dir / "task.json").write_text('{"id": "fix_add", "prompt": "add() \\udc80 subtracts"}')
    exit_2_one_line(judge_argv(task, run), capsys, "task.json", "prompt", "surrogate")
    (task.dir / "task.json").write_text('{"id": "fix_add", "prompt": "p", "x\\ud800": 1}')
    exit_2_one_line(judge_argv(task, run), capsys, "task.json", "surrogate")
    # A surrogate pair is one ordinary character, not a lone surrogate.
    (task.dir / "task.json").write_text('{"id": "fix_add", "prompt": "add() \\ud83d\\ude00 subtracts"}')
    assert main(judge_argv(task, run, "--render-only")) == 0


# --- files that are not what they should be -----------------------------------------------------------------


def test_workspace_diff_that_is_a_directory(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    (run / "workspace.diff").unlink()
    (run / "workspace.diff").mkdir()
    exit_2_one_line(judge_argv(task, run), capsys, "workspace.diff", "directory")
    exit_2_one_line(grade_argv(task, run), capsys, "workspace.diff", "directory")


def test_metrics_json_that_is_a_directory(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    (run / "metrics.json").mkdir()
    exit_2_one_line(grade_argv(task, run), capsys, "metrics.json", "directory")
    assert (run / "metrics.json").is_dir()
    assert [p.name for p in run.iterdir() if p.name.startswith(".")] == []  # no temp file left behind


def test_duplicate_keys_in_the_manifest(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    task.manifest.write_text('tests:\n  globs: ["tests/**"]\ntests:\n  globs: []\n')
    exit_2_one_line(
        ["integrity", str(task.dir), str(run), "--manifest", str(task.manifest)],
        capsys,
        "line 3",
        "duplicate key 'tests'",
    )
    task.manifest.write_text('tests:\n  globs: ["a/**"]\n  globs: ["b/**"]\n')
    exit_2_one_line(grade_argv(task, run), capsys, "duplicate key 'globs'")


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_a_rubric_symlinked_to_an_endless_device(
    task: Task, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    rubric = task.dir / "rubric.json"
    rubric.unlink()
    rubric.symlink_to(target)
    exit_2_one_line(["validate", str(rubric)], capsys, "rubric.json", "not a regular file")
    run = good_run(task)
    exit_2_one_line(["scope", str(task.dir), str(run)], capsys, "rubric.json", "not a regular file")


def test_a_model_id_that_is_not_text(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    argv = judge_argv(task, run, "--render-only")
    argv[argv.index("--judge") + 1] = "anthropic:claude-\udcff-4-5-20250929"  # a non-UTF-8 byte in argv
    exit_2_one_line(argv, capsys, "--judge", "printable ASCII")


def test_an_oracle_diff_symlinked_to_an_endless_device(
    task: Task, capsys: pytest.CaptureFixture[str]
) -> None:
    (task.dir / "oracle.diff").unlink()
    (task.dir / "oracle.diff").symlink_to("/dev/zero")
    task.backend()
    argv = ["check", str(task.dir), "--manifest", str(task.manifest), "--judge", f"scripted:{task.judge}"]
    exit_2_one_line(argv, capsys, "oracle.diff", "not a regular file")


def test_the_published_schema_bounds_weights() -> None:
    weight = rubric_json_schema()["$defs"]["NonBlocker"]["properties"]["weight"]
    assert (weight["exclusiveMinimum"], weight["maximum"]) == (0, 100)


def test_an_oversized_json_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grade.json"
    path.write_text('{"pass": true, "pad": "' + "x" * 2000 + '"}')
    with pytest.raises(InputError, match="larger than 1000 bytes"):
        read_json(path, max_bytes=1000)
    assert read_json(path, max_bytes=4000)["pass"] is True


def test_an_error_with_a_newline_stays_one_line(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    odd = task.dir.parent / "task\nrubric: error: forged"
    line = exit_2_one_line(["scope", str(odd), str(good_run(task))], capsys, "not a directory")
    assert "task\\nrubric: error: forged" in line


# --- input that hung or never ended (issue 18 §6) -------------------------------------------------------


BILLION_LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}' if prev else 'lol'] * 9)}]\n"
    for prev, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def test_a_yaml_alias_bomb_in_the_manifest_is_refused_at_once(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None
) -> None:
    run = good_run(task)
    task.manifest.write_text(BILLION_LAUGHS + 'tests:\n  list: "true"\n')
    started = time.monotonic()
    integrity = ["integrity", str(task.dir), str(run), "--manifest", str(task.manifest)]
    exit_2_one_line(integrity, capsys, "repo_manifest.yaml", "line 2", "an alias (*name) is not allowed")
    out = task.dir / "tests_base.txt"
    listing = ["list-tests", str(task.repo.path), "--manifest", str(task.manifest), "-o", str(out)]
    exit_2_one_line(listing, capsys, "repo_manifest.yaml", "an alias (*name) is not allowed")
    assert time.monotonic() - started < 2 and not out.exists()


def test_a_manifest_over_1_mib_is_refused(task: Task, capsys: pytest.CaptureFixture[str]) -> None:
    run = good_run(task)
    task.manifest.write_text("tests:\n  globs: ['tests/**']\n" + "# padding\n" * 110_000)
    integrity = ["integrity", str(task.dir), str(run), "--manifest", str(task.manifest)]
    exit_2_one_line(integrity, capsys, "repo_manifest.yaml", "larger than 1048576 bytes")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_snapshot_that_is_a_fifo_or_a_device_is_refused_at_once(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None, kind: str
) -> None:
    before = task.dir.parent / "before.txt"
    if kind == "fifo":
        os.mkfifo(before)
    else:
        before.symlink_to(kind)
    out = task.dir.parent / "runs" / "r"
    argv = ["capture", str(task.repo.path), "--base", "HEAD", "--before", str(before), "--out", str(out)]
    exit_2_one_line(argv, capsys, "before.txt", "not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_snapshot_written_to_a_fifo_or_a_device_is_refused_at_once(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None, kind: str
) -> None:
    """Writing to a FIFO blocks until something reads it; a device swallows the snapshot."""
    out = task.dir.parent / "before.txt"
    if kind == "fifo":
        os.mkfifo(out)
    else:
        out.symlink_to(kind)
    argv = ["snapshot", str(task.repo.path), "-o", str(out)]
    exit_2_one_line(argv, capsys, "before.txt: --output: not a regular file")
    assert not record_path(out).exists()


@pytest.mark.parametrize("name", ["workspace.diff", "ignored_created.txt", "git_dir_changes.txt"])
def test_a_capture_output_that_is_a_fifo_is_refused_at_once(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None, name: str
) -> None:
    before = task.dir.parent / "before.txt"
    write_snapshot(task.repo.path, before)
    out = task.dir.parent / "runs" / "r"
    out.mkdir(parents=True)
    os.mkfifo(out / name)
    argv = ["capture", str(task.repo.path), "--base", "HEAD", "--before", str(before), "--out", str(out)]
    exit_2_one_line(argv, capsys, f"{name}: not a regular file")


@pytest.mark.parametrize(
    "name",
    [
        "workspace.diff",
        "grade.json",
        "ignored_created.txt",
        "tests_list.txt",
        "tests_list.error",
        "tests_base.txt",
    ],
)
def test_a_run_or_task_file_that_is_a_fifo_is_refused_at_once(
    task: Task, capsys: pytest.CaptureFixture[str], deadline: None, name: str
) -> None:
    run = good_run(task)
    task.manifest.write_text('tests:\n  globs: ["tests/**"]\n  list: "true"\n')
    (run / "tests_list.txt").write_text("tests/test_calc.py::test_zero\n")
    path = (task.dir if name == "tests_base.txt" else run) / name
    if name == "tests_list.error":
        (run / "tests_list.txt").unlink()
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    exit_2_one_line(grade_argv(task, run), capsys, name, "not a regular file")
    assert not (run / "metrics.json").exists()


def test_a_problem_is_an_immutable_value_without_dataclasses() -> None:
    """Problem is a plain class (every command imports grading.errors; dataclasses would bring inspect):
    equal and hashed by path, message and type, not its context; immutable; pickled whole."""
    import pickle

    from grading.errors import Problem

    problem = Problem("blockers[1].evidence", "too short", "too_short", {"min_length": 1})
    assert problem == Problem("blockers[1].evidence", "too short", "too_short")
    assert hash(problem) == hash(Problem("blockers[1].evidence", "too short", "too_short"))
    assert problem != Problem("blockers[1].evidence", "too short")
    with pytest.raises(AttributeError):
        problem.message = "other"
    copy = pickle.loads(pickle.dumps(problem))
    assert copy == problem and copy.ctx == {"min_length": 1}
    assert InputErrors("f.json", [problem, ("where", "what")]).errors == [
        ("blockers[1].evidence", "too short"),
        ("where", "what"),
    ]
