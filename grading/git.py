"""git, run one way for the package and the app: isolated from the host's config, bounded in time and output.

Every git command of grading (capture, the base tree) and of the app (re-review, export) goes through
:class:`Git`:

- the user's global and the system config (and system attributes) are switched off, every ``GIT_*``
  variable of the caller except ``GIT_EXEC_PATH`` is dropped (a caller's ``GIT_DIR`` or
  ``GIT_EXTERNAL_DIFF`` would point git somewhere else), prompts are off and messages are in the C locale;
- config overrides are passed through ``GIT_CONFIG_COUNT`` (not ``-c``, so a key holding ``=`` stays
  intact); the default, :data:`NO_COMMANDS_CONFIG`, lets nothing a repository configures run a command
  (fsmonitor, hooks, an external diff, automatic gc and maintenance);
- a command runs at most ``timeout`` seconds and prints at most ``max_output`` bytes on stdout (only the
  last :data:`STDERR_KEEP_BYTES` of stderr are kept): past either it is killed, with its process group,
  and :class:`GitError` says which bound it hit. A caller that needs only part of the output (the head of
  a large blob, a count of its lines) hands it to a ``sink`` instead, which may stop git early.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from grading.diff_rules import MAX_DIFF_BYTES
from grading.errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: every command loads this module
if TYPE_CHECKING:
    from typing import IO

DEFAULT_TIMEOUT = 600.0  # seconds; packing a large repository's objects is the slowest call
# The diff reader takes at most MAX_DIFF_BYTES; no listing or object the callers read is larger in practice.
DEFAULT_MAX_OUTPUT = 2 * MAX_DIFF_BYTES
STDERR_KEEP_BYTES = 64 * 1024
_CHUNK = 1 << 16

# Nothing the repository configures may run a command on this host.
NO_COMMANDS_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("diff.external", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)


class GitError(InputError):
    """git could not run, failed, ran past its time or printed past its output bound."""


class GitTimeout(GitError):
    """git ran longer than it was allowed to."""


class GitResult:
    """How one git process ended. A plain class, not a dataclass: every command imports this module, and
    ``dataclasses`` (through ``inspect``) was a fifth of `rubric capture`'s imports."""

    __slots__ = ("returncode", "stdout", "stderr", "stopped")

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes, stopped: bool = False) -> None:
        self.returncode = returncode
        self.stdout = stdout  # empty when a sink took it
        self.stderr = stderr  # its last STDERR_KEEP_BYTES
        self.stopped = stopped  # the sink had read enough: git was killed before it finished

    def last_error_line(self) -> str:
        lines = self.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self.returncode}"


def isolated_env(
    config: Sequence[tuple[str, str]] = (), extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment git runs with: the caller's minus ``GIT_*``, the host config off, ``config`` on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k == "GIT_EXEC_PATH"}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        # $(prefix)/etc/gitattributes is host config like /etc/gitconfig.
        GIT_ATTR_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for i, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    env.update(extra or {})
    return env


def _command(args: Sequence[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(proc.pid, signal.SIGKILL)


def run_git(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    stdin: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    sink: Callable[[bytes], bool] | None = None,
) -> GitResult:
    """``git --no-pager args`` in ``cwd`` with exactly ``env``, whatever its exit code. Raises
    :class:`GitError` when git cannot start or prints more than ``max_output`` bytes, :class:`GitTimeout`
    past ``timeout`` seconds.

    With ``sink``, stdout is not kept: each chunk goes to ``sink`` as it arrives (``max_output`` does not
    apply, the sink bounds what it keeps), and when it returns False git is killed there and the result
    says ``stopped``."""
    command = _command(args)
    try:
        proc = subprocess.Popen(
            ["git", "--no-pager", *args],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its children (pack-objects, a filter) are killed with it
        )
    except FileNotFoundError as exc:
        raise GitError(None, "git is not installed or not on PATH") from exc
    except OSError as exc:
        raise GitError(cwd, f"cannot run git {command}: {exc.strerror or exc}") from exc
    out = bytearray()
    err = bytearray()
    too_large = threading.Event()
    stopped = threading.Event()

    def read_out(stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), _CHUNK):
            if sink is not None:
                if not sink(chunk):
                    stopped.set()
                    _kill(proc)
                    return
                continue
            if len(out) + len(chunk) > max_output:
                too_large.set()
                _kill(proc)
                return
            out.extend(chunk)

    def read_err(stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), _CHUNK):
            err.extend(chunk)
            if len(err) > STDERR_KEEP_BYTES:
                del err[: len(err) - STDERR_KEEP_BYTES]

    def write_in(stream: IO[bytes], data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):  # git may exit before reading it all
            stream.write(data)
        with contextlib.suppress(BrokenPipeError, OSError):
            stream.close()

    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(target=read_out, args=(proc.stdout,), daemon=True),
        threading.Thread(target=read_err, args=(proc.stderr,), daemon=True),
    ]
    if stdin is not None:
        assert proc.stdin is not None
        threads.append(threading.Thread(target=write_in, args=(proc.stdin, stdin), daemon=True))
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        timed_out = not _wait(proc, timeout)
    finally:
        _kill(proc)  # the process group: nothing git started outlives the call
        proc.wait()
        for thread in threads:
            thread.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    if timed_out:
        raise GitTimeout(cwd, f"git {command} ran longer than {timeout:g} s")
    if too_large.is_set():
        raise GitError(cwd, f"git {command} printed more than {max_output} bytes")
    return GitResult(proc.returncode, bytes(out), bytes(err), stopped.is_set())


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for ``proc`` to exit, at most ``timeout`` seconds; whether it did. ``Popen.wait(timeout)`` polls
    with sleeps that grow to 50 ms, which on a 3 ms git call costs more than the call itself (a capture runs
    about ten): on Linux a pidfd wakes the caller the moment the process exits."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            pidfd = pidfd_open(proc.pid)
        except OSError:
            pidfd = None
        if pidfd is not None:
            try:
                waiter = select.poll()
                waiter.register(pidfd, select.POLLIN)
                ready = waiter.poll(max(0.0, timeout) * 1000)
            finally:
                os.close(pidfd)
            if not ready:
                return False
            proc.wait()
            return True
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


