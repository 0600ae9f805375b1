"""The private record of a v4 snapshot (grading/workspace/diff.py's docstring): the directory ``FILE.git``
beside the snapshot file, holding a git directory of its own and a manifest of the workspace's ``.git``,
and the rules that tell which changes under ``.git`` are ordinary history work."""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path

from grading.errors import InputError
from grading.path_lists import SNAPSHOT_HEADER, quote_path, read_lines, unquote_path
from grading.workspace.git import GitLayout, WorkspaceGit, alternates_value, copy_file, git_path, resolve_base

RECORD_SUFFIX = ".git"  # the private record of a snapshot FILE is the directory FILE.git
_RECORD_MARKER = "rubric-snapshot-record"
_RECORD_MANIFEST = "git-dir-manifest"
_RECORD_FALLBACK = "workspace-objects"  # the workspace's object directory at snapshot time
RECORD_EXCLUDE = "workspace-info-exclude"  # where the workspace's info/exclude was at snapshot time
_HASH_CHUNK = 1 << 20
_RECORD_ATTRIBUTES = "head-attributes"  # HEAD, then the paths of its .gitattributes files
_RECORD_INDEX_LISTING = "index-listing"  # `git ls-files -z --stage -v` of the record's index
_ATTRIBUTES = b".gitattributes"
_OBJECT_ID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")


def record_path(snapshot_file: Path) -> Path:
    """The private record that goes with a snapshot file: the directory ``FILE.git`` beside it."""
    return snapshot_file.with_name(snapshot_file.name + RECORD_SUFFIX)


def write_record(git: WorkspaceGit, real_index: Path, objects: Path, record: Path) -> None:
    """Write the private record of the workspace's git state to ``record`` (a directory; the module
    docstring says what it holds). ``git`` reads the workspace's git directory and writes nothing there.
    Written beside ``record`` and renamed into place, so it is whole or absent."""
    import shutil  # here, not at the top: a capture, which imports this module too, needs neither
    import tempfile

    parent = record.parent
    if record.exists() and not (record / _RECORD_MARKER).is_file():
        raise InputError(record, "exists and is not a snapshot record; remove it or write elsewhere")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{record.name}.", dir=parent))
    except OSError as exc:
        raise InputError(record, f"cannot create the record: {exc.strerror or exc}") from exc
    try:
        _fill_record(git, real_index, objects, tmp)
        if record.exists():
            shutil.rmtree(record)
        tmp.rename(record)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(record, f"cannot write the record: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fill_record(git: WorkspaceGit, real_index: Path, objects: Path, record: Path) -> None:
    pack_dir = record / "objects" / "pack"
    pack_dir.mkdir(parents=True)
    (record / "refs").mkdir()
    head = git.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok_codes=(0, 1, 128)).strip()
    (record / "HEAD").write_bytes(head + b"\n" if head else b"ref: refs/heads/unborn\n")
    # Every ref as it is now, so --base names a branch or tag as it was before the run.
    refs = git.run("for-each-ref", "--format=%(objectname) %(refname)")
    (record / "packed-refs").write_bytes(refs)
    object_format = git.run("rev-parse", "--show-object-format").decode("ascii", "replace").strip()
    config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    if object_format and object_format != "sha1":
        config = (
            "[core]\n\trepositoryformatversion = 1\n\tbare = false\n"
            f"[extensions]\n\tobjectformat = {object_format}\n"
        )
    (record / "config").write_text(config)
    if real_index.is_file():
        # The mtime kept: it decides racily clean entries.
        copy_file(real_index, record / "index", keep_mtime=True)
        for shared in real_index.parent.glob("sharedindex.*"):
            copy_file(shared, record / shared.name, keep_mtime=True)
    # The copy's entries, listed as a capture from this record lists them (record_git): the capture reads
    # this file instead of running git (a process is a capture's fixed cost).
    listing = record_git(git.workspace, record).run("ls-files", "-z", "--stage", "-v")
    (record / _RECORD_INDEX_LISTING).write_bytes(listing)
    # The objects a diff against HEAD needs: HEAD's commit, tree and blobs, and the blobs of the index.
    named = git.run("rev-list", "--objects", "--no-walk", "HEAD") if head else b""
    wanted = b"".join(line.split(b" ", 1)[0] + b"\n" for line in named.split(b"\n") if line)
    _write_head_attributes(record, head, named)
    staged = [
        entry.split(b" ")[2]
        for entry in listing.split(b"\0")
        if entry and not entry[2:].startswith(b"160000 ")
    ]
    if staged:  # an intent-to-add entry names the empty blob, which may not exist
        check = git.run("cat-file", "--batch-check=%(objectname)", stdin=b"".join(o + b"\n" for o in staged))
        wanted += b"".join(line + b"\n" for line in check.split(b"\n") if line and b" " not in line)
    if wanted:
        git.run("pack-objects", "-q", str(pack_dir / "pack"), stdin=wanted)
    (record / _RECORD_FALLBACK).write_bytes(os.fsencode(objects))
    (record / RECORD_EXCLUDE).write_bytes(os.fsencode(git_path(git, "info/exclude").absolute()))
    manifest = _git_dir_manifest(git.workspace, IndexLister(git, record))
    (record / _RECORD_MANIFEST).write_text(
        "".join(entry.line() + "\n" for entry in manifest.values()), encoding="utf-8"
    )
    (record / _RECORD_MARKER).write_text(SNAPSHOT_HEADER + "\n")


