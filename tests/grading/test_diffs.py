"""grading.diffs against diffs that git itself writes, checked line for line against `git diff --numstat`."""

from __future__ import annotations

import base64
import os
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from grading import diffs
from grading.diffs import FileChange, load_diff, parse_diff
from grading.errors import InputError
from grading.git_quote import unquote_path
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import DIFF_ARGS, git_bytes, workspace_diff, zeros_literal_diff


def numstat(repo: GitRepo, base: str) -> dict[bytes, tuple[int | None, int | None]]:
    """git's own count per path: (added, removed), None for binary."""
    out = git_bytes(repo, "diff", "--cached", "--no-renames", "--numstat", "-z", base)
    counts: dict[bytes, tuple[int | None, int | None]] = {}
    for entry in out.split(b"\0"):
        if not entry:
            continue
        added, removed, path = entry.split(b"\t", 2)
        counts[path] = (None if added == b"-" else int(added), None if removed == b"-" else int(removed))
    return counts


def by_path(changes: list[FileChange]) -> dict[str, tuple[int | None, int | None]]:
    """Our counts, merged per path as numstat merges a type change (delete + add of one path)."""
    counts: dict[str, tuple[int | None, int | None]] = {}
    for change in changes:
        path = change.new_path or change.old_path
        assert path is not None
        if change.binary:
            counts[path] = (None, None)
            continue
        added, removed = counts.get(path, (0, 0))
        counts[path] = ((added or 0) + change.added, (removed or 0) + change.removed)
    return counts


def as_text(path: bytes) -> str:
    try:
        return path.decode("utf-8")
    except UnicodeDecodeError:
        return path.decode("utf-8", errors="backslashreplace")


NON_UTF8_NAME = b"l\xe9gacy.txt"  # Latin-1 é: not UTF-8


@pytest.fixture
def awkward(git_repo: GitRepo) -> tuple[GitRepo, str]:
    """A repository whose working tree holds every awkward kind of change, and its base commit."""
    r = git_repo
    r.write("x y.txt", "a\nb\n")
    r.write("x b/y.txt", "q\n")  # its diff header reads "a/x b/y.txt b/x b/y.txt"
    r.write("café.txt", "hi\n")
    (r.path / os.fsdecode(NON_UTF8_NAME)).write_bytes(b"lat\n")
    r.write("tab\tname.txt", "t\n")
    r.write('quote"name.txt', "t\n")
    r.write("crlf.txt", b"one\r\ntwo\r\nthree\r\n")
    r.write("latin1.txt", b"caf\xe9\nna\xefve\n")
    r.write("lone_cr.txt", b"a\rb\nc\n")
    r.write("bin.dat", b"\x00\x01\x02" * 100)
    r.write("bin_gone.dat", b"\x00gone")
    (r.path / "link").symlink_to("target")
    (r.path / "link_gone").symlink_to("x y.txt")
    r.write("mode.sh", "echo\n")
    r.write("x b/run me.sh", "echo\n")  # a mode change has no ---/+++ lines: the header alone names it
    r.write("gone.txt", "del\n1\n2\n")
    r.write("empty_gone.txt", "")
    r.write("typechange", "old\n")
    r.write("no_eol.txt", "last")
    r.write("src/old_test.py", "def test_a():\n    pass\n")
    base = r.commit("base")

    r.write("x y.txt", "a\nc\nd\n")
    r.write("x b/y.txt", "q2\n")
    r.write("café.txt", "hi\nthere")
    (r.path / os.fsdecode(NON_UTF8_NAME)).write_bytes(b"lat\n\xff\xfe\n")
    r.write("tab\tname.txt", "t2\n")
    r.write('quote"name.txt', "t2\n")
    r.write("crlf.txt", b"one\r\n2\r\nthree\r\nfour\r\n")
    r.write("latin1.txt", b"caf\xe9\nna\xefve!\n\xe0\n")
    r.write("lone_cr.txt", b"a\rB\nc\n")
    r.write("bin.dat", b"\x00\x01\x03" * 100)
    (r.path / "bin_gone.dat").unlink()
    r.write("bin_new.png", b"\x89PNG\r\n\x1a\n\x00\x00" + os.urandom(2000))
    (r.path / "link").unlink()
    (r.path / "link").symlink_to("elsewhere")
    (r.path / "link_gone").unlink()
    (r.path / "link_new").symlink_to("crlf.txt")
    (r.path / "mode.sh").chmod(0o755)
    (r.path / "x b/run me.sh").chmod(0o755)
    (r.path / "gone.txt").unlink()
    (r.path / "empty_gone.txt").unlink()
    r.write("empty_new.txt", "")
    (r.path / "typechange").unlink()
    (r.path / "typechange").symlink_to("crlf.txt")
    r.write("no_eol.txt", "last\nmore")
    r.write("run.sh", "#!/bin/sh\n", executable=True)
    r.write("new\nline.txt", "n\n")
    r.write("ünï/dïr/fïlé.txt", "x\ny\n")
    r.write("src/moved/old_test.py", "def test_a():\n    pass\n")
    (r.path / "src/old_test.py").unlink()
    return r, base


