"""Listing test ids (§3, "test cases removed"): the manifest's ``tests.list`` run in a checkout.

CONTRACT: ``list_command(tests, manifest_path) -> list[str]`` (the argument vector),
``run_test_list(checkout, argv, out, *, timeout, max_bytes) -> TestListing`` (writes ``out`` only on
success; raises :class:`ListingFailed` otherwise), ``write_listing_error(run_dir, failure)`` and
``read_listing_error(run_dir) -> str | None`` (``tests_list.error``: a listing that ran in the workspace
and failed).

How the command runs, and why:

- The manifest's string is split into words with POSIX shell quoting rules (``shlex.split``) and the
  words are executed directly, never by a shell: no pipes, redirections, ``&&``, globs or ``$VARIABLES``.
  The listing runs in a workspace the agent wrote, so nothing in it should reach a shell; a repository
  that needs a pipeline names a script of its own (``list: "bash scripts/list_tests.sh"``) or asks for a
  shell itself (``sh -c "..."``); an unquoted shell operator in the string is refused with that advice. A
  relative program path (``./scripts/list``) is relative to the checkout; a bare name is looked up on
  ``PATH``.
- The environment is pinned: ``PATH`` is the caller's, ``HOME`` and ``TMPDIR`` a fresh scratch directory,
  UTF-8 C locale, ``TZ=UTC``, ``PYTHONHASHSEED=0``, ``PYTHONDONTWRITEBYTECODE=1``, git's system and global
  config off. Nothing else of the caller's environment is passed (API keys, ``PYTHONPATH``, ``VIRTUAL_ENV``
  stay out). Standard input is empty.
- It runs in its own process group, killed as a whole when it exceeds the timeout or prints more than the
  cap (stdout or stderr), and after it exits, so nothing it started keeps running.
- The output is written only when the command exits 0 in time, under the cap, without a NUL byte: a
  partial list would report every missing id as a removed test case.
- A failure is the workspace's (:attr:`ListingFailed.in_workspace`) when the command ran and failed, or
  when its program is a path inside the checkout that cannot be started: the agent wrote both. A bare or
  absolute program that cannot be started is the caller's environment at fault. ``rubric capture`` records
  the workspace's failures in ``tests_list.error`` (the message and the last lines of stderr, capped), so
  that grading can make the run not mergeable when the same listing succeeds on the base (§3).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from grading.errors import InputError
from grading.run_files import LISTING_ERROR_MAX_BYTES, TESTS_BASE_NAME, TESTS_LIST_ERROR_NAME, TESTS_LIST_NAME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (`rubric capture` imports this module)
if TYPE_CHECKING:  # the rubric schema is large; `rubric capture` without --manifest never needs it
    from grading.schema import TestsConfig

__all__ = [
    "TESTS_BASE_NAME",
    "TESTS_LIST_ERROR_NAME",
    "TESTS_LIST_NAME",
    "ListingFailed",
    "TestListing",
    "list_command",
    "run_test_list",
    "write_listing_error",
]

DEFAULT_TIMEOUT = 600.0  # seconds
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_POLL = 0.05  # seconds between checks of the output size and the clock
_STDERR_TAIL_BYTES = 8192  # read from the end of stderr for the failure's last lines
_STDERR_TAIL_LINES = 20
_LINE_CHARS = 300
# Unquoted, these are shell syntax that the listing never interprets (it runs no shell).
_SHELL_CHARS = frozenset("|&;<>()`$")


class ListingFailed(Exception):
    """The list command could not start, failed, timed out or printed too much; nothing was written.

    ``in_workspace``: the failure is the checkout's (the command ran, or its program is a path inside the
    checkout); false when the program could not be started from ``PATH`` or an absolute path.
    ``stderr_tail``: the last lines of what it printed on stderr (capped, non-printables escaped).
    """

    def __init__(self, message: str, *, in_workspace: bool = True, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.in_workspace = in_workspace
        self.stderr_tail = stderr_tail


class TestListing:
    """What :func:`run_test_list` wrote. (A plain class: `rubric capture` imports this module, and
    ``dataclasses`` would bring ``inspect``.)"""

    __test__ = False  # not a pytest test class
    __slots__ = ("path", "test_ids", "bytes")

    def __init__(self, path: str, test_ids: int, bytes: int) -> None:
        self.path = path
        self.test_ids = test_ids  # non-blank lines
        self.bytes = bytes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TestListing):
            return NotImplemented
        return self.json_safe() == other.json_safe()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"TestListing(path={self.path!r}, test_ids={self.test_ids!r}, bytes={self.bytes!r})"

    def json_safe(self) -> dict[str, object]:
        return {"path": self.path, "test_ids": self.test_ids, "bytes": self.bytes}


def list_command(tests: TestsConfig | None, manifest_path: Path) -> list[str] | None:
    """The argument vector of ``tests.list``, or None when the manifest declares none.

    InputError naming the manifest and ``tests.list`` when the string does not split into words.
    """
    if tests is None or tests.list_command is None:
        return None
    try:
        import shlex  # only when a manifest names tests.list

        argv = shlex.split(tests.list_command)
    except ValueError as exc:
        raise InputError(manifest_path, f"not a command line: {exc}", "tests.list") from None
    if not argv:
        raise InputError(manifest_path, "no command", "tests.list")
    if (operator := _shell_operator(tests.list_command)) is not None:
        raise InputError(
            manifest_path,
            f"{operator!r} is shell syntax, and tests.list runs no shell (its words are run directly); "
            'to use a shell, write it as sh -c "..." or name a script',
            "tests.list",
        )
    return argv


def _shell_operator(command: str) -> str | None:
    """The first unquoted shell operator (``|``, ``&&``, ``>``, ``;``, ``$``...) in ``command``, or None.

    Quoting follows POSIX shell rules, as ``shlex.split`` does: ``sh -c "a | b"`` holds none.
    """
    quote: str | None = None
    chars = iter(command)
    for char in chars:
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            next(chars, None)  # escaped, inside double quotes or out
        elif quote == '"':
            quote = None if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char in _SHELL_CHARS:
            return char * 2 if char in "&|" and next(chars, "") == char else char
    return None


def pinned_env(scratch: Path) -> dict[str, str]:
    """The environment the list command runs in (module docstring)."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUTF8": "1",
        "NO_COLOR": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(proc.pid, signal.SIGKILL)