class Git:
    """git in one directory: :func:`isolated_env` with ``config`` and ``extra_env``, each call bounded by
    ``timeout`` seconds and ``max_output`` bytes."""

    def __init__(
        self,
        cwd: Path,
        extra_env: Mapping[str, str] | None = None,
        config: Iterable[tuple[str, str]] = NO_COMMANDS_CONFIG,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
    ) -> None:
        self.cwd = cwd
        self.extra_env = dict(extra_env or {})
        self.config: list[tuple[str, str]] = list(config)
        self.timeout = timeout
        self.max_output = max_output

    def env(self) -> dict[str, str]:
        return isolated_env(self.config, self.extra_env)

    def result(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        sink: Callable[[bytes], bool] | None = None,
    ) -> GitResult:
        """The run's exit code and output, whatever the exit code (``env`` replaces :meth:`env`; ``sink``
        as in :func:`run_git`)."""
        return run_git(
            args,
            self.cwd,
            self.env() if env is None else env,
            stdin=stdin,
            timeout=self.timeout if timeout is None else timeout,
            max_output=self.max_output,
            sink=sink,
        )

    def head(self, *args: str, max_bytes: int) -> tuple[bytes, bool]:
        """The first ``max_bytes`` of stdout of a run that exits 0, and whether there was more (git is
        stopped there: a large blob is never read whole); otherwise :class:`GitError`."""
        kept = bytearray()

        def keep(chunk: bytes) -> bool:
            kept.extend(chunk[: max_bytes + 1 - len(kept)])
            return len(kept) <= max_bytes

        result = self.result(*args, sink=keep)
        if not result.stopped and result.returncode != 0:
            raise GitError(self.cwd, f"git {_command(args)} failed: {result.last_error_line()}")
        return bytes(kept[:max_bytes]), len(kept) > max_bytes

    def code(self, *args: str) -> int:
        return self.result(*args).returncode

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        ok_codes: Iterable[int] = (0,),
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """stdout of a run that exits with one of ``ok_codes``; otherwise :class:`GitError` with git's last
        line of stderr."""
        result = self.result(*args, stdin=stdin, env=env)
        if result.returncode not in tuple(ok_codes):
            raise GitError(self.cwd, f"git {_command(args)} failed: {result.last_error_line()}")
        return result.stdout


def commit_on_new_branch(git: Git, branch: str, files: Sequence[tuple[str, bytes]], message: str) -> str:
    """Commit ``files`` (path in the repository, bytes) on top of HEAD as the new branch ``branch``, and
    return the commit. Only git's plumbing runs, against a private index in a temp folder: the checkout's
    work tree, its index and HEAD stay exactly as they were (objects and the new ref are all it adds).

    When the files are already what HEAD holds, the branch points at HEAD itself. An existing branch is
    never moved (``update-ref`` is told the ref must not exist yet). The commit's author and committer come
    from ``git``'s environment (``GIT_AUTHOR_NAME`` and so on)."""
    if not branch or branch.startswith("-"):
        raise GitError(git.cwd, f"bad branch name {branch!r}")
    ref = f"refs/heads/{branch}"
    if git.code("check-ref-format", ref) != 0:
        raise GitError(git.cwd, f"bad branch name {branch!r}")
    if git.code("rev-parse", "--verify", "--quiet", ref) == 0:
        raise GitError(git.cwd, f"branch {branch} already exists")
    head = git.result("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    parent = head.stdout.decode("ascii").strip() if head.returncode == 0 else None  # None: no commit yet
    entries = bytearray()
    for path, data in files:
        blob = git.run("hash-object", "-w", "--no-filters", "--stdin", stdin=data).decode("ascii").strip()
        entries += f"100644 {blob}\t{path}".encode() + b"\0"
    import tempfile  # only here: the capture's scratch directory is grading.workspace.git's

    with tempfile.TemporaryDirectory(prefix="rubric-index-") as scratch:
        private = {**git.env(), "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git.run("read-tree", *([parent] if parent else ["--empty"]), env=private)
        git.run("update-index", "-z", "--index-info", stdin=bytes(entries), env=private)
        tree = git.run("write-tree", env=private).decode("ascii").strip()
    if parent is not None and git.run("rev-parse", f"{parent}^{{tree}}").decode("ascii").strip() == tree:
        commit = parent
    else:
        commit_args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
        commit = git.run(*commit_args, stdin=message.encode()).decode("ascii").strip()
    git.run("update-ref", "-m", f"branch: created by export at {commit}", ref, commit, "")
    return commit
