"""The workspace diff (spec §3): an ignored-file snapshot before a run, and the capture after it.

CONTRACT: ``snapshot_ignored(workspace) -> list[str]``, ``write_snapshot(workspace, out) -> int``,
``capture(workspace, base, before, out_dir) -> CaptureResult`` (writes ``workspace.diff`` and
``ignored_created.txt`` into ``out_dir``). grading/path_lists.py reads the files back:
``read_ignored_created(path) -> IgnoredCreated`` for ``ignored_created.txt`` (``read_path_list`` gives its
lines only: files, and ``dir/`` entries), ``read_snapshot(path) -> list[str]`` (its ignored paths; the whole
file, with the recorded exclusion rules, is ``read_snapshot_file(path) -> Snapshot``). Which created
ignored files stay out of the diff is grading/workspace/ignores.py's; the private record of a v4 snapshot
is grading/workspace/record.py's.

Path-list files (the snapshot and ``ignored_created.txt``) hold one path per line, relative to the
workspace root, ``/``-separated, UTF-8, each line ending in ``\\n``. A name that a plain line cannot carry
is written C-quoted between double quotes, as git quotes paths: a name containing a control character
(newline, tab, ...), ``"`` or ``\\``, bytes that are not UTF-8, leading or trailing white space, or a name
starting with ``#``. Inside the quotes ``\\a \\b \\t \\n \\v \\f \\r \\" \\\\`` and three-digit octal
``\\ooo`` escape one byte each. Other non-ASCII UTF-8 (``naïve café.txt``) stays as it is. Lines starting
with ``#`` are comments. Names that are not UTF-8 come back as ``str`` with surrogate escapes
(``os.fsdecode``).

The snapshot starts with the line ``# rubric snapshot v4`` (v3 and older are still read, see below), which is
how a wrong ``--before`` file is told apart. Its second line is ``# info/exclude: "..."``: the bytes of the
workspace's ``.git/info/exclude`` at snapshot time, always C-quoted as above (``""`` when the file is absent
or empty). That file is an exclusion source outside the tree, so no diff shows an edit to it: the capture
lists untracked and ignored files with the recorded content instead of the current one (see below). Then, per
``.gitignore`` in the work tree, a ``# ignore file: "<path>"`` line and a ``# ignore rules: "<bytes>"`` line
(both C-quoted): the rules that existed before the run. The ignored paths follow, one per line. Version 2 (no
``.gitignore`` record) is still read.
Version 1 (``# rubric snapshot v1``, paths only) is still read, but it lacks the recorded exclusion rules,
so a capture from a v1 snapshot falls back to the workspace's current ``info/exclude``: a file the agent
excluded there during the run is then missing from the diff (``CaptureResult.exclude_rules_recorded`` is
false, and the CLI says so).

Version 4 (what ``write_snapshot`` writes) has the v3 text and a private record beside the file: the directory
``FILE.git`` (:func:`record_path`), a git directory of its own holding a pack of HEAD's and the index's
objects, HEAD, every ref, a copy of the index and its listing, the paths of HEAD's ``.gitattributes`` files
and a manifest of the workspace's ``.git`` (kind, stat and sha256 of every path; for ``.git/index`` the hash
of its entries, not of its stat cache). A capture from it reads nothing of the workspace's ``.git``: git runs
with the record as ``GIT_DIR``, so a run that broke or removed ``.git`` is diffed like any other, and the
paths under ``.git`` that differ from the manifest are written to ``git_dir_changes.txt`` (docs/capture.md
says what counts).

How the capture works, and why:

- git runs with the user's system and global config switched off, every ``GIT_*`` variable of the caller
  dropped, and explicit overrides (``GIT_CONFIG_COUNT``) for everything the repository's own
  ``.git/config`` could set to change the diff's text (prefixes, colour, quoting, context) or to run a
  command (``core.fsmonitor``, hooks, ``filter.<driver>.clean/process``, external diff, textconv). The agent
  wrote that config, so nothing in it may run on the grading host or shape what scope and the judge see.
- The diff is ``git diff --binary --full-index --no-renames BASE`` against the working tree, so commits the
  agent made count, a move is a deletion plus an addition, and ``git apply`` of the file on a clean
  checkout of BASE gives back the workspace's tree (binary files, modes and symlinks included).
- Untracked files are added with intent-to-add (``git add -N``) to a scratch copy of the index, with a
  scratch object directory in front of the repository's own, so neither the real index nor the object
  store changes. ``assume-unchanged`` and ``skip-worktree`` bits are cleared in the copy: they would hide
  edits to tracked files.
- Everything after the snapshot's or capture's first look at the repository (the file scan, ``git add -N``,
  the diff) runs with one scratch git directory (``GIT_DIR``; the work tree is the workspace). Its
  ``info/attributes`` (``* !diff -text -ident -filter !working-tree-encoding``) outranks the workspace's
  ``.gitattributes`` and replaces its ``.git/info/attributes``: a ``binary`` or ``-diff`` attribute must not
  turn a text change into a binary patch the judge cannot read and max_changed_lines does not count, and no
  conversion applies, so the diff is of the bytes on disk (grading/workspace/bytes.py: a file whose bytes
  equal its base blob is never in it, a file a checkout of the base converted and the run left alone is
  not either, and a file holding a NUL byte anywhere is a binary patch). The system attributes file is
  not read (``GIT_ATTR_NOSYSTEM``), as the system config is not.
- A nested repository the agent created (a directory with its own ``.git``, with or without commits, left
  untracked or staged/committed as a gitlink the base does not have) would be a gitlink, which ``git apply``
  cannot reproduce and which hides every file inside it. Its files (not its ``.git``) are therefore
  included as ordinary added files, and its path is reported in ``nested_repositories``. Gitlinks the base
  already has (real submodules) stay gitlinks.
  Files inside it that the workspace's ignore rules ignore count as ignored files, like any other.
- A new file git refuses to track anywhere (``.GIT/x``: git compares ``.git`` case-insensitively) cannot
  be in any diff; it is reported in ``unrepresentable`` and listed in ``ignored_created.txt`` too, so
  ``denied_globs`` still sees it.
- "Untracked or ignored" is decided with the exclusion rules in force at snapshot time for every source
  outside the tree: the scan, the ``git add -N`` and the diff run with a scratch git directory whose
  ``info/exclude`` holds the recorded bytes, and ``core.excludesFile`` (the user's ``~/.config/git/ignore``
  included) is ``/dev/null`` at both ends. Otherwise an agent could write ``NOTES.md``, append it to
  ``.git/info/exclude`` and have it only in ``ignored_created.txt``, which scope checks against
  ``denied_globs`` alone, so neither ``allowed_globs`` nor the judge would see it.
- ``.gitignore`` files are in the tree, and rules the run wrote hide nothing: a file the run created
  that only rules which did not exist before the run ignore (a new or edited ``.gitignore`` anywhere,
  one that ignores itself included) is added to the diff like any untracked file
  (``CaptureResult.ignored_in_diff``). The rules before the run are the ``.gitignore`` files a v3 or v4
  snapshot records byte for byte (tracked, untracked and ignored ones) plus the recorded
  ``info/exclude``; ``git check-ignore`` decides in a shadow work tree holding only those files, so
  git's own matching applies. A v1/v2 snapshot has no record: the base commit's ``.gitignore`` files
  stand in (``ignore_files_recorded`` is false), which shows more, never less.
- The exception is a tool cache or virtual environment: a directory with no path in it before the run
  (base commit, snapshot, recorded ``.gitignore`` files) whose own new ``.gitignore`` has the single
  pattern ``*`` (what pytest, mypy, ruff and venv write) and that declares itself a cache: a
  ``CACHEDIR.TAG`` with the Cache Directory Tagging Specification's signature, or ``pyvenv.cfg`` at its
  root. Any other self-ignoring directory (``src/pkg/impl/`` with a ``*`` ``.gitignore``) hides nothing:
  its files are in the diff. Only the outermost such directory counts. It
  is one ``dir/`` line of ``ignored_created.txt``, followed by ``# files: N`` and one ``# - path``
  comment per file in it (path_lists.py's :func:`format_ignored_created`, read back with
  :func:`read_ignored_created`), so ``denied_globs`` and ``tests.config_globs`` still see every file while
  plain path-list readers skip the comments.
- Ignored files are listed file by file (no ``--directory`` collapsing), so a new file inside a directory
  that was already ignored before the run shows up in ``ignored_created.txt``.
- A FIFO, socket or device in the work tree (``workspace_special.py``) cannot be hashed: a tracked one
  made ``git diff`` fail. Each is absent for the diff (removed from the scratch index, so a tracked one shows
  as deleted), never opened, and named in ``CaptureResult.special_files`` and as a ``# special file:``
  comment of ``ignored_created.txt`` (integrity rule ``special_file``). git opens ``.gitignore``,
  ``.gitattributes`` and ``.gitmodules`` by name: one that is a FIFO reads as empty while git runs
  (:func:`rule_fifos_read_empty`) instead of blocking it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from grading.errors import InputError
from grading.git_quote import c_quote
from grading.path_lists import (
    EXCLUDE_PREFIX,
    GITIGNORE,
    IGNORE_FILE_PREFIX,
    IGNORE_RULES_PREFIX,
    SNAPSHOT_HEADER,
    SelfIgnoringDir,
    Snapshot,
    format_ignored_created,
    format_path_list,
    fs_text,
    is_gitignore,
    read_snapshot_file,
)
from grading.run_files import DIFF_NAME, GIT_DIR_CHANGES_NAME, IGNORED_CREATED_NAME
from grading.workspace.bytes import byte_exact_diff_and_paths
from grading.workspace.git import (
    GitLayout,
    WorkspaceGit,
    alternates_value,
    copy_file,
    git_path,
    look_up,
    nul_joined,
    resolve_base,
    scratch_directory,
    scratch_git_dir,
    split_z,
)
from grading.workspace.ignores import base_ignore_files, find_self_ignoring_dirs, ignored_by, read_regular
from grading.workspace.record import (
    RECORD_EXCLUDE,
    GitDirChanges,
    IndexLister,
    head_attribute_files,
    open_record,
    record_git,
    record_index_listing,
    record_layout,
    record_path,
    resolve_in_record,
    write_record,
)
from grading.workspace.special import WorkTree, rule_fifos_read_empty, walk_work_tree

_DIFF_FLAGS: tuple[str, ...] = (
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--unified=3",
    "--inter-hunk-context=0",
    "--diff-algorithm=myers",
    "--ignore-submodules=dirty",
    "--submodule=short",
    f"-O{os.devnull}",
)


class CaptureResult:
    """What ``capture`` wrote into the run directory. A plain class, not a pydantic model or a dataclass:
    `rubric capture` loads neither pydantic nor ``dataclasses`` (with ``inspect``), whose imports were most
    of the command's start-up."""

    __slots__ = (
        "base_commit", "diff_path", "diff_bytes", "files_changed", "ignored_created", "nested_repositories",
        "unrepresentable", "exclude_rules_recorded", "info_exclude_changed", "ignore_files_recorded",
        "self_ignoring_dirs", "ignored_in_diff", "git_dir_changes", "special_files",
    )  # fmt: skip

    def __init__(
        self,
        base_commit: str,
        diff_path: str,
        diff_bytes: int,
        files_changed: int,
        ignored_created: list[str],
        nested_repositories: list[str] | None = None,
        unrepresentable: list[str] | None = None,
        exclude_rules_recorded: bool = True,
        info_exclude_changed: bool = False,
        ignore_files_recorded: bool = True,
        self_ignoring_dirs: list[SelfIgnoringDir] | None = None,
        ignored_in_diff: list[str] | None = None,
        git_dir_changes: list[str] | None = None,
        special_files: list[str] | None = None,
    ) -> None:
        self.base_commit = base_commit
        self.diff_path = diff_path
        self.diff_bytes = diff_bytes
        self.files_changed = files_changed
        self.ignored_created = ignored_created
        # their files are in the diff as ordinary added files
        self.nested_repositories = [] if nested_repositories is None else nested_repositories
        # new files git refuses to track (.GIT/x); also in ignored_created
        self.unrepresentable = [] if unrepresentable is None else unrepresentable
        # False for a v1 snapshot: untracked vs ignored was then decided with the current .git/info/exclude
        self.exclude_rules_recorded = exclude_rules_recorded
        # .git/info/exclude differs from the snapshot's (the capture used the snapshot's)
        self.info_exclude_changed = info_exclude_changed
        # False for a v1/v2 snapshot: the base commit's .gitignore files stood in for the ones before the run
        self.ignore_files_recorded = ignore_files_recorded
        # in ignored_created.txt as one "dir/" line each
        self.self_ignoring_dirs = [] if self_ignoring_dirs is None else self_ignoring_dirs
        # ignored only by rules written during the run: in the diff
        self.ignored_in_diff = [] if ignored_in_diff is None else ignored_in_diff
        # paths under .git the run changed (git_dir_changes.txt); None without a private record (v3 snapshot)
        self.git_dir_changes = git_dir_changes
        # FIFOs, sockets and devices in the work tree: absent from the diff, never read (ignored_created.txt)
        self.special_files = [] if special_files is None else special_files

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CaptureResult):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "CaptureResult(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def json_safe(self) -> dict[str, object]:
        """The result as ``--json`` prints it, its fields in order. JSON cannot carry bytes that are not
        UTF-8: paths show them as \\xNN, as grading.git_quote.path_text does."""
        paths = {
            "ignored_created", "nested_repositories", "unrepresentable", "ignored_in_diff", "special_files",
        }  # fmt: skip
        data: dict[str, object] = {}
        for name in self.__slots__:
            value = getattr(self, name)
            if name in paths:
                value = [fs_text(p) for p in value]
            elif name == "git_dir_changes":
                value = None if value is None else [fs_text(p) for p in value]
            elif name == "diff_path":
                value = fs_text(value)
            elif name == "self_ignoring_dirs":
                value = [d.json_safe() for d in value]
            data[name] = value
        return data


