"""Inputs an agent can shape to make a check slow, timed here rather than in the test suite (a wall-clock
assertion in a test fails whenever the machine is busy). The tests keep what these inputs must give.

    .venv/bin/python benchmarks/hostile_inputs.py [--repeat N]

Each hostile input is timed against an ordinary input of the same size through the same function, in the
same run: linear code stays within a small factor; a quadratic split or a backtracking glob would show up
as hundreds of times. The limits the tests used to assert are shown beside the times.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from _common import REPO_ROOT, Row, best_of, machine, print_table

sys.path.insert(0, str(REPO_ROOT))

from grading.checks.integrity import check_integrity
from grading.diffs import FileChange, parse_diff
from grading.globs import compile_glob, match_glob
from grading.schema import TestsConfig


def header_diff(name: str) -> str:
    return f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n"


def long_diff(files: int, lines: int) -> str:
    body = "".join(f"+line {i}\n" for i in range(lines))
    return "".join(
        f"diff --git a/gen/f{n}.txt b/gen/f{n}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/gen/f{n}.txt\n@@ -0,0 +1,{lines} @@\n{body}"
        for n in range(files)
    )


def globs_hostile() -> None:
    for _ in range(20):
        _globs_hostile()


def globs_ordinary() -> None:
    for _ in range(20):
        _globs_ordinary()


def _globs_hostile() -> None:
    compile_glob.cache_clear()
    path = "/".join(["d"] * 60) + "/file.txt"
    match_glob("**/a/**/b/**/c/**/d/**/e", path)
    match_glob("**/**/**/**/**/**/nope", path)
    match_glob("*.*.*.*.x", "." * 255)
    match_glob("**/*a*a*a*a*a*a*a*a*b", "d/" + "a" * 255)
    match_glob("*a*a*a*a*a*a*a*a*b", "a" * 254 + "/b")


def _globs_ordinary() -> None:
    compile_glob.cache_clear()
    path = "/".join(["d"] * 60) + "/file.txt"
    match_glob("**/file.txt", path)
    match_glob("d/**/nope", path)
    match_glob("*.x", "." * 255)
    match_glob("**/*b", "d/" + "a" * 255)
    match_glob("*b", "a" * 254 + "/b")


TESTS = TestsConfig(globs=["tests/**"], config_globs=["**/conftest.py"])


def deletions(count: int) -> list[FileChange]:
    changes = [
        FileChange(old_path=f"tests/d{i // 100}/test_{i}.py", new_path=None, status="deleted", removed=1)
        for i in range(count)
    ]
    return changes + [
        FileChange(old_path=None, new_path=f"pkg{i}/conftest.py", status="added", added=1)
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spaces = header_diff("d/" + " " * 300_000 + "x.txt")
    tenth = header_diff("d/" + " " * 30_000 + "x.txt")
    big = long_diff(50, 4000)
    few_big = long_diff(1, 200_000)
    hostile_changes = deletions(60_000)
    ordinary_changes = [
        c.model_copy(update={"old_path": f"src/m{i}.py"}) for i, c in enumerate(hostile_changes)
    ]
    cases: list[tuple[str, Callable[[], object], str, Callable[[], object], str]] = [
        ("globs, 20 times: 60 nested `**`, 8 `*` in one segment", globs_hostile,
         "one `*` or `**` each", globs_ordinary, "1 s"),
        ("`diff --git` header holding 300,000 spaces", lambda: parse_diff(spaces),
         "10 x the header with 30,000 (linear)", lambda: [parse_diff(tenth) for _ in range(10)], "1 s"),
        ("diff of 50 files x 4,000 added lines", lambda: parse_diff(big),
         "1 file x 200,000 lines", lambda: parse_diff(few_big), "10 s"),
        ("integrity: 60,000 test files deleted, 60,000 conftest.py added",
         lambda: check_integrity(TESTS, hostile_changes, None, None, None, None),
         "120,000 files matching no test glob",
         lambda: check_integrity(TESTS, ordinary_changes, None, None, None, None), "5 s"),
    ]  # fmt: skip
    rows = []
    notes = []
    for label, hostile, reference_label, reference, old_limit in cases:
        seconds = best_of(args.repeat, hostile)
        rows.append(Row(label, seconds, reference_label, best_of(args.repeat, reference), 10.0))
        notes.append(f"{label}: {seconds:.3f} s (the test's old limit: {old_limit})")
    print_table(
        "Hostile inputs against ordinary ones of the same size",
        rows,
        ["; ".join(notes) + ".", f"In-process, fastest of {args.repeat} runs each; {machine()}."],
    )


if __name__ == "__main__":
    main()
