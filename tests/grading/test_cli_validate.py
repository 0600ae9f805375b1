"""`rubric validate` and `rubric schema` through the real entry point: exit codes, messages, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grading.cli.rubric import main
from grading.schema import rubric_json_schema
from tests.grading.rubric_helpers import minimal_rubric, valid_rubric, write_task

RUBRIC_BIN = Path(sys.executable).parent / "rubric"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_valid_rubric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_task(tmp_path, valid_rubric())
    assert run(["validate", str(path)], capsys) == (0, f"{path}: ok\n", "")


def test_an_invalid_rubric_names_file_and_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = valid_rubric()
    data["blockers"][1]["evidence"] = " "
    data["non_blockers"][0]["weight"] = 0
    path = write_task(tmp_path, data)
    code, out, err = run(["validate", str(path)], capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"rubric: error: {path}: blockers[1].evidence: must not be blank",
        f"rubric: error: {path}: non_blockers[0].weight: "
        "must be a number greater than 0 and at most 100, not 0",
    ]


def test_several_files_report_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_task(tmp_path / "a", minimal_rubric())
    data = valid_rubric()
    data["blockres"] = data.pop("blockers")
    bad = write_task(tmp_path / "b", data)
    missing = tmp_path / "c" / "rubric.json"
    code, out, err = run(["validate", str(good), str(bad), str(missing)], capsys)
    assert code == 2
    assert out == f"{good}: ok\n"
    assert err.splitlines() == [
        f"rubric: error: {bad}: blockers: required",
        f"rubric: error: {bad}: blockres: unknown key (did you mean 'blockers'?)",
        f"rubric: error: {missing}: file not found",
    ]


BAD_FILES: list[tuple[str, bytes | None, str]] = [
    (
        "malformed",
        b'{"schema": "repo_rubric.v1", "task": }',
        "line 1 column 38: malformed JSON: Expecting value",
    ),
    ("not-utf8", b'{"task": "\xe9"}', "not UTF-8 text (byte 10)"),
    ("empty", b"", "empty file; expected JSON"),
    ("array", b"[1, 2]", "a rubric is a JSON object"),
    ("duplicate-key", b'{"task": "a", "task": "b"}', "duplicate key 'task' in one object"),
    ("missing", None, "file not found"),
    ("directory", None, "is a directory, not a file"),
]


@pytest.mark.parametrize(("name", "raw", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_files_exit_2_with_one_line(
    name: str, raw: bytes | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if name == "directory":
        path = tmp_path
    elif raw is None:
        path = tmp_path / "nope.json"
    else:
        path = write_task(tmp_path, None, raw=raw)
    code, out, err = run(["validate", str(path)], capsys)
    assert code == 2 and out == ""
    assert err == f"rubric: error: {path}: {message}\n"


def test_calibration_file_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_task(tmp_path, valid_rubric())
    (path.parent / "calib" / "lazy2.diff").unlink()
    code, _, err = run(["validate", str(path)], capsys)
    assert code == 2
    assert err == f"rubric: error: {path}: calibration.lazy[1]: 'calib/lazy2.diff' does not exist\n"


def test_the_task_id_beside_the_rubric_must_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_task(tmp_path, valid_rubric())
    (path.parent / "task.json").write_text('{"id": "fix_df_fraction_gt1"}')
    assert run(["validate", str(path)], capsys)[0] == 0
    (path.parent / "task.json").write_text('{"id": "another_task"}')
    code, _, err = run(["validate", str(path)], capsys)
    assert code == 2
    assert f"{path}: task: 'fix_df_fraction_gt1' differs from the id 'another_task'" in err


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_task(tmp_path / "a", valid_rubric())
    bad = write_task(tmp_path / "b", None, raw=b"[]")
    code, out, err = run(["validate", "--json", str(good), str(bad)], capsys)
    assert code == 2 and err == ""
    assert json.loads(out) == {
        "ok": False,
        "files": [
            {"file": str(good), "ok": True, "errors": []},
            {"file": str(bad), "ok": False, "errors": [{"path": "", "message": "a rubric is a JSON object"}]},
        ],
    }
    code, out, _ = run(["validate", "--json", str(good)], capsys)
    assert code == 0 and json.loads(out)["ok"] is True


def test_the_shipped_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).parents[2] / "examples" / "tasks" / "fix_clockwise_polygon_area" / "rubric.json"
    assert run(["validate", str(example)], capsys)[0] == 0


def test_schema_prints_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["schema"], capsys)
    assert code == 0 and err == ""
    assert json.loads(out) == rubric_json_schema()


def test_validate_needs_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["validate"])
    assert caught.value.code == 2
    assert "FILE" in capsys.readouterr().err


def test_the_installed_command_never_prints_a_traceback(tmp_path: Path) -> None:
    malformed = write_task(tmp_path / "a", None, raw=b'{"blockers": [}')
    binary = write_task(tmp_path / "b", None, raw=bytes(range(256)))
    deep = write_task(tmp_path / "c", None, raw=b"[" * 200_000)
    result = subprocess.run(
        [
            str(RUBRIC_BIN),
            "validate",
            str(malformed),
            str(binary),
            str(deep),
            str(tmp_path),
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 5 and all(line.startswith("rubric: error: ") for line in lines)
    assert lines[0].startswith(f"rubric: error: {malformed}: line 1 column 15: malformed JSON")