def _toplevel_git(workspace: Path) -> WorkspaceGit:
    if not workspace.is_dir():
        raise InputError(workspace, "workspace is not a directory")
    git = WorkspaceGit(workspace)
    try:
        out = git.run("rev-parse", "--show-toplevel")
    except InputError as exc:
        # git's own reason (not a repository, dubious ownership, broken config) is the useful part
        raise InputError(workspace, f"not a git work tree ({exc.message})") from exc
    toplevel = Path(os.fsdecode(out.rstrip(b"\n")))
    # A directory inside some other checkout would silently diff that checkout instead.
    if toplevel.resolve() != workspace.resolve():
        raise InputError(workspace, f"not the top level of a git work tree (that is {toplevel})")
    git.workspace = toplevel
    git.neutralise_filters()
    return git


def _walk_nested(git: WorkspaceGit, directory: str) -> list[str]:
    """Files and symlinks under a nested repository, skipping every ``.git`` (paths relative to the root)."""
    found: list[str] = []
    stack = [directory.rstrip("/")]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(git.workspace / rel))
        except OSError:
            continue  # unreadable directory: nothing git could diff either
        for entry in entries:
            if entry.name == ".git":
                continue
            child = f"{rel}/{entry.name}"
            if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                found.append(child)
            elif entry.is_dir(follow_symlinks=False):
                stack.append(child)
    return sorted(found)