def test_it_matches_git_numstat_on_every_awkward_change(awkward: tuple[GitRepo, str]) -> None:
    repo, base = awkward
    changes = parse_diff(workspace_diff(repo, base))
    expected = {as_text(path): counts for path, counts in numstat(repo, base).items()}
    assert by_path(changes) == expected
    assert len(expected) == 27


def test_it_reports_status_and_flags_of_each_change(awkward: tuple[GitRepo, str]) -> None:
    repo, base = awkward
    changes = parse_diff(workspace_diff(repo, base))
    index = {(c.old_path, c.new_path): c for c in changes}

    def change(old: str | None, new: str | None) -> FileChange:
        return index[(old, new)]

    assert change("x b/y.txt", "x b/y.txt").status == "modified"
    assert change("café.txt", "café.txt").added == 1  # quoted "caf\303\251.txt" unquoted
    assert change("l\\xe9gacy.txt", "l\\xe9gacy.txt").added == 1  # not UTF-8: shown, not lost
    assert change("tab\tname.txt", "tab\tname.txt").removed == 1
    assert change('quote"name.txt', 'quote"name.txt').added == 1
    assert (change("crlf.txt", "crlf.txt").added, change("crlf.txt", "crlf.txt").removed) == (2, 1)
    assert (change("latin1.txt", "latin1.txt").added, change("latin1.txt", "latin1.txt").removed) == (2, 1)
    assert change("lone_cr.txt", "lone_cr.txt").added == 1  # "\r" does not end a line
    assert change("bin.dat", "bin.dat").binary
    assert change("bin.dat", "bin.dat").added == 0
    assert change("bin_gone.dat", None).status == "deleted"
    assert change("bin_gone.dat", None).binary
    assert change(None, "bin_new.png").status == "added"
    assert change(None, "bin_new.png").binary
    assert change("link", "link").added == 1
    assert change("link_gone", None).status == "deleted"
    assert change(None, "link_new").added == 1
    mode = change("mode.sh", "mode.sh")
    assert (mode.mode_change, mode.added, mode.removed, mode.status) == (True, 0, 0, "modified")
    assert change("gone.txt", None).removed == 3
    assert change("empty_gone.txt", None).status == "deleted"
    empty = change(None, "empty_new.txt")
    assert (empty.status, empty.added, empty.binary) == ("added", 0, False)
    # A type change (file -> symlink) is a deletion and an addition of the same path.
    assert change("typechange", None).removed == 1
    assert change(None, "typechange").added == 1
    assert change(None, "run.sh").mode_change is False  # a new executable file is not a mode change
    assert change(None, "ünï/dïr/fïlé.txt").added == 2
    assert change(None, "new\nline.txt").added == 1
    # --no-renames: a moved file is a deletion plus an addition.
    assert change("src/old_test.py", None).status == "deleted"
    assert change(None, "src/moved/old_test.py").status == "added"
    assert change("x b/run me.sh", "x b/run me.sh").mode_change
    assert [c.new_path for c in changes if c.mode_change] == ["mode.sh", "x b/run me.sh"]