def _write_head_attributes(record: Path, head: bytes, named: bytes) -> None:
    """Record where HEAD's tree holds a ``.gitattributes`` (``rev-list --objects`` output, ``named``), so a
    capture against HEAD knows without asking git that no attribute converts a file it did not touch. Not
    written when a name cannot be told apart (a newline in a path): the capture then asks git."""
    if not head:
        return
    paths: list[str] = []
    for line in named.split(b"\n"):
        if not line:
            continue
        oid, _, name = line.partition(b" ")
        if _OBJECT_ID.fullmatch(oid) is None:
            return
        if name == _ATTRIBUTES or name.endswith(b"/" + _ATTRIBUTES):
            paths.append(os.fsdecode(name))
    text = head.decode("ascii") + "\n" + "".join(quote_path(p) + "\n" for p in paths)
    (record / _RECORD_ATTRIBUTES).write_text(text, encoding="utf-8")


def head_attribute_files(record: Path, base_commit: str) -> frozenset[str] | None:
    """The paths of HEAD's ``.gitattributes`` files at snapshot time when ``base_commit`` is that HEAD;
    None when the record does not say (an older record, another base)."""
    try:
        lines = (record / _RECORD_ATTRIBUTES).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    if lines[0] != base_commit:
        return None
    try:
        return frozenset(unquote_path(line) for line in lines[1:] if line)
    except ValueError:
        return None


def record_index_listing(git: WorkspaceGit, record: Path) -> bytes:
    """``git ls-files -z --stage -v`` of the record's index, as ``git`` (:func:`record_git`) prints it:
    from the record when the snapshot stored it, else from git."""
    try:
        return (record / _RECORD_INDEX_LISTING).read_bytes()
    except FileNotFoundError:
        return git.run("ls-files", "-z", "--stage", "-v")  # a record written before the listing was kept


class IndexLister:
    """The entries of an index file (paths, modes, object ids, stages, flags; not the stat cache), hashed:
    what ``git status`` rewrites without changing any entry hashes the same. Each index file is listed
    once (a capture asks twice about a ``.git/index`` whose stat changed)."""

    def __init__(self, git: WorkspaceGit, git_dir: Path) -> None:
        self.git = WorkspaceGit(git.workspace, {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(git.workspace)})
        self.git.config = list(git.config)
        self._digests: dict[Path, str | None] = {}

    def digest(self, index: Path) -> str | None:
        if index in self._digests:
            return self._digests[index]
        self.git.extra_env["GIT_INDEX_FILE"] = str(index)
        try:
            listing = self.git.run("ls-files", "-z", "--stage", "-v")
        except InputError:
            found = None  # not an index git can read
        else:
            found = "entries:" + _sha256(listing)
        self._digests[index] = found
        return found