class _Scan:
    __slots__ = ("untracked", "nested_repositories", "nested_files", "ignored")

    def __init__(
        self,
        untracked: list[str],
        nested_repositories: list[str],
        nested_files: list[str],
        ignored: list[str],
    ) -> None:
        self.untracked = untracked  # untracked, not ignored, outside nested repositories
        self.nested_repositories = nested_repositories  # untracked or staged as a gitlink, not ignored
        self.nested_files = nested_files  # not-ignored files inside them
        self.ignored = ignored  # every ignored file, one by one, nested repositories included


def _scan(git: WorkspaceGit, staged_repositories: Sequence[str] = ()) -> _Scan:
    """The file lists; ``staged_repositories`` are nested repositories the agent staged as gitlinks."""
    # One walk of the work tree lists both: "?? path" untracked, "!! path" ignored, where two ls-files runs
    # (--others, and --others --ignored) would walk it twice in two processes. Tracked entries are skipped.
    listing = git.run(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional", "--no-renames",
        "--ignore-submodules=all",
    )  # fmt: skip
    others: list[str] = []
    ignored_entries: list[str] = []
    for entry in listing.split(b"\0"):
        if entry.startswith(b"?? "):
            others.append(os.fsdecode(entry[3:]))
        elif entry.startswith(b"!! "):
            ignored_entries.append(os.fsdecode(entry[3:]))
    # Without --directory git lists files one by one, except a nested repository: that is one "dir/" entry.
    ignored = [p for p in ignored_entries if not p.endswith("/")]
    for nested in (p for p in ignored_entries if p.endswith("/")):
        ignored.extend(_walk_nested(git, nested))
    nested_repos = [p.rstrip("/") for p in others if p.endswith("/")] + list(staged_repositories)
    nested_candidates = [f for repo in nested_repos for f in _walk_nested(git, repo)]
    nested_ignored: set[str] = set()
    if nested_candidates:
        stdin = nul_joined(nested_candidates)
        # exit 1 means "none of them is ignored"
        out = git.run("check-ignore", "--no-index", "-z", "--stdin", stdin=stdin, ok_codes=(0, 1))
        nested_ignored = set(split_z(out))
    ignored.extend(p for p in nested_candidates if p in nested_ignored)
    return _Scan(
        untracked=[p for p in others if not p.endswith("/")],
        nested_repositories=nested_repos,
        nested_files=[p for p in nested_candidates if p not in nested_ignored],
        ignored=sorted(set(ignored)),
    )