@pytest.mark.parametrize(
    "config",
    [
        ["-c", "core.quotePath=false"],  # raw UTF-8 and raw Latin-1 bytes in the headers
        ["-c", "diff.noprefix=true"],
        ["-c", "diff.mnemonicPrefix=true"],
        ["--src-prefix=left/", "--dst-prefix=right/"],
    ],
)
def test_it_reads_the_same_paths_whatever_the_prefix_and_quoting(
    awkward: tuple[GitRepo, str], config: list[str]
) -> None:
    repo, base = awkward
    default = parse_diff(workspace_diff(repo, base))
    options = [c for c in config if c.startswith("--")]
    config = [c for c in config if not c.startswith("--")]
    other = parse_diff(git_bytes(repo, *config, "diff", "--cached", *DIFF_ARGS, *options, base))
    assert other == default


def test_it_counts_the_agent_commits_and_untracked_files(git_repo: GitRepo) -> None:
    git_repo.write("a.txt", "1\n")
    base = git_repo.commit("base")
    git_repo.write("a.txt", "1\n2\n")
    git_repo.commit("agent commit")
    git_repo.write("new.txt", "n\n")  # untracked until workspace_diff adds it
    changes = parse_diff(workspace_diff(git_repo, base))
    summary = [(c.new_path, c.status, c.added) for c in changes]
    assert summary == [("a.txt", "modified", 1), ("new.txt", "added", 1)]


def test_an_empty_diff_is_no_change(git_repo: GitRepo) -> None:
    git_repo.write("a.txt", "1\n")
    base = git_repo.commit("base")
    data = workspace_diff(git_repo, base)
    assert data == b""
    assert parse_diff(data) == []
    assert parse_diff("\n\n") == []


def test_a_rename_detected_diff_keeps_both_paths(git_repo: GitRepo) -> None:
    git_repo.write("old/name.py", "".join(f"line {i}\n" for i in range(20)))
    base = git_repo.commit("base")
    (git_repo.path / "old/name.py").unlink()
    git_repo.write("new dir/name.py", "".join(f"line {i}\n" for i in range(19)) + "changed\n")
    git_repo.git("add", "-A")
    data = git_bytes(git_repo, "diff", "--cached", "-M", base)
    assert b"rename from" in data
    (change,) = parse_diff(data)
    assert (change.old_path, change.new_path, change.status) == ("old/name.py", "new dir/name.py", "modified")
    assert (change.added, change.removed) == (1, 1)


def test_a_crlf_converted_diff_parses_like_the_original(awkward: tuple[GitRepo, str]) -> None:
    repo, base = awkward
    data = workspace_diff(repo, base)
    converted = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    assert parse_diff(converted) == parse_diff(data)


