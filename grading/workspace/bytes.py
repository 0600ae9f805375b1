"""The workspace diff is of bytes (grading/workspace/diff.py; docs/capture.md, "The diff is of the bytes on
disk").

git would diff what a file becomes once its attributes convert it (``text``, ``eol``, ``ident``,
``working-tree-encoding``, a ``filter``), and it does so only for the files its stat cache sends it to
read. So an untouched file git renormalises (a blob with CRLF under ``*.sh text eol=lf``) showed up as a
rewrite on some checkouts and not on others, and a real change git normalises away never showed. The
capture therefore:

- diffs with every conversion off (``RAW_ATTRIBUTES`` of grading/workspace/git.py, the scratch git
  directory's ``info/attributes``, which outranks every ``.gitattributes``): each patch takes the base
  blob's bytes to the bytes on disk, and a file whose bytes equal its base blob is never in the diff;
- leaves out a file whose bytes are exactly what a checkout of the base writes for it when the base's
  ``.gitattributes`` convert it on checkout (``eol=crlf``, ``ident``, ``working-tree-encoding``): the run
  did not touch it (:func:`checkout_unchanged`);
- writes every file that holds a NUL byte, on either side, as a binary patch, whatever git's own test
  (the first 8,000 bytes) says: the diff reader refuses a text hunk holding one
  (:func:`grading.diff_rules.holds_binary`, the one rule), so such a diff could not be graded.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from grading.diff_rules import holds_binary
from grading.errors import InputError
from grading.git import Git
from grading.git_quote import c_quote
from grading.workspace.git import nul_joined, scratch_git_dir

# What a checkout of the base may run with: the base's conversions, but no filter command.
_CHECKOUT_ATTRIBUTES_FILE = "* -filter\n"
# The attributes that make a checkout write other bytes than the blob's. The capture's git runs with
# core.autocrlf false and core.eol lf, so `text` alone converts nothing on checkout.
_CONVERTING = ("eol", "ident", "working-tree-encoding")
# Words one of which a .gitattributes (or a macro it defines) must hold to convert anything on checkout.
_CONVERTING_WORDS = (b"eol", b"crlf", b"ident", b"encoding")
_ATTRIBUTES_FILE = ".gitattributes"
_REGULAR_MODES = ("100644", "100755")
_FILE_HEADER = re.compile(rb"^diff --git ", re.MULTILINE)
_COMPARE_CHUNK = 1 << 20


class DiffEntry:
    """One file of ``git diff --raw``: its modes, base blob, status letter and path."""

    __slots__ = ("old_mode", "new_mode", "old_blob", "status", "path")

    def __init__(self, old_mode: str, new_mode: str, old_blob: str, status: str, path: str) -> None:
        self.old_mode = old_mode
        self.new_mode = new_mode
        self.old_blob = old_blob
        self.status = status
        self.path = path


def split_raw(output: bytes, source: Path) -> tuple[list[DiffEntry], bytes]:
    """``git diff -z --patch-with-raw`` output: (its raw entries, its patch), in the same file order.

    Each raw entry is ``:<old mode> <new mode> <old id> <new id> <status>\\0<path>\\0`` (no renames, so one
    path); a NUL follows the last one when a patch comes after."""
    entries: list[DiffEntry] = []
    pos = 0
    while output.startswith(b":", pos):
        meta_end = output.find(b"\0", pos)
        path_end = output.find(b"\0", meta_end + 1) if meta_end >= 0 else -1
        fields = output[pos + 1 : meta_end].split(b" ")
        if path_end < 0 or len(fields) != 5:
            raise InputError(source, "git diff printed a raw entry this capture cannot read")
        old_mode, new_mode, old_blob, _, status = (f.decode("ascii", "replace") for f in fields)
        entries.append(
            DiffEntry(old_mode, new_mode, old_blob, status[:1], os.fsdecode(output[meta_end + 1 : path_end]))
        )
        pos = path_end + 1
    if pos < len(output):
        if output[pos : pos + 1] != b"\0":
            raise InputError(source, "git diff printed no separator between its raw entries and its patch")
        pos += 1
    return entries, output[pos:]


def sections_holding_nul(patch: bytes, entries: list[DiffEntry], source: Path) -> list[str]:
    """The paths whose file section of ``patch`` holds a NUL byte (a text diff git made of a file whose
    first NUL is past the 8,000 bytes it looks at). Sections follow the raw entries one for one."""
    if not holds_binary(patch):
        return []
    starts = [m.start() for m in _FILE_HEADER.finditer(patch)]
    # A type change (file to symbolic link, ...) is two sections, a deletion and an addition.
    owners = [e.path for e in entries for _ in range(2 if e.status == "T" else 1)]
    if len(starts) != len(owners):
        # Every section starts with this line and no content or base85 line can (docs/capture.md); a
        # mismatch is git output this capture does not know, and no guess is safe.
        raise InputError(source, f"git diff printed {len(starts)} file sections for {len(owners)} expected")
    found: list[str] = []
    at = patch.find(b"\0")
    while at >= 0:
        section = bisect.bisect_right(starts, at) - 1
        if owners[section] not in found:
            found.append(owners[section])
        following = starts[section + 1] if section + 1 < len(starts) else len(patch)
        at = patch.find(b"\0", following)
    return found


def binary_patterns(paths: list[str]) -> str:
    """``info/attributes`` lines that make each of ``paths`` (and nothing else) a binary patch: the
    pattern anchored at the root, its glob characters escaped, C-quoted (a name may hold anything)."""
    lines = []
    for path in paths:
        escaped = re.sub(rb"([\\*?\[])", rb"\\\1", os.fsencode(path))
        lines.append(f"{c_quote(b'/' + escaped)} -diff\n")
    return "".join(lines)


def byte_exact_diff(git: Git, scratch: Path, base_commit: str, flags: Sequence[str]) -> bytes:
    """``git diff <flags> BASE`` of the work tree as bytes (module docstring). ``git`` runs in the capture's
    scratch git directory (``GIT_DIR``, whose ``info/attributes`` holds ``RAW_ATTRIBUTES``) with its
    scratch index; both may be changed here."""
    return byte_exact_diff_and_paths(git, scratch, base_commit, flags)[0]


def byte_exact_diff_and_paths(
    git: Git,
    scratch: Path,
    base_commit: str,
    flags: Sequence[str],
    base_attribute_files: frozenset[str] | None = None,
) -> tuple[bytes, set[str]]:
    """:func:`byte_exact_diff`, and the paths git's first diff listed other than deletions: each is in the
    scratch index. ``base_attribute_files``, when known, are the paths of the base's ``.gitattributes``
    files (:func:`checkout_unchanged`)."""
    output = git.run("diff", "-z", "--patch-with-raw", "--no-abbrev", *flags, base_commit, "--")
    entries, patch = split_raw(output, git.cwd)
    listed = {e.path for e in entries if e.status != "D"}
    unchanged = checkout_unchanged(git, scratch, base_commit, entries, base_attribute_files)
    binary = sections_holding_nul(patch, entries, git.cwd)
    if not unchanged and not binary:
        return patch, listed
    if unchanged:
        # The index entry of each becomes the base blob, marked assume-unchanged: git takes it as it is.
        by_path = {e.path: e for e in entries}
        info = [f"{by_path[p].old_mode} {by_path[p].old_blob}\t{p}" for p in unchanged]
        git.run("update-index", "-z", "--index-info", stdin=nul_joined(info))
        git.run("update-index", "--assume-unchanged", "-z", "--stdin", stdin=nul_joined(unchanged))
    if binary:
        with (Path(git.extra_env["GIT_DIR"]) / "info" / "attributes").open("a", encoding="utf-8") as rules:
            rules.write(binary_patterns(binary))
    patch = git.run("diff", *flags, base_commit, "--")
    if holds_binary(patch):
        raise InputError(git.cwd, "the capture's diff still holds a NUL byte outside a binary patch")
    return patch, listed


def checkout_unchanged(
    git: Git,
    scratch: Path,
    base_commit: str,
    entries: list[DiffEntry],
    base_attribute_files: frozenset[str] | None = None,
) -> list[str]:
    """Those modified files whose bytes on disk are exactly what a checkout of ``base_commit`` writes for
    them, where that is not the blob itself (the base's ``.gitattributes`` convert them on checkout).

    git checks the candidates out of a private index of the base into an empty scratch directory, with the
    base's own ``.gitattributes`` and a git directory of its own whose ``info/attributes`` adds only
    ``-filter`` (a filter runs a command); nothing of the workspace is written."""
    candidates = [
        e.path
        for e in entries
        if e.status == "M" and e.old_mode == e.new_mode and e.old_mode in _REGULAR_MODES
    ]
    if not candidates:
        return []
    if not _may_convert(git, base_commit, candidates, base_attribute_files):
        return []
    home, tree = scratch / "base-checkout", scratch / "base-checkout-tree"
    home.mkdir()
    tree.mkdir()
    git_dir = scratch_git_dir(git, home, home, b"", attributes=_CHECKOUT_ATTRIBUTES_FILE)
    # The capture's config (no command runs, autocrlf off, eol lf) and objects; the base's attributes.
    base = Git(tree, config=git.config)
    base.extra_env = {
        **git.extra_env,
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(tree),
        "GIT_INDEX_FILE": str(home / "index"),
    }
    base.run("read-tree", base_commit)
    listing = base.run(
        "check-attr", "--cached", "-z", "--stdin", *_CONVERTING, stdin=nul_joined(candidates)
    ).split(b"\0")
    converted: dict[str, None] = {}
    for i in range(0, len(listing) - 2, 3):
        path, attribute, value = os.fsdecode(listing[i]), listing[i + 1], listing[i + 2]
        if value in (b"unspecified", b"unset") or (attribute == b"eol" and value == b"lf"):
            continue
        converted[path] = None
    if not converted:
        return []
    # A path git cannot convert (an unknown encoding) is not written; it then stays in the diff.
    base.result("checkout-index", "-z", "--stdin", stdin=nul_joined(converted))
    return [p for p in converted if _same_bytes(git.cwd / p, tree / p)]


def _may_convert(git: Git, base_commit: str, paths: list[str], known: frozenset[str] | None = None) -> bool:
    """Whether a ``.gitattributes`` of the base that applies to one of ``paths`` (in its directory or one
    above) names a converting attribute at all: a cheap look, so that a repository whose attributes
    convert nothing on checkout (``* text=auto``, ``*.png binary``) never pays for the exact one."""
    dirs = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        dirs.update("/".join(parts[: i + 1]) + "/" for i in range(len(parts)))
    files = [f"{d}{_ATTRIBUTES_FILE}" for d in sorted(dirs)]
    if known is not None and known.isdisjoint(files):
        return False  # the snapshot's record lists the base's .gitattributes files: none applies
    listing = git.run("--literal-pathspecs", "ls-tree", "-z", "--full-tree", base_commit, "--", *files)
    blobs = [entry.split(b" ")[2].split(b"\t")[0] for entry in listing.split(b"\0") if entry]
    if not blobs:
        return False
    contents = git.run("cat-file", "--batch", stdin=b"".join(blob + b"\n" for blob in blobs))
    return any(word in contents for word in _CONVERTING_WORDS)


def _same_bytes(ours: Path, checked_out: Path) -> bool:
    """Whether two regular files (neither through a symbolic link) hold the same bytes. The run wrote
    ``ours``: a FIFO there is never waited on, and a file of another size is never read."""
    try:
        first = os.open(ours, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(first, "rb") as a:
        try:
            second = os.open(checked_out, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return False
        with os.fdopen(second, "rb") as b:
            sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
            if not (stat.S_ISREG(sa.st_mode) and stat.S_ISREG(sb.st_mode)) or sa.st_size != sb.st_size:
                return False
            while chunk := a.read(_COMPARE_CHUNK):
                if chunk != b.read(len(chunk)):
                    return False
            return not b.read(1)
