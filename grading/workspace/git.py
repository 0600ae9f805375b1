"""git for the workspace diff (grading/workspace/diff.py): the hardened runner with the user's and the
repository's config neutralised, the small git look-ups the snapshot, its private record and the capture
share, and the scratch git directory their scans run in. grading/workspace/diff.py's docstring says why
each override is there."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from grading.errors import InputError
from grading.git import NO_COMMANDS_CONFIG, Git
from grading.git_quote import c_quote

# The capture's info/attributes, which outranks .gitattributes and .git/info/attributes. `!diff`: a `binary`
# or `-diff` attribute must not make a text change a binary patch the judge cannot read (git's own
# text-or-binary test decides, then grading/workspace/bytes.py's NUL rule). The rest switch off every
# conversion, so git hashes and diffs the bytes on disk (`-working-tree-encoding` is an error to git).
RAW_ATTRIBUTES = "* !diff -text -ident -filter !working-tree-encoding\n"

# A scratch git directory is a dozen small files made and removed per snapshot or capture; on a busy disk each
# mkdir, create or unlink costs a millisecond or more, more than the git run it serves. Memory (tmpfs) makes
# them free. Used when it has room to spare for what a scratch directory may hold (the index copy, blobs of
# nested repositories' files, a checkout of converted files), and unless TMPDIR names another place.
_TMPFS = "/dev/shm"
_TMPFS_MIN_FREE = 1 << 30

# Config that shapes the diff text or the file lists, pinned so the repository's .git/config cannot change
# them. Keys a flag already pins (diff.external via --no-ext-diff, ...) are pinned here too, belt and braces.
_CONFIG_OVERRIDES: tuple[tuple[str, str], ...] = (
    # nothing the agent configured may run a command on the grading host (hooks included: `git add -N`
    # writes the index, which runs post-index-change)
    *NO_COMMANDS_CONFIG,
    # the stat cache and index extensions of the copy must not reach outside the scratch directory
    ("core.untrackedCache", "false"),
    ("core.splitIndex", "false"),
    ("index.sparse", "false"),
    ("core.sparseCheckout", "false"),
    ("core.trustctime", "true"),
    ("core.checkStat", "default"),
    # what counts as a change
    ("core.fileMode", "true"),
    ("core.symlinks", "true"),
    ("core.ignoreCase", "false"),
    # protections for checkouts on case-insensitive file systems: we never check out, and a file the agent
    # named GIT~1/x must still be in the diff
    ("core.protectNTFS", "false"),
    ("core.protectHFS", "false"),
    ("core.precomposeUnicode", "false"),
    ("core.autocrlf", "false"),
    ("core.eol", "lf"),
    ("core.safecrlf", "false"),
    ("core.excludesFile", os.devnull),  # the user's ~/.config/git/ignore is read even without config
    ("core.attributesFile", os.devnull),
    ("status.showUntrackedFiles", "all"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "dirty"),
    ("diff.submodule", "short"),
    # the text of the diff
    ("core.quotePath", "true"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.srcPrefix", "a/"),
    ("diff.dstPrefix", "b/"),
    ("diff.relative", "false"),
    ("diff.renames", "false"),
    ("diff.context", "3"),
    ("diff.interHunkContext", "0"),
    ("diff.algorithm", "default"),
    ("diff.indentHeuristic", "true"),
    ("diff.suppressBlankEmpty", "false"),
    ("diff.orderFile", os.devnull),
    ("color.ui", "false"),
    ("color.diff", "false"),
    ("core.abbrev", "40"),
    ("core.bigFileThreshold", "512m"),
)


class WorkspaceGit(Git):
    """git in one workspace, with the user's and the repository's config neutralised (module docstring)."""

    def __init__(self, workspace: Path, extra_env: Mapping[str, str] | None = None) -> None:
        super().__init__(workspace, extra_env, _CONFIG_OVERRIDES)

    @property
    def workspace(self) -> Path:
        return self.cwd

    @workspace.setter
    def workspace(self, path: Path) -> None:
        self.cwd = path

    def neutralise_filters(self) -> None:
        """Switch off every clean/smudge/process filter the repository configures (they run commands)."""
        names = self.run("config", "--null", "--name-only", "--list").split(b"\0")
        drivers: set[str] = set()
        for raw in names:
            name = raw.decode("utf-8", "surrogateescape")
            if name.lower().startswith("filter.") and name.count(".") >= 2:
                drivers.add(name[len("filter.") : name.rindex(".")])
        for driver in sorted(drivers):
            for key in ("clean", "smudge", "process"):
                self.config.append((f"filter.{driver}.{key}", ""))
            self.config.append((f"filter.{driver}.required", "false"))


def resolve_base(git: WorkspaceGit, base: str) -> str:
    out = git.run(
        "rev-parse", "--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}", ok_codes=(0, 1, 128)
    )
    commit = out.decode("ascii", "replace").strip()
    if not commit:
        raise InputError(
            git.workspace, f"unknown revision {base!r} (not a commit in this repository)", "--base"
        )
    return commit


class GitLayout:
    """Where a capture's or snapshot's git keeps its index and objects, and its object format. (Plain
    classes here and in the capture: ``dataclasses`` and ``inspect`` were a fifth of its imports.)"""

    __slots__ = ("index", "objects", "object_format")

    def __init__(self, index: Path, objects: Path, object_format: str) -> None:
        self.index = index
        self.objects = objects  # resolved
        self.object_format = object_format


def look_up(git: WorkspaceGit, base: str | None = None) -> tuple[GitLayout, str | None]:
    """The layout of ``git``'s repository and, with ``base``, the commit it names (None when it names no
    commit): one ``git rev-parse`` where :func:`git_path`, :func:`resolve_base` and ``--show-object-format``
    would be four (each git process is a fixed cost of every capture)."""
    args = ["rev-parse", "--show-object-format", "--git-path", "index", "--git-path", "objects"]
    if base is not None:
        args += ["--verify", "--quiet", "--end-of-options", f"{base}^{{commit}}"]
    result = git.result(*args)
    lines = result.stdout.split(b"\n")
    # object format, index, objects, [commit], "" (a path holding a newline: ask one thing at a time)
    expected = 4 if base is None or result.returncode != 0 else 5
    if result.returncode not in (0, 1, 128) or len(lines) != expected or lines[-1]:
        layout = GitLayout(
            git_path(git, "index"),
            git_path(git, "objects").resolve(),
            git.run("rev-parse", "--show-object-format").decode("ascii", "replace").strip(),
        )
        return layout, None if base is None else resolve_base(git, base)
    layout = GitLayout(
        git.workspace / os.fsdecode(lines[1]),
        (git.workspace / os.fsdecode(lines[2])).resolve(),
        lines[0].decode("ascii", "replace").strip(),
    )
    if base is None or result.returncode != 0:
        return layout, None
    return layout, lines[3].decode("ascii", "replace").strip() or None


def git_path(git: WorkspaceGit, name: str) -> Path:
    out = os.fsdecode(git.run("rev-parse", "--git-path", name).rstrip(b"\n"))
    return git.workspace / out  # absolute for linked worktrees, relative to the work tree otherwise


def alternates_value(paths: Sequence[Path]) -> str:
    # GIT_ALTERNATE_OBJECT_DIRECTORIES is ':'-separated; an entry starting with '"' is C-quoted.
    entries = []
    for p in paths:
        raw = os.fsencode(p)
        entries.append(c_quote(raw) if b":" in raw or raw.startswith(b'"') else os.fsdecode(raw))
    return ":".join(entries)


def split_z(data: bytes) -> list[str]:
    return [os.fsdecode(item) for item in data.split(b"\0") if item]


def nul_joined(names: Iterable[bytes | str]) -> bytes:
    return b"".join((os.fsencode(n) if isinstance(n, str) else n) + b"\0" for n in names)


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[str]:
    """A temporary directory for a scratch git directory and its index, removed on exit: in memory
    (``/dev/shm``) when there is one with a GiB free and ``TMPDIR`` names no other place, else where
    ``tempfile`` puts it. In memory it is made and removed here, without ``tempfile`` and ``shutil``
    (whose imports, bz2 and lzma with it, were a tenth of `rubric capture`'s start-up)."""
    parent = None
    if not os.environ.get("TMPDIR"):
        try:
            fs = os.statvfs(_TMPFS)
        except OSError:
            fs = None
        if (
            fs is not None
            and fs.f_bavail * fs.f_frsize >= _TMPFS_MIN_FREE
            and os.access(_TMPFS, os.W_OK | os.X_OK)
        ):
            parent = _TMPFS
    if parent is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix=prefix) as name:
            yield name
        return
    while True:
        path = os.path.join(parent, prefix + os.urandom(6).hex())
        try:
            os.mkdir(path, 0o700)
            break
        except FileExistsError:
            continue
    try:
        yield path
    finally:
        _remove_tree(path)