def _sha256(data: bytes) -> str:
    import hashlib  # here: OpenSSL takes milliseconds to load, and a capture mostly hashes nothing

    return hashlib.sha256(data).hexdigest()


class _GitDirEntry:
    """One path under the workspace's ``.git`` at snapshot time."""

    __slots__ = ("path", "kind", "stat_key", "digest")

    def __init__(self, path: str, kind: str, stat_key: str, digest: str) -> None:
        self.path = path  # relative to the workspace: ".git/config"
        self.kind = kind  # "f" file, "l" symlink, "o" anything else
        self.stat_key = stat_key  # size, mode, mtime, ctime, inode: unchanged means unchanged
        # sha256 of the content (a symlink's target); for .git/index, of its entries if readable
        self.digest = digest

    def line(self) -> str:
        return f"{self.kind} {self.stat_key} {self.digest} {quote_path(self.path)}"


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mode:o}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _git_dir_entries(workspace: Path) -> dict[str, tuple[str, os.stat_result]]:
    """Every path under the workspace's ``.git`` (files, symlinks, other non-directories), not following
    symbolic links; ``.git`` itself when it is not a directory (a linked worktree's ``.git`` file)."""
    root = workspace / ".git"
    try:
        st = os.lstat(root)
    except OSError:
        return {}
    if not stat.S_ISDIR(st.st_mode):
        return {".git": (_kind(st), st)}
    found: dict[str, tuple[str, os.stat_result]] = {}
    stack = [".git"]
    while stack:
        rel = stack.pop()
        try:
            entries = list(os.scandir(workspace / rel))
        except OSError:
            found[rel + "/"] = ("o", os.lstat(workspace / rel))  # unreadable: compared by its stat only
            continue
        for entry in entries:
            child = f"{rel}/{entry.name}"
            child_st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(child_st.st_mode):
                stack.append(child)
            else:
                found[child] = (_kind(child_st), child_st)
    return found


def _kind(st: os.stat_result) -> str:
    return "f" if stat.S_ISREG(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "o"


def _digest(workspace: Path, rel: str, kind: str, index: IndexLister) -> str:
    path = workspace / rel
    if kind == "l":
        try:
            return _sha256(os.fsencode(os.readlink(path)))
        except OSError:
            return "-"
    if kind != "f":
        return "-"
    if rel == ".git/index" and (entries := index.digest(path)) is not None:
        return entries
    import hashlib  # here: OpenSSL takes milliseconds to load, and a capture mostly hashes nothing

    sha = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return "unreadable"
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def _git_dir_manifest(workspace: Path, index: IndexLister) -> dict[str, _GitDirEntry]:
    return {
        rel: _GitDirEntry(
            path=rel, kind=kind, stat_key=_stat_key(st), digest=_digest(workspace, rel, kind, index)
        )
        for rel, (kind, st) in sorted(_git_dir_entries(workspace).items())
    }


def _read_manifest(record: Path) -> dict[str, _GitDirEntry]:
    path = record / _RECORD_MANIFEST
    found: dict[str, _GitDirEntry] = {}
    for number, line in enumerate(read_lines(path), start=1):
        parts = line.split(" ", 3)
        if len(parts) != 4 or parts[0] not in ("f", "l", "o"):
            raise InputError(path, "not a line of a git directory manifest", f"line {number}")
        try:
            rel = unquote_path(parts[3])
        except ValueError as exc:
            raise InputError(path, str(exc), f"line {number}") from exc
        found[rel] = _GitDirEntry(path=rel, kind=parts[0], stat_key=parts[1], digest=parts[2])
    return found


def list_git_dir_changes(workspace: Path, record: Path, index: IndexLister) -> list[str]:
    """The paths under ``.git`` the run added, removed or changed since the snapshot (module docstring:
    what counts); ``[".git"]`` when ``.git`` went away or changed kind."""
    return _compare_git_dir(workspace, _read_manifest(record), index)


class GitDirChanges:
    """:func:`list_git_dir_changes` worked out in a thread, while the capture's git runs take the diff: the
    walk of ``.git`` and, when ``.git/index`` was rewritten, one ``git ls-files`` of it. The manifest is
    read at once, so a broken one fails the capture before any other work."""

    def __init__(self, workspace: Path, record: Path, index: IndexLister) -> None:
        before = _read_manifest(record)
        self._found: list[str] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._work, args=(workspace, before, index), name="rubric-capture-git-dir", daemon=True
        )
        self._thread.start()

    def _work(self, workspace: Path, before: dict[str, _GitDirEntry], index: IndexLister) -> None:
        try:
            self._found = _compare_git_dir(workspace, before, index)
        except BaseException as exc:  # raised in the capture's thread by result()
            self._error = exc

    def result(self) -> list[str]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._found


