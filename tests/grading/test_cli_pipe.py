"""A reader that closes the pipe early (`rubric validate ... | head -1`) ends the command quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUBRIC = EXAMPLES / "tasks" / "fix_clockwise_polygon_area" / "rubric.json"


def test_a_reader_that_stops_early_gets_exit_141_and_no_traceback() -> None:
    code = "import sys; from grading.cli.rubric import main; sys.exit(main(sys.argv[1:]))"
    # Enough "ok" lines to overflow the pipe buffer after the reader is gone.
    args = ["validate", *([str(RUBRIC)] * 3000)]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.read(10)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err.decode(), err.decode()
    assert proc.returncode == 141