def _printable(line: str) -> str:
    text = "".join(
        c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else "?" for c in line.strip()
    )
    return text[:_LINE_CHARS]


def _stderr_tail(path: Path) -> str:
    """The last non-blank lines of stderr (at most 20 of at most 300 characters, from its last 8 KiB)."""
    start = max(0, _size(path) - _STDERR_TAIL_BYTES)
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(_STDERR_TAIL_BYTES)
    if start > 0:
        data = data.partition(b"\n")[2]  # the first line is cut
    lines = [line for line in data.decode("utf-8", "backslashreplace").splitlines() if line.strip()]
    return "\n".join(_printable(line) for line in lines[-_STDERR_TAIL_LINES:])


def run_test_list(
    checkout: Path,
    argv: list[str],
    out: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> TestListing:
    """Run ``argv`` in ``checkout`` and write what it prints to ``out`` (atomically).

    Raises ListingFailed (nothing written) when the command cannot start, exits non-zero, runs past
    ``timeout`` seconds or prints more than ``max_bytes`` on stdout or stderr, or prints a NUL byte;
    InputError when ``checkout`` is not a directory or ``out`` cannot be written.
    """
    if not checkout.is_dir():
        raise InputError(checkout, "not a directory")
    if not out.parent.is_dir():
        raise InputError(out.parent, "not a directory")
    program = argv[0]
    import tempfile  # only when tests.list runs

    with tempfile.TemporaryDirectory(prefix="rubric-tests-list-") as scratch_name:
        scratch = Path(scratch_name)
        stdout_path, stderr_path = scratch / "stdout", scratch / "stderr"
        home = scratch / "home"
        home.mkdir()
        with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=checkout,
                    env=pinned_env(home),
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=stderr,
                    start_new_session=True,
                )
            except OSError as exc:
                # A program path inside the checkout is the workspace's file; a bare name is found on PATH.
                ours = "/" in program and not os.path.isabs(program)
                raise ListingFailed(
                    f"cannot run {program!r}: {exc.strerror or exc}", in_workspace=ours
                ) from None
            deadline = time.monotonic() + timeout
            problem: str | None = None
            try:
                while True:
                    try:
                        proc.wait(timeout=_POLL)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                    if max(_size(stdout_path), _size(stderr_path)) > max_bytes:
                        problem = f"printed more than {max_bytes} bytes"
                        break
                    if time.monotonic() > deadline:
                        problem = f"did not finish within {timeout:g} s"
                        break
            finally:
                _kill_group(proc)
                proc.wait()
        if problem is None and max(_size(stdout_path), _size(stderr_path)) > max_bytes:
            problem = f"printed more than {max_bytes} bytes"
        tail = _stderr_tail(stderr_path)
        if problem is None and proc.returncode != 0:
            detail = tail.rsplit("\n", 1)[-1]
            problem = f"exited with status {proc.returncode}" + (f": {detail}" if detail else "")
        if problem is not None:
            raise ListingFailed(f"{program!r} {problem}", stderr_tail=tail)
        data = stdout_path.read_bytes()
        if b"\0" in data:
            line = data[: data.index(b"\0")].count(b"\n") + 1
            raise ListingFailed(f"{program!r} printed a NUL byte (line {line}): binary output, not test ids")
        from grading.atomic import write_atomic  # here: it loads tempfile, which a capture does without

        write_atomic(out, data)
    ids = sum(1 for line in data.split(b"\n") if line.strip())
    return TestListing(path=str(out), test_ids=ids, bytes=len(data))


def write_listing_error(path: Path, failure: ListingFailed) -> None:
    """Write ``path`` (a run's ``tests_list.error``, atomically): the failure's message, then the last lines
    of the listing's stderr; at most 32 KiB."""
    text = str(failure) + "\n" + (failure.stderr_tail + "\n" if failure.stderr_tail else "")
    data = text.encode("utf-8")[:LISTING_ERROR_MAX_BYTES]
    from grading.atomic import write_atomic

    write_atomic(path, data.decode("utf-8", errors="ignore").encode("utf-8"))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