def _scan_unchanged(
    git: WorkspaceGit, snap: Snapshot, tree: WorkTree, index_listing: bytes
) -> tuple[_Scan, list[str]] | None:
    """The scan :func:`_scan` would give, but for the new files, when the ignore rules are those of the
    snapshot: the ``.gitignore`` files are those it recorded, byte for byte (the other sources are the
    recorded ``info/exclude`` and nothing else). Then the files ignored at the snapshot that are still there
    are still ignored, and a file neither in the index (the snapshot's, for a v4 record) nor ignored then is
    new: untracked, or ignored by the same rules. The scan of the rest and those new files; no ``git
    status`` is needed, and none at all when nothing is new (most runs only edit files). None when any of
    this is not so (a changed or new ``.gitignore``, a FIFO, a nested ``.git``, no record of the
    ``.gitignore`` files); git then lists them."""
    if snap.ignore_files is None or tree.special or tree.odd_git_names or tree.nested_git:
        return None
    tracked = {os.fsdecode(entry.partition(b"\t")[2]) for entry in index_listing.split(b"\0") if entry}
    ignored_before = set(snap.ignored)
    new = sorted(p for p in tree.files if p not in tracked and p not in ignored_before)
    if _regular_contents(git, [p for p in tree.files if is_gitignore(p)]) != snap.ignore_files:
        return None
    ignored = sorted(p for p in tree.files if p in ignored_before and p not in tracked)
    return _Scan(untracked=[], nested_repositories=[], nested_files=[], ignored=ignored), new


def _read_ignore_files(git: WorkspaceGit, scan: _Scan) -> dict[str, bytes]:
    """The bytes of every ``.gitignore`` in the work tree: tracked, untracked and ignored ones.

    git does not follow a ``.gitignore`` that is a symbolic link, so neither does this.
    """
    tracked = split_z(git.run("ls-files", "-z", "--cached", "--", f":(top,glob)**/{GITIGNORE}"))
    names = {*tracked, *scan.untracked, *scan.nested_files, *scan.ignored}
    return _regular_contents(git, [rel for rel in names if is_gitignore(rel)])


