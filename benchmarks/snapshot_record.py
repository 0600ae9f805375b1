"""What the snapshot's private record costs (issue 18 point 1): ``rubric snapshot`` with its record against
the same scan without it, ``rubric capture`` from the record against ``git diff --binary``, and the disk
the record takes against the repository's ``.git``.

    .venv/bin/python benchmarks/snapshot_record.py --files 3000 --repeat 3

The repository: ``--files`` Python files of about 2 KB in 30 directories, with ``--commits`` commits of
history, packed as a clone would be. The run changes 30 files and writes garbage into ``.git/index``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _common import RUBRIC, Row, git, machine, print_table, time_commands

TAKE_ONLY = "import sys; from pathlib import Path; from grading.workspace.diff import take_snapshot; " \
    "take_snapshot(Path(sys.argv[1]))"  # fmt: skip


def build(root: Path, files: int, commits: int) -> tuple[Path, str]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    body = "".join(f"def function_{i}(x):\n    return x * {i}\n\n" for i in range(60))
    for n in range(files):
        path = repo / "src" / f"d{n % 30}" / f"module_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {n}\n{body}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    for c in range(commits):
        for n in range(c, files, max(1, files // 50)):
            path = repo / "src" / f"d{n % 30}" / f"module_{n}.py"
            path.write_text(path.read_text() + f"# commit {c}\n")
        git(repo, "commit", "-q", "-am", f"commit {c}")
    git(repo, "gc", "-q")
    return repo, git(repo, "rev-parse", "HEAD").decode().strip()


def size_of(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        repo, base = build(root, args.files, args.commits)
        snapshot = root / "before.txt"
        run_dir = root / "run"
        snap_cmd = [*RUBRIC, "snapshot", repo, "-o", snapshot]
        take_cmd = [sys.executable, "-c", TAKE_ONLY, repo]
        snap_times = time_commands({"snapshot": snap_cmd, "scan": take_cmd}, args.repeat)
        record = snapshot.with_name(snapshot.name + ".git")
        record_bytes, git_bytes = size_of(record), size_of(repo / ".git")
        pack_bytes = size_of(record / "objects")
        for n in range(0, args.files, args.files // 30):
            path = repo / "src" / f"d{n % 30}" / f"module_{n}.py"
            path.write_text(path.read_text() + "# the agent's edit\n")
        capture = [*RUBRIC, "capture", repo, "--base", base, "--before", snapshot, "--out", run_dir]
        # The same snapshot as version 3 (no record): the capture as it was, reading the workspace's .git
        v3 = root / "before-v3.txt"
        v3.write_bytes(snapshot.read_bytes().replace(b"# rubric snapshot v4", b"# rubric snapshot v3", 1))
        old = [*RUBRIC, "capture", repo, "--base", base, "--before", v3, "--out", root / "run-v3"]
        times = time_commands(
            {"binary": ["git", "-C", repo, "diff", "--binary", base], "capture": capture, "old": old},
            args.repeat,
        )
        (repo / ".git" / "index").write_bytes(b"garbage written by the run\n")
        damaged = time_commands({"capture": capture}, args.repeat)["capture"]
        changes = (run_dir / "git_dir_changes.txt").read_text().splitlines()
    rows = [
        Row("`rubric snapshot` (with the record)", snap_times["snapshot"], "the scan alone (no record)",
            snap_times["scan"], None),
        Row("`rubric capture`, 30 files changed", times["capture"], "the same from a v3 snapshot (no record)",
            times["old"], None),
        Row("`rubric capture`, 30 files changed", times["capture"], "`git diff --binary`", times["binary"],
            None),
        Row("`rubric capture`, `.git/index` garbage", damaged, "the same from a v3 snapshot (no record)",
            times["old"], None),
    ]  # fmt: skip
    print_table(
        f"Snapshot record: {args.files} files, {args.commits + 1} commits",
        rows,
        [
            f"Disk: the record takes {record_bytes / 1e6:.1f} MB ({pack_bytes / 1e6:.1f} MB of it the pack "
            f"of HEAD's objects) against {git_bytes / 1e6:.1f} MB for the repository's `.git`; "
            f"the damaged capture named {changes}.",
            f"Fastest of {args.repeat} runs each, the commands taken in turns; {machine()}.",
        ],
    )


if __name__ == "__main__":
    main()
