"""grading's one bounded reader of input files (open_input_file, read_input_bytes): a file over the bound is
refused by its size before it is opened, and a FIFO that takes a regular file's place after the first look
is refused, never waited on."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from grading import InputError, open_input_file, read_input_bytes


def test_a_file_over_the_bound_is_refused_by_its_size_before_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "workspace.diff"
    with huge.open("wb") as handle:
        handle.truncate(1_500_000_000)  # sparse: 1.5 GB that costs no disk
    opened: list[object] = []
    real_open = builtins.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", recording_open)
    with pytest.raises(InputError, match="larger than 1000 bytes; refused"):
        read_input_bytes(huge, 1000)
    with pytest.raises(InputError, match="larger than 1000 bytes; refused"):
        open_input_file(huge, 1000)
    assert huge not in opened and str(huge) not in opened


@pytest.mark.usefixtures("deadline")  # opened blocking, the FIFO would wait for a writer: failed after 5 s
def test_a_fifo_put_in_place_after_the_first_look_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    regular = tmp_path / "regular.diff"
    regular.write_bytes(b"diff\n")
    pipe = tmp_path / "oracle.diff"
    os.mkfifo(pipe)
    real_stat = os.stat

    def stat_before_the_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if Path(path) == pipe else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat_before_the_swap)
    with pytest.raises(InputError, match="not a regular file"):
        read_input_bytes(pipe)


def test_a_regular_file_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(b"x" * 1000)
    assert read_input_bytes(path, 1000) == b"x" * 1000
    with open_input_file(path, 1000) as handle:
        assert handle.read() == b"x" * 1000
