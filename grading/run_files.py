"""The files of a task folder and a run folder: each name defined once, and the readers the run reader and
the checks share (test lists, ``tests_list.error``, ``ignored_created.txt`` with names shown as the diff
parser shows them)."""

from __future__ import annotations

from pathlib import Path

from grading.errors import InputError
from grading.git_quote import path_text
from grading.path_lists import IgnoredCreated, SelfIgnoringDir, read_ignored_created
from grading.strict_json import read_input_bytes

TASK_NAME = "task.json"
RUBRIC_NAME = "rubric.json"
RUN_NAME = "run.json"
GRADE_NAME = "grade.json"
DIFF_NAME = "workspace.diff"
ORACLE_DIFF_NAME = "oracle.diff"
ORACLE_GRADE_NAME = "oracle_grade.json"
TESTS_BASE_NAME = "tests_base.txt"
TESTS_LIST_NAME = "tests_list.txt"
TESTS_LIST_ERROR_NAME = "tests_list.error"
IGNORED_CREATED_NAME = "ignored_created.txt"
GIT_DIR_CHANGES_NAME = "git_dir_changes.txt"  # run dir: the paths under .git the run changed
LISTING_ERROR_MAX_BYTES = 32 * 1024


def read_test_list(path: Path) -> list[str] | None:
    """Test ids, one per line (blank lines skipped); None when the file does not exist."""
    if not path.exists() and not path.is_symlink():
        return None
    return parse_test_list(
        read_input_bytes(path), path
    )  # a regular file of at most 64 MiB (a FIFO would block)


def parse_test_list(data: bytes, path: str | Path) -> list[str]:
    """A test list's bytes read as :func:`read_test_list` reads the file (``path`` names it in errors)."""
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise InputError(path, "NUL byte: binary data, not a list of test ids", f"line {line}")
    # Ids that are not UTF-8 stay comparable between the two lists (same bytes, same text).
    text = data.decode("utf-8", errors="backslashreplace")
    return [line.strip() for line in text.split("\n") if line.strip()]


def read_listing_error(run_dir: Path) -> str | None:
    """The text of ``run_dir/tests_list.error`` (why tests.list failed in the workspace), or None when the
    file does not exist. InputError when it is not a regular file, is over 32 KiB, or sits beside a
    ``tests_list.txt`` (one capture writes one of the two)."""
    path = run_dir / TESTS_LIST_ERROR_NAME
    if not path.exists() and not path.is_symlink():
        return None
    if (run_dir / TESTS_LIST_NAME).exists():
        raise InputError(path, f"beside {TESTS_LIST_NAME}: a capture writes one of the two, never both")
    return listing_error_text(read_input_bytes(path, LISTING_ERROR_MAX_BYTES), path)


def listing_error_text(data: bytes, path: str | Path) -> str:
    """``tests_list.error``'s bytes as :func:`read_listing_error` reads the file: at most 32 KiB."""
    if len(data) > LISTING_ERROR_MAX_BYTES:
        raise InputError(path, f"larger than {LISTING_ERROR_MAX_BYTES} bytes; refused")
    text = data.decode("utf-8", errors="backslashreplace")
    return text.strip() or "(no message)"


def _shown(name: str) -> str:
    # Names that are not UTF-8 come back with surrogate escapes; show them as the diff parser does.
    return path_text(name.encode("utf-8", errors="surrogateescape"))


def read_ignored_created_shown(path: Path) -> IgnoredCreated:
    """``ignored_created.txt`` as `rubric capture` writes it, names shown as the diff parser shows them;
    an absent file is an empty one."""
    return shown_ignored(read_ignored_created(path))


def shown_ignored(found: IgnoredCreated) -> IgnoredCreated:
    """``found`` with its names shown as the diff parser shows them (names that are not UTF-8 as \\xNN)."""
    return IgnoredCreated(
        files=[_shown(f) for f in found.files],
        self_ignoring_dirs=[
            SelfIgnoringDir(path=_shown(d.path), files=[_shown(f) for f in d.files])
            for d in found.self_ignoring_dirs
        ],
        special_files=[_shown(f) for f in found.special_files],
    )