def _remove_tree(path: str) -> None:
    """Remove the directory ``path`` and everything in it (no symbolic link is followed)."""
    try:
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


def copy_file(source: Path, target: Path, *, keep_mtime: bool = False) -> None:
    """Copy ``source``'s bytes to ``target``; with ``keep_mtime``, its mode and times too (what
    ``shutil.copy2`` keeps that git reads: an index's mtime decides its racily clean entries)."""
    target.write_bytes(source.read_bytes())
    if keep_mtime:
        st = os.stat(source)
        os.chmod(target, st.st_mode & 0o7777)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def scratch_git_dir(
    git: Git,
    scratch: Path,
    index_dir: Path,
    info_exclude: bytes,
    *,
    attributes: str | None = None,
    object_format: str | None = None,
) -> Path:
    """A scratch git directory whose ``info/exclude`` is ``info_exclude`` and whose ``info/attributes``
    (``attributes``; by default :data:`RAW_ATTRIBUTES`) outranks the workspace's; ``object_format`` is the
    repository's (asked of git when not given).

    A ``-diff`` or ``binary`` attribute (in ``.gitattributes``, or in ``.git/info/attributes``, which no
    diff shows) turns a text change into a binary patch: the judge could not read it and max_changed_lines
    would not count it. ``!diff`` leaves git's own text-or-binary test in charge. Conversions (``text``,
    ``eol``, ``ident``, ``working-tree-encoding``, filters) are off: the diff is of the bytes on disk
    (grading/workspace/bytes.py).
    """
    if object_format is None:
        object_format = git.run("rev-parse", "--show-object-format").decode("ascii", "replace").strip()
    git_dir = scratch / "gitdir"
    for sub in ("refs", "objects", "info"):
        (git_dir / sub).mkdir(parents=True)
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")
    config = "[core]\n\trepositoryformatversion = 0\n"
    if object_format and object_format != "sha1":
        config = f"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = {object_format}\n"
    (git_dir / "config").write_text(config)
    (git_dir / "info" / "attributes").write_text(RAW_ATTRIBUTES if attributes is None else attributes)
    (git_dir / "info" / "exclude").write_bytes(info_exclude)
    # A split index names its shared part, which git looks for beside the index's git directory.
    for shared in index_dir.glob("sharedindex.*"):
        copy_file(shared, git_dir / shared.name)
    return git_dir
