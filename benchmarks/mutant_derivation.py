"""Mutant derivation on a 10 MB oracle of two shapes: ``grading.mutants.derive.derive_mutants``.

    .venv/bin/python benchmarks/mutant_derivation.py [--megabytes 10] [--repeat 3]

A real commit that rewrote a 272 KB lock file (21 hunks, up to 67,000 characters each) took 160-367 s to
derive mutants when one-place compared whole hunk texts with difflib. The oracle here is generated the same
way, larger: a ``poetry.lock`` whose packages are bumped in runs (hunks of one to sixty packages, their
hashes changed) and one at a time (one version line: near-identical small hunks, which one-place groups),
beside two Python files with a condition changed. The other shape is many small hunks: a name changed on
every eighth line of 100 Python files (one-line hunks, tens of thousands of them), which costs per hunk
rather than per byte. The third is a source layout reorganised (189 modules moved, read without rename
detection): whole files deleted and added, near-identical in pairs, which one-place compares pairwise.
Goal: derivation under 2 s for an oracle up to 10 MB.
The reference is reading the same oracle with ``grading.diffs.read_diff``, which derivation does first:
the ratio is what deriving costs over reading.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import REPO_ROOT, Goal, Row, git, load, machine, print_table

sys.path.insert(0, str(REPO_ROOT))

from grading.diffs import read_diff
from grading.mutants.derive import derive_mutants

KERNEL = (
    "def run(fraction, rows):\n    if fraction > 1.0:\n        raise ValueError(fraction)\n    return rows\n"
)


def package(n: int, version: str, salt: str) -> str:
    digest = hashlib.sha256(f"{n}-{version}-{salt}".encode()).hexdigest()
    files = "".join(
        f'    {{file = "package_{n}-{version}-py3-none-any-{k}.whl", hash = "sha256:{digest}"}},\n'
        for k in range(6)
    )
    return (
        f'[[package]]\nname = "package-{n}"\nversion = "{version}"\ndescription = "Package {n}"\n'
        f'optional = false\npython-versions = ">=3.8"\nfiles = [\n{files}]\n\n'
    )


def lock_files(megabytes: float, seed: int = 0) -> tuple[str, str]:
    """The lock file before and after, sized so that their diff is about ``megabytes``."""
    rng = random.Random(seed)
    before: list[str] = []
    after: list[str] = []
    n = 0
    changed = 0
    while changed < megabytes * 1.05e6:  # a little over: the diff holds headers too, not only changes
        for _ in range(rng.randint(3, 8)):  # unchanged packages between two hunks
            block = package(n, "1.0.0", "same")
            before.append(block)
            after.append(block)
            n += 1
        if rng.random() < 0.5:  # one version bump: a small hunk, like many others
            before.append(package(n, "1.0.0", "same"))
            after.append(package(n, "1.0.0", "same").replace('version = "1.0.0"', 'version = "1.0.1"'))
            changed += 40
            n += 1
        else:  # a run of packages rewritten: a large hunk
            for _ in range(rng.randint(1, 60)):
                old, new = package(n, "1.0.0", "old"), package(n, "2.0.0", "new")
                before.append(old)
                after.append(new)
                changed += len(old) + len(new)
                n += 1
    return "".join(before), "".join(after)


def renamed_files(megabytes: float, files: int = 100) -> dict[str, tuple[str, str]]:
    """Python files before and after a rename on every eighth line (each a one-line hunk: three lines of
    context either side, the seventh between two of them shown by neither), sized so that their diff is
    about ``megabytes``."""
    budget = megabytes * 1e6 / files
    out: dict[str, tuple[str, str]] = {}
    for f in range(files):
        before = ["def run(w):\n"]
        after = ["def run(w):\n"]
        size = 0
        h = 0
        while size < budget:
            context = [f"    a{h}_{k} = w[{k}]\n" for k in range(7)]
            old, new = f"    r{h} = old(a{h}_0)\n", f"    r{h} = new(a{h}_0)\n"
            before += [*context, old]
            after += [*context, new]
            # in the diff: the header, three context lines either side (one byte more each), the two lines
            size += len(f"@@ -{8 * h + 6},7 +{8 * h + 6},7 @@ def run(w):\n") + sum(map(len, context[1:])) + 6
            size += len(old) + len(new) + 2
            h += 1
        out[f"pkg/module_{f:03d}.py"] = ("".join(before), "".join(after))
    return out


def renamed_diff(root: Path, megabytes: float) -> bytes:
    repo = root / "renamed"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q")
    files = renamed_files(megabytes)
    for name, (before, _) in files.items():
        (repo / name).write_text(before)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for name, (_, after) in files.items():
        (repo / name).write_text(after)
    return git(repo, "diff", "--full-index")


WORDS = [
    *("self", "image", "mode", "size", "data", "value", "index", "offset", "buffer", "width", "height"),
    *("pixel", "band", "format", "palette", "tile", "decoder", "encoder", "header", "stream", "count"),
    *("result", "error", "name", "path", "info", "frame", "channel", "scale"),
]


def module_text(rng: random.Random, size: int) -> str:
    """Python-like source of about ``size`` bytes, from a vocabulary every file shares (as modules of one
    project do), so that two files share many trigrams without being alike."""
    lines = [f"import {rng.choice(WORDS)}\n", "\n"]
    total = sum(map(len, lines))
    while total < size:
        a, b, c = (rng.choice(WORDS) for _ in range(3))
        line = rng.choice(
            [
                f"def {a}_{b}(self, {c}):\n",
                f"    {a} = self.{b}[{c}]\n",
                f"    if {a} > {rng.randint(0, 999)}:\n",
                f"        return {b}.{c}({a}, {rng.randint(0, 99)})\n",
                f"    # {a} {b} {c} {rng.randint(0, 9999)}\n",
            ]
        )
        lines.append(line)
        total += len(line)
    return "".join(lines)


def moved_diff(root: Path, megabytes: float, files: int = 189) -> bytes:
    """A source layout reorganised: ``files`` modules moved to another folder, unchanged. Without rename
    detection (as captures are read) each is a whole file deleted and a whole file added, one hunk each,
    and each pair is near-identical. Most modules are small (compared by one-place), a few are large and
    hold most of the bytes."""
    rng = random.Random(1)
    small = min(files, 140)  # 280 hunks: under one-place's 300-hunk limit, so every pair is compared
    sizes = [rng.randint(600, 1900) for _ in range(small)]
    rest = max(megabytes * 1e6 / 2.1 - sum(sizes), 0)
    sizes += [int(rest / (files - small))] * (files - small)
    repo = root / "moved"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    names = [f"mod_{i:03d}.py" for i in range(files)]
    for name, size in zip(names, sizes, strict=True):
        (repo / name).write_text(module_text(rng, size))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for name in names:
        (repo / name).rename(repo / "src" / name)
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "--full-index", "--no-renames")


def oracle_diff(root: Path, megabytes: float) -> bytes:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    before, after = lock_files(megabytes)
    (repo / "poetry.lock").write_text(before)
    for name in ("cpu", "gpu"):
        (repo / f"{name}.py").write_text(KERNEL)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "poetry.lock").write_text(after)
    for name in ("cpu", "gpu"):
        (repo / f"{name}.py").write_text(KERNEL.replace("fraction > 1.0", "fraction >= 1.0"))
    return git(repo, "diff", "--full-index")


SHAPES = {
    "lock-file-like": oracle_diff,
    "many one-line hunks": renamed_diff,
    "moved files": moved_diff,
}


def median_of(repeat: int, action: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(megabytes: float, repeat: int, sizes: tuple[float, ...] = (0.25,)) -> list[Goal]:
    """Each shape at ``sizes`` and ``megabytes`` (the moved files also at 3.6 MB, the size of the real
    layout reorg the goal names): derivation and, in turns with it, reading the same oracle; medians."""
    rows: list[Row] = []
    lines: list[str] = []
    goals: list[Goal] = []
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        for shape, make in SHAPES.items():
            extra = (3.6,) if shape == "moved files" and megabytes > 3.6 else ()
            for size in sorted({*sizes, *extra, megabytes}):
                sized = Path(tmp) / f"{len(rows)}"
                sized.mkdir()
                diff = make(sized, size)
                parsed = read_diff(diff, "oracle.diff")
                hunks = sum(len(f.hunks) for f in parsed.files)
                reading: list[float] = []
                deriving: list[float] = []
                cpu: list[float] = []  # derivation's CPU time, which the machine's load moves less
                for _ in range(repeat):  # in turns, so a load that comes and goes falls on both
                    reading.append(median_of(1, lambda diff=diff: read_diff(diff, "oracle.diff")))
                    started = time.process_time()
                    deriving.append(median_of(1, lambda diff=diff: derive_mutants(diff, "oracle.diff")))
                    cpu.append(time.process_time() - started)
                derived, read = statistics.median(deriving), statistics.median(reading)
                used = statistics.median(cpu)
                result = derive_mutants(diff, "oracle.diff")
                kinds = {
                    kind: sum(m.kind == kind for m in result.mutants)
                    for kind in ("one-place", "revert-condition")
                }
                what = f"{shape}, {len(diff) / 1e6:.2f} MB ({hunks} hunks in {len(parsed.files)} files)"
                rows.append(Row(f"derive_mutants, {what}", derived, "read_diff of it", read, None))
                met = "yes" if derived < 2 else "NO"
                lines.append(
                    f"{shape}, {len(diff) / 1e6:.2f} MB: {derived:.2f} s (CPU {used:.2f} s), "
                    f"under 2 s: {met} "
                    f"({result.derived} mutants derived, {kinds['one-place']} one-place and "
                    f"{kinds['revert-condition']} revert-condition among the {len(result.mutants)} kept; "
                    f"notes: {' | '.join(result.notes) or 'none'})"
                )
                if len(diff) > 1e6:
                    goals.append(
                        Goal(
                            "issue 34 §5: mutants",
                            f"derive_mutants, {what}",
                            derived,
                            2.0,
                            unit="s",
                            note=f"{derived / read:.1f}x read_diff of it; CPU {used:.2f} s; "
                            f"median of {repeat}; {load()}",
                        )
                    )
    print_table(
        "Mutant derivation on a lock-file-like oracle, many small hunks and moved files",
        rows,
        [*(line + "." for line in lines), f"Median of {repeat} runs each; {load()}; {machine()}."],
    )
    return goals


def goals(quick: bool = False) -> list[Goal]:
    """Issue 34 §5: every oracle up to 10 MB under 2 s. Quick: 10 MB only, median of 3."""
    return measure(10.0, 3, sizes=()) if quick else measure(10.0, 5)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--megabytes", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    measure(args.megabytes, args.repeat)


if __name__ == "__main__":
    main()
