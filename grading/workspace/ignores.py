"""Which of the ignored files a run created stay out of the workspace diff (grading/workspace/diff.py's
docstring, the ``.gitignore`` and tool-cache points): the files the exclusion rules from before the run
still ignore, and the new tool caches and virtual environments that are one ``dir/`` line of
``ignored_created.txt``. Every other created file goes into the diff."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from grading.errors import InputError
from grading.path_lists import GITIGNORE, SelfIgnoringDir, is_gitignore
from grading.workspace.git import WorkspaceGit, nul_joined, scratch_git_dir, split_z

_MAX_SELF_IGNORE_BYTES = 64 * 1024  # a tool's "*" file is a few bytes; a bigger one is not read as one
# What declares a self-ignoring directory a cache (only those stay out of the diff)
_CACHEDIR_TAG = "CACHEDIR.TAG"
_CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"  # bford.info/cachedir
_PYVENV_CFG = "pyvenv.cfg"


def base_ignore_files(git: WorkspaceGit, base_commit: str) -> dict[str, bytes]:
    """The ``.gitignore`` files of the base commit (path -> bytes): the old rules for a v1/v2 snapshot."""
    listing = git.run("ls-tree", "-r", "-z", "--full-tree", base_commit)
    wanted: list[tuple[str, str]] = []
    for entry in listing.split(b"\0"):
        meta, _, raw_name = entry.partition(b"\t")
        name = os.fsdecode(raw_name)
        parts = meta.split(b" ")
        if len(parts) == 3 and parts[1] == b"blob" and parts[0] != b"120000" and is_gitignore(name):
            wanted.append((name, parts[2].decode("ascii")))
    if not wanted:
        return {}
    out = git.run("cat-file", "--batch", stdin="".join(oid + "\n" for _, oid in wanted).encode("ascii"))
    found: dict[str, bytes] = {}
    pos = 0
    for name, _ in wanted:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split(b" ")[2])
        found[name] = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return found


def _declares_cache(git: WorkspaceGit, directory: str) -> bool:
    """True for a directory that declares itself a cache: a ``CACHEDIR.TAG`` starting with the Cache
    Directory Tagging Specification's signature (pytest, ruff and mypy write one), or a virtual environment
    (``pyvenv.cfg`` at its root). Symbolic links do not count."""
    tag = read_regular(git.workspace / directory / _CACHEDIR_TAG, len(_CACHEDIR_SIGNATURE))
    if tag == _CACHEDIR_SIGNATURE:
        return True
    return read_regular(git.workspace / directory / _PYVENV_CFG, 0) is not None


def read_regular(path: Path, limit: int) -> bytes | None:
    """The first ``limit`` bytes of ``path`` if it is a regular file (not through a symlink), else None.

    The run wrote the workspace: a FIFO there must not block the capture (``O_NONBLOCK`` opens it at once,
    and it is then no regular file), nor a huge file be read past ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(limit) if limit else b""


def _ignores_everything(rules: bytes) -> bool:
    """True for a ``.gitignore`` whose one pattern is ``*`` (what pytest, mypy, ruff and venv write)."""
    patterns = [line.rstrip(b" ") for line in rules.split(b"\n")]
    return [p for p in patterns if p and not p.startswith(b"#")] == [b"*"]


def find_self_ignoring_dirs(
    git: WorkspaceGit,
    base_commit: str,
    created: Sequence[str],
    before: set[str],
    old_ignore_files: Mapping[str, bytes],
) -> list[SelfIgnoringDir]:
    """New cache directories whose own new ``.gitignore`` ignores everything in them (outermost ones only).

    New means nothing was there before the run: no path of the base commit, no ignored file of the
    snapshot and no recorded ``.gitignore`` under it. A cache declares itself (:func:`_declares_cache`);
    any other self-ignoring directory's files go into the diff like any file only new rules ignore.
    """
    candidates: list[str] = []
    for path in created:
        if "/" not in path or not is_gitignore(path) or path in old_ignore_files:
            continue
        rules = read_regular(git.workspace / path, _MAX_SELF_IGNORE_BYTES + 1) or b""
        directory = path[: -len(GITIGNORE) - 1]
        if (
            len(rules) <= _MAX_SELF_IGNORE_BYTES
            and _ignores_everything(rules)
            and _declares_cache(git, directory)
        ):
            candidates.append(directory)
    if not candidates:
        return []
    in_base = set(
        split_z(
            git.run("--literal-pathspecs", "ls-tree", "-z", "--name-only", base_commit, "--", *candidates)
        )
    )
    earlier = [*before, *old_ignore_files]
    chosen: list[str] = []
    for directory in sorted(candidates, key=lambda d: (d.count("/"), d)):
        prefix = directory + "/"
        if any(directory.startswith(c + "/") for c in chosen) or directory in in_base:
            continue
        if any(p.startswith(prefix) for p in earlier):
            continue
        chosen.append(directory)
    return [
        SelfIgnoringDir(path=d, files=[p for p in created if p.startswith(d + "/")]) for d in sorted(chosen)
    ]


def ignored_by(
    git: WorkspaceGit,
    scratch: Path,
    info_exclude: bytes,
    ignore_files: Mapping[str, bytes],
    paths: Sequence[str],
    source: Path,
    *,
    object_format: str | None = None,
) -> set[str]:
    """Those of ``paths`` that the old rules ignore: ``ignore_files`` (the ``.gitignore`` files before the
    run) and ``info_exclude``, asked of git in a shadow work tree that holds only those files."""
    if not paths:
        return set()
    shadow = scratch / "old-rules-tree"
    try:
        shadow.mkdir()
        for rel, rules in ignore_files.items():
            target = shadow / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(rules)
    except OSError as exc:
        raise InputError(source, f"the recorded .gitignore files do not form a tree: {exc}") from exc
    home = scratch / "old-rules"
    home.mkdir()
    git_dir = scratch_git_dir(git, home, home, info_exclude, object_format=object_format)
    old = WorkspaceGit(shadow, {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(shadow),
                        "GIT_INDEX_FILE": str(home / "index")})  # fmt: skip
    old.config = list(git.config)
    # exit 1 means "none of them is ignored"
    out = old.run("check-ignore", "--no-index", "-z", "--stdin", stdin=nul_joined(paths), ok_codes=(0, 1))
    return set(split_z(out))
