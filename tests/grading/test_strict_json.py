"""The one strict JSON reader (grading.strict_json: read_json, parse_json) the CLI and the web app share."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.errors import InputError
from grading.strict_json import parse_json, read_json


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"a": 1, "a": 2}', "duplicate key 'a' in one object"),
        (b'{"a": NaN}', "malformed JSON: NaN is not valid JSON (numbers must be finite)"),
        (b'{"a": 1e400}', "number 1e400 is out of range (a JSON number must fit a double)"),
        (b'{"a": -1e400}', "number -1e400 is out of range (a JSON number must fit a double)"),
        (
            b'{"a": ' + b"7" * 5000 + b"}",
            "number 777777777777...(5000 chars) is out of range (a JSON number must fit a double)",
        ),
        (
            b'{"a": -' + b"7" * 5000 + b"}",
            "number -77777777777...(5001 chars) is out of range (a JSON number must fit a double)",
        ),
        (b"\xff", "not UTF-8 text (byte 0)"),
    ],
)
def test_it_refuses_what_no_json_writer_gives_back(raw: bytes, message: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as refused:
        parse_json(raw, "upload/rubric.json")
    assert (refused.value.file, refused.value.message) == ("upload/rubric.json", message)
    path = tmp_path / "rubric.json"
    path.write_bytes(raw)
    with pytest.raises(InputError) as refused_file:
        read_json(path)
    assert (refused_file.value.file, refused_file.value.message) == (str(path), message)


def test_it_keeps_large_finite_numbers() -> None:
    assert parse_json(b'{"a": 1e300, "b": ' + b"9" * 300 + b', "c": -0.5}', "x.json") == {
        "a": 1e300,
        "b": int("9" * 300),
        "c": -0.5,
    }