def _regular_contents(git: WorkspaceGit, paths: Sequence[str]) -> dict[str, bytes]:
    """The bytes of those of ``paths`` that are regular files, not through a symbolic link, in path order."""
    found: dict[str, bytes] = {}
    for rel in sorted(paths):
        try:
            fd = os.open(git.workspace / rel, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # deleted from the work tree, or a symlink: git reads no rules from it either
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                continue
            found[rel] = handle.read()
    return found


def _read_info_exclude(git: WorkspaceGit) -> bytes:
    """The current bytes of the workspace's ``info/exclude`` (the common one for a linked worktree)."""
    return _read_bytes_or_empty(git_path(git, "info/exclude"))


def _read_bytes_or_empty(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return b""  # git reads no patterns from it either
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from exc


def _use_scratch(
    git: WorkspaceGit,
    scratch: Path,
    info_exclude: bytes,
    fallback: Sequence[Path] = (),
    layout: GitLayout | None = None,
) -> None:
    """Point ``git`` at a scratch git directory, index copy and object directory inside ``scratch``.

    The repository's objects stay readable (alternates) and its work tree is the work tree; nothing of its
    git directory is written. The scratch directory's ``info/exclude`` holds ``info_exclude``.
    """
    if layout is None:
        layout, _ = look_up(git)
    real_index, objects = layout.index, layout.objects
    scratch_index = scratch / "index"
    if real_index.is_file():
        # copy2 keeps the index's mtime: git takes an entry whose file changed in the same second as the
        # index was written ("racily clean") for unchanged unless the index is older than that change, so a
        # fresh mtime on the copy would hide a same-size edit made right after `git status` or a checkout.
        copy_file(real_index, scratch_index, keep_mtime=True)
    git_dir = scratch_git_dir(
        git, scratch, real_index.parent, info_exclude, object_format=layout.object_format
    )
    git.extra_env = {
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(git.workspace),
        "GIT_INDEX_FILE": str(scratch_index),
        # git add -N writes the empty blob, update-index writes nested files' blobs: keep them out of
        # the repository's object store, and read everything else from it.
        "GIT_OBJECT_DIRECTORY": str(git_dir / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": alternates_value([objects, *fallback]),
    }


def take_snapshot(workspace: Path, record: Path | None = None) -> Snapshot:
    """The ignored files now in ``workspace`` (one entry per file, sorted) and its ``info/exclude``; with
    ``record``, also write the private record there (:func:`write_record`)."""
    git = _toplevel_git(workspace)
    info_exclude = _read_info_exclude(git)
    # The scan runs exactly as the capture's will, from a scratch git directory holding these same bytes.
    with scratch_directory("rubric-snapshot-") as scratch_name:
        layout, _ = look_up(git)
        real = WorkspaceGit(git.workspace)  # the workspace's own git directory, read only, for the record
        real.config = list(git.config)
        _use_scratch(git, Path(scratch_name), info_exclude, layout=layout)
        scan = _scan(git)
        ignore_files = _read_ignore_files(git, scan)
        if record is not None:
            write_record(real, layout.index, layout.objects, record)
    return Snapshot(version=4, ignored=scan.ignored, info_exclude=info_exclude, ignore_files=ignore_files)


def snapshot_ignored(workspace: Path) -> list[str]:
    """Every ignored file now in ``workspace``, one entry per file (no directory collapsing), sorted."""
    return take_snapshot(workspace).ignored


def write_snapshot(workspace: Path, out: Path) -> int:
    """Write the snapshot of ``workspace`` (v4: ignored files, ``info/exclude``, ``.gitignore`` files) to
    ``out``, and its private record to ``out.git`` (:func:`record_path`). Both must be outside the workspace.

    Returns the number of ignored paths.
    """
    record = record_path(out)
    _refuse_non_regular(out, "--output")
    if workspace.is_dir():
        inside = Path(os.path.abspath(workspace)).resolve()
        for target in (out, record):
            if Path(os.path.abspath(target)).resolve().is_relative_to(inside):
                raise InputError(target, "is inside the workspace, where the run could change it", "--output")
    snap = take_snapshot(workspace, record)
    lines = [SNAPSHOT_HEADER, EXCLUDE_PREFIX + c_quote(snap.info_exclude or b"")]
    for rel, rules in (snap.ignore_files or {}).items():
        lines += [IGNORE_FILE_PREFIX + c_quote(os.fsencode(rel)), IGNORE_RULES_PREFIX + c_quote(rules)]
    _write_text(out, "".join(line + "\n" for line in lines) + format_path_list(snap.ignored))
    return len(snap.ignored)


def _refuse_non_regular(path: Path, field: str | None = None) -> None:
    """InputError when ``path`` exists and is not a regular file: writing to a FIFO blocks until something
    reads it, and a device or a directory is no place for the file (checked before any work is done)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror or exc}", field) from None
    if stat.S_ISDIR(mode):
        raise InputError(path, "is a directory, not a file", field)
    if not stat.S_ISREG(mode):
        raise InputError(path, "not a regular file (a device, a pipe or a socket)", field)


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    except OSError as exc:
        raise InputError(path, f"cannot write: {exc.strerror or exc}") from exc


# ---- capture -----------------------------------------------------------------------------------------


class _Opened:
    """What a capture knows before it looks at the work tree."""

    __slots__ = ("snap", "record", "git", "layout", "base_commit", "fallback")

    def __init__(
        self,
        snap: Snapshot,
        record: Path | None,
        git: WorkspaceGit,
        layout: GitLayout,
        base_commit: str,
        fallback: list[Path],
    ) -> None:
        self.snap = snap
        self.record = record  # the snapshot's private record (v4), None for an older snapshot
        self.git = git
        self.layout = layout
        self.base_commit = base_commit
        self.fallback = fallback  # object directories read besides the record's (a base it lacks)


class _Found:
    """What the capture's git runs found in the scratch git directory."""

    __slots__ = ("diff", "scan", "self_ignoring", "still_ignored", "surfaced", "unrepresentable", "in_index")

    def __init__(
        self,
        diff: bytes,
        scan: _Scan,
        self_ignoring: list[SelfIgnoringDir],
        still_ignored: set[str],
        surfaced: list[str],
        unrepresentable: list[str],
        in_index: set[str],
    ) -> None:
        self.diff = diff
        self.scan = scan
        self.self_ignoring = self_ignoring
        self.still_ignored = still_ignored
        self.surfaced = surfaced  # ignored only by rules the run wrote: added to the diff
        self.unrepresentable = unrepresentable  # added, yet not in the index (a name git refuses)
        self.in_index = in_index


def capture(workspace: Path, base: str, before: Path, out_dir: Path) -> CaptureResult:
    """Write ``out_dir/workspace.diff`` (BASE to the working tree) and ``out_dir/ignored_created.txt``, and
    from a v4 snapshot ``out_dir/git_dir_changes.txt``."""
    opened = _open(workspace, base, before)
    git, snap, record = opened.git, opened.snap, opened.record
    # The paths under .git the run changed, worked out in a thread while git takes the diff.
    git_dir_changes = (
        None if record is None else GitDirChanges(git.workspace, record, IndexLister(git, record))
    )
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(out_dir, "run directory is not a directory")
    for name in (DIFF_NAME, IGNORED_CREATED_NAME, GIT_DIR_CHANGES_NAME):
        _refuse_non_regular(out_dir / name)
    # One listing of the index (tags, modes, names) serves the staged gitlinks and the hiding bits; the
    # scratch index the capture changes is a copy of this one. A v4 record keeps it.
    index_listing = (
        git.run("ls-files", "-z", "--stage", "-v") if record is None else record_index_listing(git, record)
    )
    staged_repositories = _new_gitlinks(git, opened.base_commit, index_listing)
    current_exclude = _read_info_exclude(git) if record is None else None
    # A v1 snapshot did not record the rules: the current ones are all there is (module docstring).
    info_exclude = snap.info_exclude if snap.info_exclude is not None else current_exclude or b""
    if record is not None:
        # Read as a plain file where it was at snapshot time (a linked worktree's is in the common dir), and
        # only to tell whether it changed: at most one byte past the recorded rules, and never a FIFO or a
        # device the run left there (anything but a regular file reads as empty; git_dir_changes names it).
        where = Path(os.fsdecode((record / RECORD_EXCLUDE).read_bytes()))
        current_exclude = read_regular(where, len(snap.info_exclude or b"") + 1) or b""
    info_exclude_changed = snap.info_exclude is not None and current_exclude != snap.info_exclude
    # A v1 or v2 snapshot did not record the .gitignore files: the base commit's stand in for them.
    old_ignore_files = (
        snap.ignore_files if snap.ignore_files is not None else base_ignore_files(git, opened.base_commit)
    )
    tree = walk_work_tree(git.workspace)
    special_files = tree.special
    known = None if staged_repositories else _scan_unchanged(git, snap, tree, index_listing)
    found = _diff_in_scratch(
        opened,
        info_exclude,
        old_ignore_files,
        index_listing,
        staged_repositories,
        special_files,
        before,
        known,
    )
    ignored_created = sorted(found.still_ignored | set(found.unrepresentable))
    changes = None if git_dir_changes is None else git_dir_changes.result()
    diff_path = _write_run_files(out_dir, found, ignored_created, special_files, changes)
    # Every file section starts with this header line; content lines start with ' ', '+', '-' and base85
    # lines of binary patches cannot contain a space, so the count is exact.
    files_changed = found.diff.count(b"\ndiff --git ") + found.diff.startswith(b"diff --git ")
    return CaptureResult(
        base_commit=opened.base_commit,
        diff_path=str(diff_path),
        diff_bytes=len(found.diff),
        files_changed=files_changed,
        ignored_created=ignored_created,
        nested_repositories=found.scan.nested_repositories,
        unrepresentable=found.unrepresentable,
        exclude_rules_recorded=snap.info_exclude is not None,
        info_exclude_changed=info_exclude_changed,
        ignore_files_recorded=snap.ignore_files is not None,
        self_ignoring_dirs=found.self_ignoring,
        ignored_in_diff=sorted(p for p in found.surfaced if p in found.in_index),
        git_dir_changes=changes,
        special_files=special_files,
    )


def _open(workspace: Path, base: str, before: Path) -> _Opened:
    """Read the snapshot, and find the git to run and the base commit: the workspace's own git for a v3 or
    older snapshot, else the private record's (nothing of the workspace's .git is read: the run may have
    broken or removed it)."""
    snap = read_snapshot_file(before)
    record = open_record(before) if snap.version >= 4 else None
    fallback: list[Path] = []
    if record is None:
        git = _toplevel_git(workspace)
        layout, found = look_up(git, base)
        base_commit = found if found is not None else resolve_base(git, base)
        return _Opened(snap, None, git, layout, base_commit, fallback)
    git = record_git(workspace, record)
    # HEAD at snapshot time (what a harness passes) is read from the record's files; git resolves the rest.
    layout, found = record_layout(record, base) or look_up(git, base)
    if found is not None:
        base_commit = found
    else:
        base_commit, fallback = resolve_in_record(git, record, base)
    return _Opened(snap, record, git, layout, base_commit, fallback)


def _diff_in_scratch(
    opened: _Opened,
    info_exclude: bytes,
    old_ignore_files: dict[str, bytes],
    index_listing: bytes,
    staged_repositories: list[str],
    special_files: list[str],
    before: Path,
    known: tuple[_Scan, list[str]] | None = None,
) -> _Found:
    """The scan, git add -N and the diff, all with one scratch git directory, so that a file the scan calls
    untracked is one git add accepts and the diff shows. ``known`` is the scan and the new files when
    :func:`_scan_unchanged` could tell them without git."""
    git, base_commit = opened.git, opened.base_commit
    with (
        scratch_directory("rubric-capture-") as scratch_name,
        rule_fifos_read_empty(git.workspace, special_files),
    ):
        scratch = Path(scratch_name)
        _use_scratch(git, scratch, info_exclude, opened.fallback, opened.layout)
        if special_files:
            # Absent from the work tree for the diff: a tracked one leaves the scratch index, so the diff
            # shows it deleted without git opening it (an untracked one git does not list anyway).
            git.run("update-index", "--force-remove", "-z", "--stdin", stdin=nul_joined(special_files))
        if known is not None and known[1]:
            return _diff_new_files(opened, scratch, index_listing, *known)
        scan = known[0] if known is not None else _scan(git, staged_repositories)
        before_paths = set(opened.snap.ignored)
        created = sorted(set(scan.ignored) - before_paths)
        self_ignoring = find_self_ignoring_dirs(git, base_commit, created, before_paths, old_ignore_files)
        in_dirs = {f for d in self_ignoring for f in d.files}
        rest = [p for p in created if p not in in_dirs]
        # A file that only rules written during the run ignore is an ordinary new file (module docstring).
        still_ignored = ignored_by(
            git,
            scratch,
            info_exclude,
            old_ignore_files,
            rest,
            before,
            object_format=opened.layout.object_format,
        )
        surfaced = [p for p in rest if p not in still_ignored]
        _clear_hiding_bits(git, index_listing, special_files)
        _add_to_index(git, scan, staged_repositories, surfaced)
        attribute_files = None if opened.record is None else head_attribute_files(opened.record, base_commit)
        diff, listed = byte_exact_diff_and_paths(git, scratch, base_commit, _DIFF_FLAGS, attribute_files)
        added = (*scan.untracked, *scan.nested_files, *surfaced)
        # An added file the diff lists is in the index; only one it does not (refused by git, or equal to
        # a base blob the index no longer had) needs the index listing.
        in_index = listed
        if any(p not in listed for p in added):
            in_index = set(split_z(git.run("ls-files", "-z")))
    # Names git refuses to track anywhere (a '.GIT' directory): no diff can carry them, so they are listed
    # with the ignored files, where denied_globs still sees them.
    unrepresentable = sorted(p for p in added if p not in in_index)
    return _Found(diff, scan, self_ignoring, still_ignored, surfaced, unrepresentable, in_index)


def _diff_new_files(
    opened: _Opened, scratch: Path, index_listing: bytes, known: _Scan, new_files: list[str]
) -> _Found:
    """:func:`_diff_in_scratch` when the ignore rules are the snapshot's and ``new_files`` are new
    (:func:`_scan_unchanged`): no ``git status``. git add -N is given every new file and refuses the
    ignored ones itself, so a new file the diff lists is untracked; only those it does not list (ignored,
    refused, or equal to a base blob) are put to ``git check-ignore``, and not even that when there is no
    rule (every ``.gitignore`` and ``info/exclude`` line blank or a comment, as after ``git init``). The
    rules being the snapshot's, every new ignored file is still ignored by them: none is surfaced, and no
    new ``.gitignore`` makes a self-ignoring directory."""
    git, base_commit = opened.git, opened.base_commit
    _clear_hiding_bits(git, index_listing, ())
    _add_to_index(git, _Scan(new_files, [], [], []), [], [])
    attribute_files = None if opened.record is None else head_attribute_files(opened.record, base_commit)
    diff, listed = byte_exact_diff_and_paths(git, scratch, base_commit, _DIFF_FLAGS, attribute_files)
    unlisted = [p for p in new_files if p not in listed]
    sources = [opened.snap.info_exclude or b"", *(opened.snap.ignore_files or {}).values()]
    has_rules = any(line and not line.startswith(b"#") for text in sources for line in text.splitlines())
    ignored: set[str] = set()
    if unlisted and has_rules:
        # exit 1 means "none of them is ignored"
        out = git.run(
            "check-ignore", "--no-index", "-z", "--stdin", stdin=nul_joined(unlisted), ok_codes=(0, 1)
        )
        ignored = set(split_z(out))
    untracked = [p for p in new_files if p not in ignored]
    scan = _Scan(untracked, [], [], sorted({*known.ignored, *ignored}))
    in_index = listed
    if any(p not in listed for p in untracked):
        in_index = set(split_z(git.run("ls-files", "-z")))
    unrepresentable = sorted(p for p in untracked if p not in in_index)
    return _Found(diff, scan, [], ignored, [], unrepresentable, in_index)


def _add_to_index(
    git: WorkspaceGit, scan: _Scan, staged_repositories: list[str], surfaced: list[str]
) -> None:
    """Put into the scratch index what the diff must show besides tracked files: untracked files (intent to
    add), nested repositories' files instead of their gitlinks, and files only new rules ignore."""
    if scan.untracked:
        # --literal-pathspecs: a file named '*.py' is that file, not a glob over the work tree.
        # --ignore-errors: one name git refuses (.GIT/x) must not stop the others; exit 1 says so.
        add_flags = ("--intent-to-add", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul")
        git.run("--literal-pathspecs", "add", *add_flags, stdin=nul_joined(scan.untracked), ok_codes=(0, 1))
    if staged_repositories:
        git.run("update-index", "--force-remove", "-z", "--stdin", stdin=nul_joined(staged_repositories))
    if scan.nested_files or surfaced:
        # git add would stop at a nested .git (a gitlink) and refuses ignored files; update-index adds
        # the files themselves and reads no ignore rule.
        files = [*scan.nested_files, *surfaced]
        git.run("update-index", "--add", "-z", "--stdin", stdin=nul_joined(files))


def _write_run_files(
    out_dir: Path,
    found: _Found,
    ignored_created: list[str],
    special_files: list[str],
    git_dir_changes: list[str] | None,
) -> Path:
    """Write the capture's files into the run directory; the diff's path."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(out_dir, f"cannot create the run directory: {exc.strerror or exc}") from exc
    diff_path = out_dir / DIFF_NAME
    try:
        diff_path.write_bytes(found.diff)
    except OSError as exc:
        raise InputError(diff_path, f"cannot write: {exc.strerror or exc}") from exc
    _write_text(
        out_dir / IGNORED_CREATED_NAME,
        format_ignored_created(ignored_created, found.self_ignoring, special_files),
    )
    changes_path = out_dir / GIT_DIR_CHANGES_NAME
    if git_dir_changes is None:
        changes_path.unlink(missing_ok=True)  # one from an earlier capture must not stand in for this one
    else:
        _write_text(changes_path, format_path_list(git_dir_changes))
    return diff_path


def _gitlinks(listing: bytes, *, tagged: bool = False) -> list[str]:
    """Paths of mode 160000 in ``ls-tree -r -z`` output, or with ``tagged`` in ``ls-files -z --stage -v``
    output (each entry starts with a one-letter tag and a space)."""
    found = []
    for entry in listing.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if (meta[2:] if tagged else meta).startswith(b"160000 "):
            found.append(os.fsdecode(name))
    return found


def _new_gitlinks(git: WorkspaceGit, base_commit: str, index_listing: bytes) -> list[str]:
    """Nested repositories the agent staged or committed (`git add nested` makes a gitlink): the base has
    no gitlink there. Their files go into the diff, as for an untracked nested repository.
    ``index_listing`` is ``ls-files -z --stage -v`` of the index."""
    staged = _gitlinks(index_listing, tagged=True)
    if not staged:
        return []
    in_base = set(_gitlinks(git.run("ls-tree", "-r", "-z", "--full-tree", base_commit)))
    return [p for p in staged if p not in in_base]


def _clear_hiding_bits(git: WorkspaceGit, index_listing: bytes, removed: Sequence[str]) -> None:
    """Clear assume-unchanged and skip-worktree in the scratch index: both hide edits from git diff.
    ``index_listing`` is ``ls-files -z --stage -v`` of the index it was copied from, and ``removed`` the
    paths taken out of the copy since."""
    gone = {os.fsencode(p) for p in removed}
    assumed: dict[bytes, None] = {}  # a conflicted path is listed once per stage
    skipped: dict[bytes, None] = {}
    for entry in index_listing.split(b"\0"):
        if len(entry) < 3:
            continue
        tag, name = entry[:1], entry.partition(b"\t")[2]
        if name in gone:
            continue
        if tag.islower():
            assumed[name] = None
        if tag.upper() == b"S":
            skipped[name] = None
    if assumed:
        git.run("update-index", "--no-assume-unchanged", "-z", "--stdin", stdin=nul_joined(assumed))
    if skipped:
        git.run("update-index", "--no-skip-worktree", "-z", "--stdin", stdin=nul_joined(skipped))
