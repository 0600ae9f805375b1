"""The capture on real-shaped commits, in process, against ``git diff --binary --full-index --no-renames``.

    .venv/bin/python benchmarks/capture_commits.py [--repo PATH] [--commits N] [--repeat N]

Real runs are mostly small changes, where the capture's fixed costs (git processes, the scratch git
directory, reading the snapshot and its private record) dominate, not the size of the diff. For each
commit C of a history this script checks out its parent P in a work tree, takes the snapshot there (not
timed), applies P..C to the work tree alone (``git apply``: new files stay untracked, as an agent leaves
them), then times ``grading.workspace.diff.capture`` (the library, in this process) and, in turns with it,
``git diff --binary --full-index --no-renames P`` in the same work tree. Each commit's ratio is the
fastest capture over the fastest git diff; the table gives the median, the 95th percentile and the
largest ratio over the commits. Beside the wall-clock ratios, the same ratios of CPU time (user and system,
this process and its children, ``resource.getrusage``), which a loaded machine moves less.

The synthetic history (always measured) has many one- to three-file commits, renames, a binary file, a
symbolic link, a lock file rewritten in part and a deletion. ``--repo`` adds the last ``--commits``
non-merge commits of the first-parent history of a repository already on this machine (a bare git
directory or a work tree; nothing is downloaded): it is cloned locally with ``--shared``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import REPO_ROOT, Goal, Row, env, git, load, machine, print_table, run

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


def _cpu() -> float:
    """CPU seconds (user and system) of this process and its waited-for children so far."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _timed(action: Callable[..., object], *args: object) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds) of one call ``action(*args)``."""
    cpu, started = _cpu(), time.perf_counter()
    action(*args)
    return time.perf_counter() - started, _cpu() - cpu


def measure(repo: Path, pairs: list[tuple[str, str]], scratch: Path, repeat: int) -> list[Timing]:
    """The fastest capture and git diff per commit, wall clock and CPU; the two taken in turns."""
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
        best = Timing(float("inf"), float("inf"), float("inf"), float("inf"))
        for _ in range(repeat):
            ours, ours_cpu = _timed(capture, work, parent, snap, out)
            theirs, theirs_cpu = _timed(git, work, *_DIFF, parent)
            best = Timing(
                min(best.ours, ours),
                min(best.theirs, theirs),
                min(best.ours_cpu, ours_cpu),
                min(best.theirs_cpu, theirs_cpu),
            )
        results.append(best)
    return results


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Timing:
    """One commit's fastest capture and git diff, in wall-clock and CPU seconds."""

    ours: float
    theirs: float
    ours_cpu: float
    theirs_cpu: float


@dataclass(frozen=True)
class Figures:
    """The ratios over the commits of one history."""

    commits: int
    median: float
    p95: float
    largest: float
    cpu_median: float
    cpu_p95: float
    median_ours: float  # seconds
    median_theirs: float


def figures(results: list[Timing]) -> Figures:
    ratios = [t.ours / t.theirs for t in results]
    # CPU time is counted in clock ticks: a git diff may show 0; one tick is then the floor
    cpu = [t.ours_cpu / max(t.theirs_cpu, 0.001) for t in results]
    return Figures(
        len(results),
        statistics.median(ratios),
        percentile(ratios, 0.95),
        max(ratios),
        statistics.median(cpu),
        percentile(cpu, 0.95),
        statistics.median(t.ours for t in results),
        statistics.median(t.theirs for t in results),
    )


def rows_for(name: str, found: Figures) -> list[Row]:
    ref = "`git diff --binary --full-index --no-renames`"
    theirs = found.median_theirs
    return [
        Row(f"{name}: median of {found.commits} commits", found.median * theirs, ref, theirs, 2.0),
        Row(f"{name}: 95th percentile", found.p95 * theirs, ref, theirs, 4.0),
        Row(f"{name}: largest", found.largest * theirs, ref, theirs, None),
        Row(f"{name}: CPU time, median", found.cpu_median * theirs, f"{ref} (CPU)", theirs, None),
        Row(f"{name}: CPU time, 95th percentile", found.cpu_p95 * theirs, f"{ref} (CPU)", theirs, None),
        Row(
            f"{name}: median capture time (not a ratio of the same commit)",
            found.median_ours,
            ref,
            theirs,
            None,
        ),
    ]


def histories(commits: int, repeat: int, repo: Path | None) -> list[tuple[str, Figures]]:
    """The synthetic history's figures and, with ``repo``, that repository's."""
    found: list[tuple[str, Figures]] = []
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        synthetic = root / "synthetic"
        synthetic.mkdir()
        synthetic_history(synthetic, commits)
        (root / "s").mkdir()
        timings = measure(synthetic, commit_pairs(synthetic, commits), root / "s", repeat)
        found.append(("synthetic history", figures(timings)))
        if repo is not None:
            (root / "r").mkdir()
            timings = measure(repo, commit_pairs(repo, commits), root / "r", repeat)
            where = repo.resolve()
            name = where.parent.name if where.name in ("repo", ".git") else where.name
            found.append((f"`{name}` history", figures(timings)))
    return found


def report(found: list[tuple[str, Figures]], repeat: int) -> None:
    rows = [row for name, figs in found for row in rows_for(name, figs)]
    print_table(
        "Capture on real-shaped commits (in process)",
        rows,
        [
            "Per commit: the fastest of "
            f"{repeat} captures over the fastest of {repeat} git diffs, taken in turns, in wall-clock and in "
            "CPU time (user and system, with children); the ratios are over the commits. The time column of "
            f"the ratio rows is the ratio times the median git diff. {load()}; {machine()}."
        ],
    )


def goals(quick: bool = False) -> list[Goal]:
    """Issue 34 §1: median <= 2x and p95 <= 4x git diff. Quick: 30 commits, 3 rounds each. A repository
    named by ``RUBRICS_BENCH_CAPTURE_REPO`` (already on the machine) is measured too."""
    commits, repeat = (30, 3) if quick else (60, 5)
    named = os.environ.get("RUBRICS_BENCH_CAPTURE_REPO")
    found = histories(commits, repeat, Path(named) if named else None)
    report(found, repeat)
    result = []
    for name, figs in found:
        note = f"CPU time {figs.cpu_median:.2f}x (median), {figs.cpu_p95:.2f}x (p95); {load()}"
        result += [
            Goal(
                "issue 34 §1: capture",
                f"{name}, median of {figs.commits} commits",
                figs.median,
                2.0,
                note=note,
            ),
            Goal("issue 34 §1: capture", f"{name}, 95th percentile", figs.p95, 4.0, note=note),
        ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, help="a repository on this machine (bare or not)")
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    report(histories(args.commits, args.repeat, args.repo), args.repeat)


if __name__ == "__main__":
    main()