def _compare_git_dir(workspace: Path, before: dict[str, _GitDirEntry], index: IndexLister) -> list[str]:
    now = _git_dir_entries(workspace)
    if (before and not os.path.lexists(workspace / ".git")) or (".git" in before) != (".git" in now):
        return [".git"]  # removed, or a directory turned into a file or the other way round
    changed: list[str] = []
    for rel in sorted({*before, *now}):
        old = before.get(rel)
        if old is None or rel not in now:
            if not _ordinary_history(workspace, rel, added=old is None):
                changed.append(rel)
            continue
        kind, st = now[rel]
        if (kind != old.kind or _content_changed(workspace, rel, kind, st, old, index)) and not (
            kind == old.kind and _ordinary_history(workspace, rel, added=False, index=index)
        ):
            changed.append(rel)
    return changed


def _content_changed(
    workspace: Path, rel: str, kind: str, st: os.stat_result, old: _GitDirEntry, index: IndexLister
) -> bool:
    """Whether a path of the same kind as in the manifest holds other content. The stat is a shortcut to
    skip hashing, and so is the size: a regular file of another size is changed unread (the run may have
    left a sparse terabyte there). ``.git/index`` is compared by its entries; one git cannot read differs."""
    if _stat_key(st) == old.stat_key:
        return False
    if kind == "f" and rel == ".git/index":
        return index.digest(workspace / rel) != old.digest
    if kind == "f" and str(st.st_size) != old.stat_key.split(":", 1)[0]:
        return True
    return _digest(workspace, rel, kind, index) != old.digest


# What committing, staging, branching, tagging, stashing, merging and rebasing write under .git. None of it
# changes the diff (always the work tree against the base, read from the private record) or what git runs
# later, so a run that used git as a developer does stays gradable on its merits. Configuration, hooks,
# info/, alternates, replace refs and anything not listed here still count (docs/capture.md).
_HISTORY_FILES = frozenset(
    f".git/{name}"
    for name in (
        "HEAD",
        "ORIG_HEAD",
        "FETCH_HEAD",
        "COMMIT_EDITMSG",
        "MERGE_HEAD",
        "MERGE_MSG",
        "MERGE_MODE",
        "MERGE_RR",
        "AUTO_MERGE",
        "CHERRY_PICK_HEAD",
        "REVERT_HEAD",
        "REBASE_HEAD",
        "refs/stash",
    )
)
_HISTORY_TREES = tuple(
    f".git/{name}/"
    for name in (
        "logs",
        "refs/heads",
        "refs/tags",
        "refs/remotes",
        "rebase-merge",
        "rebase-apply",
        "sequencer",
    )
)
_HISTORY_DIRS = frozenset((".git/logs", ".git/refs/heads", ".git/refs/tags", ".git/refs/remotes"))
_PACKED_HISTORY_REF = re.compile(rb"^[0-9a-f]{40,64} refs/(heads|tags|remotes)/\S+$")