def test_it_reads_a_plain_unified_diff(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    (old / "pkg").mkdir(parents=True)
    (new / "pkg").mkdir(parents=True)
    (old / "pkg/a.py").write_text("1\n2\n3\n")
    (new / "pkg/a.py").write_text("1\n2b\n3\n4\n")
    (old / "gone.py").write_text("x\n")
    (new / "fresh.py").write_text("y\nz\n")
    result = subprocess.run(
        ["diff", "-ruN", "old", "new"], cwd=tmp_path, capture_output=True, check=False, env={"LC_ALL": "C"}
    )
    assert result.returncode == 1
    changes = parse_diff(result.stdout)
    # diff -N writes absent files with an empty side, not /dev/null: statuses cannot be told, paths can.
    assert {c.new_path: (c.added, c.removed) for c in changes} == {
        "fresh.py": (2, 0),
        "gone.py": (0, 1),
        "pkg/a.py": (2, 1),
    }


def test_it_reads_format_patch_output(git_repo: GitRepo) -> None:
    git_repo.write("a.txt", "1\n")
    git_repo.commit("base")
    git_repo.write("a.txt", "1\n-- \n2\n")  # content lines that look like the signature separator
    git_repo.write("b.bin", b"\x00\x01")
    git_repo.commit("change\n\n--- not a header\n+++ neither\n")
    data = git_bytes(git_repo, "format-patch", "-1", "--stdout", "--binary", "--no-renames")
    changes = parse_diff(data)
    assert [(c.new_path, c.added, c.binary) for c in changes] == [("a.txt", 2, False), ("b.bin", 0, True)]


# --- bad input ---------------------------------------------------------------------------------------


def test_binary_garbage_is_not_a_diff() -> None:
    with pytest.raises(InputError) as exc:
        parse_diff(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "run/workspace.diff")
    assert str(exc.value) == "run/workspace.diff: line 3: NUL byte: binary data, not a diff"
    with pytest.raises(InputError) as exc:
        parse_diff(bytes(range(1, 256)) * 3, "run/workspace.diff")
    assert "not a diff" in str(exc.value)
    assert exc.value.file == "run/workspace.diff"
    assert exc.value.field == "line 1"


def test_a_byte_order_mark_does_not_hide_the_first_file_and_utf16_is_refused(git_repo: GitRepo) -> None:
    git_repo.write("a.sh", "echo\n")
    base = git_repo.commit("base")
    (git_repo.path / "a.sh").chmod(0o755)  # a mode change: its whole diff is header lines
    git_repo.write("b.txt", "b\n")
    data = workspace_diff(git_repo, base)
    assert data.startswith(b"diff --git a/a.sh b/a.sh\nold mode")
    assert parse_diff("\ufeff".encode() + data) == parse_diff(data)
    with pytest.raises(InputError, match="w.diff: line 1: UTF-16 text"):
        parse_diff(data.decode().encode("utf-16"), "w.diff")


def test_load_diff_refuses_a_diff_over_the_size_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "workspace.diff"
    path.write_text("diff --git a/f b/f\nnew file mode 100644\nindex 0000000..e69de29\n")
    monkeypatch.setattr(diffs, "MAX_DIFF_BYTES", path.stat().st_size - 1)
    with pytest.raises(InputError, match=r"workspace.diff: \d+ bytes; diffs over \d+ bytes are refused"):
        load_diff(path)
    monkeypatch.setattr(diffs, "MAX_DIFF_BYTES", path.stat().st_size)
    assert [c.status for c in load_diff(path)] == ["added"]


def test_text_that_is_not_a_diff_is_refused() -> None:
    with pytest.raises(InputError, match=r"x.diff: line 2: not a diff"):
        parse_diff("\nI fixed the bug, see the commit.\n", "x.diff")


def test_every_truncation_inside_a_hunk_or_binary_patch_is_an_error(awkward: tuple[GitRepo, str]) -> None:
    repo, base = awkward
    data = workspace_diff(repo, base)
    lines = data.split(b"\n")
    full = parse_diff(data)
    errors = 0
    for cut in range(1, len(lines)):
        prefix = b"\n".join(lines[:cut]) + b"\n"
        try:
            changes = parse_diff(prefix, "cut.diff")
        except InputError as exc:
            errors += 1
            assert exc.file == "cut.diff"
            assert exc.field is not None and exc.field.startswith("line ")
            continue
        # A cut between files, or between the hunks of one file, is all that can pass unnoticed.
        assert changes[:-1] == full[: len(changes) - 1]
        last, twin = changes[-1], full[len(changes) - 1]
        assert last.model_dump(exclude={"added", "removed"}) == twin.model_dump(exclude={"added", "removed"})
        assert last.added <= twin.added and last.removed <= twin.removed
    assert errors > len(lines) // 2


def test_a_diff_cut_inside_a_hunk_names_the_last_line() -> None:
    data = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n"
    with pytest.raises(InputError) as exc:
        parse_diff(data, "w.diff")
    assert exc.value.field == "line 6"
    assert "truncated" in str(exc.value)


def test_a_hunk_longer_than_its_header_is_an_error() -> None:
    data = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n"
    with pytest.raises(InputError, match="line 7: unexpected line"):
        parse_diff(data, "w.diff")


def test_a_malformed_hunk_header_is_an_error() -> None:
    data = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +x @@\n-a\n"
    with pytest.raises(InputError, match="line 4: malformed hunk header"):
        parse_diff(data, "w.diff")


def test_a_corrupt_binary_patch_is_an_error(git_repo: GitRepo) -> None:
    git_repo.write("keep.txt", "k\n")
    base = git_repo.commit("base")
    git_repo.write("b.bin", b"\x00" + os.urandom(300))
    data = workspace_diff(git_repo, base)
    lines = data.split(b"\n")
    data_line = next(i for i, line in enumerate(lines) if line.startswith(b"literal ")) + 1
    corrupted = lines.copy()
    corrupted[data_line] = corrupted[data_line][:-3]  # a shortened base85 line
    with pytest.raises(InputError, match=f"line {data_line + 1}: corrupt binary patch line"):
        parse_diff(b"\n".join(corrupted))
    swapped = lines.copy()
    swapped[data_line] = swapped[data_line][:1] + b"0" * (len(swapped[data_line]) - 1)
    with pytest.raises(InputError, match="corrupt binary patch"):
        parse_diff(b"\n".join(swapped))


def test_a_garbled_line_between_files_is_an_error() -> None:
    data = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\nreviewer: all good\n"
    with pytest.raises(InputError, match="line 7: unexpected line"):
        parse_diff(data)


def test_load_diff_names_a_missing_file_and_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="workspace.diff: file not found"):
        load_diff(tmp_path / "workspace.diff")
    with pytest.raises(InputError, match="is a directory"):
        load_diff(tmp_path)


