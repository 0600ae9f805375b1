"""A base repository, an agent's edits and a tree listing: shared by the workspace tests."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.gitrepo import GIT_ENV, GitRepo

# What pytest, ruff and mypy write (https://bford.info/cachedir/)
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by pytest.\n"
)


BINARY = bytes(range(256)) * 4 + b"\0\0tail"


ODD_NAME = "dir with space/naïve café.txt"


def listing(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and symlink under root except .git: kind + executable bit, and content or link target."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            if name == ".git":
                continue
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = ("link", os.fsencode(os.readlink(full)))
            else:
                mode = "x" if full.stat().st_mode & stat.S_IXUSR else "-"
                out[rel] = (f"file{mode}", full.read_bytes())
    return out


def apply_on_base(source: GitRepo, base: str, diff: Path, dest: Path, unprotected: bool = False) -> GitRepo:
    """A clean checkout of base with the captured diff applied by `git apply`."""
    subprocess.run(
        ["git", "clone", "-q", "--no-checkout", str(source.path), str(dest)],
        check=True,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
    )
    clone = GitRepo.__new__(GitRepo)
    clone.path = dest
    clone.git("checkout", "-q", "--detach", base)
    if diff.stat().st_size:
        flags = ["-c", "core.protectNTFS=false"] if unprotected else []
        clone.git(*flags, "apply", "--whitespace=nowarn", str(diff))
    return clone


def base_repo(repo: GitRepo) -> str:
    repo.write(".gitignore", "build/\n*.log\n")
    repo.write("keep.txt", "unchanged\n")
    repo.write("modify.txt", "one\ntwo\nthree\n")
    repo.write("delete_me.txt", "going away\n")
    repo.write("script.sh", "#!/bin/sh\necho hi\n")
    repo.write("blob.bin", BINARY)
    repo.write("committed.txt", "before the agent\n")
    repo.write("moved/src.txt", "a file that moves\n")
    repo.write(ODD_NAME, "café\n")
    (repo.path / "link").symlink_to("keep.txt")
    repo.write("file_to_dir", "a file\n")
    repo.write("file_to_link", "a file\n")
    (repo.path / "link_to_file").symlink_to("keep.txt")
    return repo.commit("base")


def agent_edits(repo: GitRepo) -> None:
    """Every awkward kind of change the capture must carry."""
    repo.write("committed.txt", "changed and committed by the agent\n")
    repo.git("commit", "-q", "-am", "agent commit")
    repo.write("modify.txt", "one\nTWO\nthree\n")
    (repo.path / "delete_me.txt").unlink()
    (repo.path / "script.sh").chmod(0o755)
    repo.write("blob.bin", BINARY[::-1] + b"\0changed")
    repo.write("new_binary.dat", b"\0\1\2\3\0")
    repo.write("new untracked.txt", "brand new\n")
    repo.write("empty_new.txt", "")
    repo.write("dir with space/second naïve.txt", "ünïcödé\n")
    repo.write(ODD_NAME, "café au lait\n")
    (repo.path / "link").unlink()
    (repo.path / "link").symlink_to("modify.txt")
    (repo.path / "new_link").symlink_to("dir with space")
    (repo.path / "moved/src.txt").rename(repo.path / "moved/dst.txt")
    repo.write("staged.txt", "staged but not committed\n")
    repo.git("add", "staged.txt")
    repo.write("crlf.txt", b"windows\r\nline endings\r\nno final newline")
    repo.write("-dash.txt", "looks like an option\n")
    repo.write("star*[x].txt", "looks like a glob\n")
    repo.write("new\nline\tand tab.txt", "odd name\n")
    repo.write(os.fsdecode(b"latin1-\xe9.txt"), "not UTF-8 in the name\n")
    (repo.path / "file_to_dir").unlink()
    repo.write("file_to_dir/inner.txt", "was a file, now a directory\n")
    (repo.path / "file_to_link").unlink()
    (repo.path / "file_to_link").symlink_to("keep.txt")
    (repo.path / "link_to_file").unlink()
    repo.write("link_to_file", "was a symlink\n")