def _ordinary_history(workspace: Path, rel: str, *, added: bool, index: IndexLister | None = None) -> bool:
    """Whether a path the run added (``added``), removed or rewrote under ``.git`` is what plain history
    work writes (the list above)."""
    if rel in _HISTORY_FILES or rel in _HISTORY_DIRS or rel.startswith(_HISTORY_TREES):
        return True
    if rel == ".git/index":
        # Staging changes the entries; an index git cannot read is tampering.
        return index is not None and index.digest(workspace / rel) is not None
    if rel == ".git/packed-refs":
        return _packed_refs_are_history(workspace / rel)
    if rel.startswith(".git/objects/") and not rel.startswith(".git/objects/info"):
        # New objects and packs are history; removing or rewriting one the base needs is not.
        return added
    return False


def _packed_refs_are_history(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return True  # removed: every packed branch or tag went, which history work may do
    except OSError:
        return False  # a symbolic link, or unreadable: not what git writes
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # a FIFO (reading it would block) or a device: git writes a regular file
        text = handle.read(_PACKED_REFS_MAX + 1)
    if len(text) > _PACKED_REFS_MAX:
        return False
    return all(
        not line or line.startswith((b"#", b"^")) or _PACKED_HISTORY_REF.match(line) is not None
        for line in text.split(b"\n")
    )


_PACKED_REFS_MAX = 64 * 1024 * 1024


def open_record(before: Path) -> Path:
    record = record_path(before)
    if not (record / _RECORD_MARKER).is_file():
        raise InputError(
            record,
            "the snapshot's private record is missing (`rubric snapshot` writes it beside the snapshot file)",
            "--before",
        )
    return record


def record_git(workspace: Path, record: Path) -> WorkspaceGit:
    """git reading the private record as its git directory and the workspace as its work tree: nothing of
    the workspace's ``.git`` is read."""
    if not workspace.is_dir():
        raise InputError(workspace, "workspace is not a directory")
    root = Path(os.path.abspath(workspace))
    return WorkspaceGit(root, {"GIT_DIR": str(record.absolute()), "GIT_WORK_TREE": str(root)})


def record_layout(record: Path, base: str) -> tuple[GitLayout, str] | None:
    """The record's layout (:func:`grading.workspace.git.look_up`) and the commit ``base`` names, read from
    the record's own files when ``base`` is ``HEAD`` or HEAD's full object id (what a harness passes):
    no git process. None for any other base, which git resolves."""
    try:
        head = (record / "HEAD").read_bytes().rstrip(b"\n")
        config = (record / "config").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if _OBJECT_ID.fullmatch(head) is None:
        return None
    commit = head.decode("ascii")
    if base != "HEAD" and base.lower() != commit:
        return None
    found = re.search(r"^\tobjectformat = (\S+)$", config, re.MULTILINE)
    root = record.absolute()
    layout = GitLayout(root / "index", (root / "objects").resolve(), found.group(1) if found else "sha1")
    return layout, commit


def resolve_in_record(git: WorkspaceGit, record: Path, base: str) -> tuple[str, list[Path]]:
    """The base commit, from the record's refs and objects; when the record lacks it (a base other than
    HEAD at snapshot time), from the workspace's object directory as it is now."""
    try:
        return resolve_base(git, base), []
    except InputError:
        try:
            objects = Path(os.fsdecode((record / _RECORD_FALLBACK).read_bytes()))
        except OSError:
            raise InputError(record, f"{_RECORD_FALLBACK} is missing") from None
        if not objects.is_dir():
            raise
        fallback = [objects]
        git.extra_env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = alternates_value(fallback)
        return resolve_base(git, base), fallback