def test_load_diff_reads_the_file(awkward: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, base = awkward
    path = tmp_path / "workspace.diff"
    path.write_bytes(workspace_diff(repo, base))
    assert load_diff(path) == parse_diff(path.read_bytes())


def test_unquote_path() -> None:
    assert unquote_path('"caf\\303\\251.txt"') == "café.txt"
    assert unquote_path('"a\\tb\\\\c\\"d"') == 'a\tb\\c"d'
    assert unquote_path('"l\\351.txt"') == "l\\xe9.txt"
    assert unquote_path('"unterminated') is None
    assert unquote_path("plain name") == "plain name"


def test_a_large_diff_is_counted_line_for_line(git_repo: GitRepo) -> None:
    # How fast: benchmarks/scope_integrity.py.
    git_repo.write("keep.txt", "k\n")
    base = git_repo.commit("base")
    for n in range(50):
        git_repo.write(f"gen/file_{n}.txt", "".join(f"line {i} of {n}\n" for i in range(4000)))
    changes = parse_diff(workspace_diff(git_repo, base))
    assert sum(c.added for c in changes) == 200_000


def test_a_binary_literal_is_never_inflated() -> None:
    # A compression bomb: 128 MiB of zeros in a diff of about 170 KB. Scope and integrity need its path
    # only; inflating it took the whole size in memory (1 GiB: 2.1 GB and seconds). Time: benchmarks/.
    data = zeros_literal_diff("bomb.bin", 128 << 20)
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        changes = parse_diff(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert changes == [FileChange(old_path=None, new_path="bomb.bin", status="added", binary=True)]
    assert peak < 16 << 20, peak


def test_a_binary_patch_whose_data_is_not_zlib_is_an_error() -> None:
    data = zeros_literal_diff("z.bin", 1000)
    lines = data.split(b"\n")
    first = lines.index(b"literal 1000") + 1
    body = base64.b85encode(b"not a zlib stream, just bytes!!!" + bytes(20))
    lines[first] = b"z" + body
    with pytest.raises(InputError, match=f"line {first + 1}: corrupt binary patch .*not a zlib stream"):
        parse_diff(b"\n".join(lines))


def test_a_header_full_of_spaces_parses_in_linear_time() -> None:
    # Each space of "diff --git a/N b/N" is a candidate split; slicing at every one was quadratic (about
    # 7 s for 400,000 spaces). The diff is agent-written, so the line can be that long.
    name = "d/" + " " * 300_000 + "x.txt"
    data = f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-a\n+b\n"
    changes = parse_diff(data)  # quadratic would take minutes here; benchmarks/ times it
    assert changes == [FileChange(old_path=name, new_path=name, status="modified", added=1, removed=1)]
    # --no-prefix and an ambiguous split still behave as before
    assert parse_diff("diff --git a b a b\n--- a b\n+++ a b\n@@ -1 +1 @@\n-a\n+b\n")[0].new_path == "a b"
