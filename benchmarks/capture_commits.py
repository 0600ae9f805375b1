"""The capture on real-shaped commits, in process, against ``git diff --binary --full-index --no-renames``.

    .venv/bin/python benchmarks/capture_commits.py [--repo PATH] [--commits N] [--repeat N]

Real runs are mostly small changes, where the capture's fixed costs (git processes, the scratch git
directory, reading the snapshot and its private record) dominate, not the size of the diff. For each
commit C of a history this script checks out its parent P in a work tree, takes the snapshot there (not
timed), applies P..C to the work tree alone (``git apply``: new files stay untracked, as an agent leaves
them), then times ``grading.workspace.diff.capture`` (the library, in this process) and, in turns with it,
``git diff --binary --full-index --no-renames P`` in the same work tree. Each commit's ratio is the
fastest capture over the fastest git diff; the table gives the median, the 95th percentile and the
largest ratio over the commits.

The synthetic history (always measured) has many one- to three-file commits, renames, a binary file, a
symbolic link, a lock file rewritten in part and a deletion. ``--repo`` adds the last ``--commits``
non-merge commits of the first-parent history of a repository already on this machine (a bare git
directory or a work tree; nothing is downloaded): it is cloned locally with ``--shared``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO_ROOT, Row, env, git, machine, print_table, run

sys.path.insert(0, str(REPO_ROOT))

from grading.workspace.diff import capture, write_snapshot

_DIFF = ("diff", "--binary", "--full-index", "--no-renames")


def _commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def synthetic_history(repo: Path, commits: int) -> None:
    """A repository of about 300 files and ``commits`` real-shaped commits after its first."""
    rng = random.Random(34)
    git(repo, "init", "-q", "-b", "main")
    for i in range(300):
        d = repo / "src" / f"pkg{i % 12}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(30)))
    (repo / "package-lock.json").write_text(
        "".join(
            f'    "node_modules/p{j}": {{"version": "1.{j}.0", "integrity": "sha512-{j:064x}"}},\n'
            for j in range(4000)
        )  # fmt: skip
    )
    (repo / "logo.png").write_bytes(bytes(rng.randrange(256) for _ in range(20_000)))
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    _commit(repo, "base")
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / "src").rglob("*.py"))
    for n in range(commits):
        kind = n % 10
        if kind == 3:  # a rename, with a small edit
            old = files.pop(rng.randrange(len(files)))
            new = old.replace(".py", f"_r{n}.py")
            git(repo, "mv", old, new)
            (repo / new).write_text((repo / new).read_text() + f"# moved {n}\n")
            files.append(new)
        elif kind == 5:  # a binary file rewritten in part
            data = bytearray((repo / "logo.png").read_bytes())
            for _ in range(50):
                data[rng.randrange(len(data))] = rng.randrange(256)
            (repo / "logo.png").write_bytes(bytes(data))
        elif kind == 6:  # a symbolic link added, or retargeted
            link = repo / "src" / "current.py"
            if link.is_symlink():
                link.unlink()
            link.symlink_to(rng.choice(files).split("/", 1)[1])
        elif kind == 7:  # a lock file: a block of versions bumped
            lines = (repo / "package-lock.json").read_text().splitlines(keepends=True)
            start = rng.randrange(len(lines) - 200)
            for j in range(start, start + rng.randrange(5, 200)):
                lines[j] = lines[j].replace('.0"', f'.{n}"', 1)
            (repo / "package-lock.json").write_text("".join(lines))
        elif kind == 8:  # a new file, and a deletion
            (repo / "src" / f"new{n}.py").write_text(f"NEW = {n}\n")
            files.append(f"src/new{n}.py")
            (repo / files.pop(rng.randrange(len(files)))).unlink()
        else:  # the common case: one to three files edited by a few lines
            for path in rng.sample(files, rng.randrange(1, 4)):
                text = (repo / path).read_text().splitlines(keepends=True)
                at = rng.randrange(len(text))
                text[at : at + 1] = [f"    y = {n}  # edited\n", text[at]]
                (repo / path).write_text("".join(text))
        _commit(repo, f"change {n}")


def commit_pairs(repo: Path, count: int) -> list[tuple[str, str]]:
    """(parent, commit) of the last ``count`` non-merge commits on the first-parent history."""
    out = git(repo, "rev-list", "--first-parent", "--no-merges", "--parents", f"--max-count={count}", "HEAD")
    pairs = []
    for line in out.decode().splitlines():
        ids = line.split()
        if len(ids) == 2:
            pairs.append((ids[1], ids[0]))
    return pairs[::-1]


def measure(
    repo: Path, pairs: list[tuple[str, str]], scratch: Path, repeat: int
) -> list[tuple[float, float]]:
    """(fastest capture, fastest git diff) per commit; the two taken in turns."""
    work = scratch / "work"
    run(["git", "clone", "-q", "--shared", "--no-checkout", str(repo), str(work)])
    results = []
    for parent, commit in pairs:
        git(work, "checkout", "-q", "-f", "--detach", parent)
        git(work, "clean", "-q", "-f", "-d", "-x")
        snap = scratch / "snapshot"
        write_snapshot(work, snap)
        patch = git(work, *_DIFF, parent, commit)
        if patch:
            subprocess.run(
                ["git", "apply", "--whitespace=nowarn", "-"], cwd=work, env=env(), input=patch, check=True
            )
        out = scratch / "run"
        ours, theirs = float("inf"), float("inf")
        for _ in range(repeat):
            started = time.perf_counter()
            capture(work, parent, snap, out)
            ours = min(ours, time.perf_counter() - started)
            started = time.perf_counter()
            git(work, *_DIFF, parent)
            theirs = min(theirs, time.perf_counter() - started)
        results.append((ours, theirs))
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def rows_for(name: str, results: list[tuple[float, float]]) -> list[Row]:
    ratios = [o / t for o, t in results]
    ours = statistics.median(o for o, _ in results)
    theirs = statistics.median(t for _, t in results)
    median, p95 = statistics.median(ratios), percentile(ratios, 0.95)
    ref = "`git diff --binary --full-index --no-renames`"
    return [
        Row(f"{name}: median of {len(results)} commits", median * theirs, ref, theirs, 2.0),
        Row(f"{name}: 95th percentile", p95 * theirs, ref, theirs, 4.0),
        Row(f"{name}: largest", max(ratios) * theirs, ref, theirs, None),
        Row(f"{name}: median capture time (not a ratio of the same commit)", ours, ref, theirs, None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, help="a repository on this machine (bare or not)")
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        synthetic = root / "synthetic"
        synthetic.mkdir()
        synthetic_history(synthetic, args.commits)
        (root / "s").mkdir()
        found = measure(synthetic, commit_pairs(synthetic, args.commits), root / "s", args.repeat)
        rows += rows_for("synthetic history", found)
        if args.repo is not None:
            (root / "r").mkdir()
            found = measure(args.repo, commit_pairs(args.repo, args.commits), root / "r", args.repeat)
            where = args.repo.resolve()
            name = where.parent.name if where.name in ("repo", ".git") else where.name
            rows += rows_for(f"`{name}` history", found)
    print_table(
        "Capture on real-shaped commits (in process)",
        rows,
        [
            "Per commit: the fastest of "
            f"{args.repeat} captures over the fastest of {args.repeat} git diffs, taken in turns; the ratios "
            "are over the commits. The time column of the first three rows is the ratio times the median "
            f"git diff. Load average {os.getloadavg()[0]:.1f}; {machine()}."
        ],
    )


if __name__ == "__main__":
    main()
