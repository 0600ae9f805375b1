"""Glob matching: grading.globs against wcmatch on 1,000,000 (pattern, path) pairs.

    .venv/bin/pip install wcmatch   # the reference; not a dependency of the project
    .venv/bin/python benchmarks/globs.py [--pairs 1000000] [--repeat 3]

wcmatch's ``globmatch`` with GLOBSTAR | DOTGLOB | FORCEUNIX is the closest well-kept Python matcher to git's
wildmatch in pathname mode (``**`` crosses ``/``, ``*`` does not, ``*`` matches dot files). Both sides compile
each distinct pattern once and are then timed on the same pairs. The table also counts the pairs on which the
two disagree; wcmatch is not git, so a few disagreements on brackets and escapes are expected, and the test
suite (t3070 and a differential against ``git ls-files``) is what checks correctness.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from _common import Row, machine, print_table

from grading.globs import match_glob

PATTERNS = [
    "src/**", "src/**/*.py", "**/test_*.py", "**/tests/**", "docs/*.md", "*.md", "**/conftest.py",
    "cpp/oneapi/dal/algo/**", ".github/**", "**/BUILD", "**/BUILD.bazel", "tests/**/*_test.cc",
    "shapes/*", "**/*.[ch]", "lib/?/x.py", "**/.gitignore", "a/**/b/**/c", "**/*.min.js",
]  # fmt: skip
DIRS = [
    "src", "src/app", "src/app/deep/er", "tests", "tests/unit", "docs", "docs/dev", "cpp/oneapi/dal/algo/df",
    ".github/workflows", "lib/x", "a/b/c", "a/x/b/y/c", "node_modules/pkg/dist", "",
]  # fmt: skip
NAMES = [
    "main.py", "test_main.py", "README.md", "conftest.py", "BUILD", "x.py", "util.h", "util.c", "app.min.js",
    ".gitignore", "notes.txt", "kernel_test.cc", "c", "naïve café.md",
]  # fmt: skip


def pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        directory = rng.choice(DIRS)
        path = f"{directory}/{rng.choice(NAMES)}" if directory else rng.choice(NAMES)
        out.append((rng.choice(PATTERNS), path))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    try:
        from wcmatch import glob as wcglob
    except ImportError:
        print("benchmarks/globs.py needs the reference matcher: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    flags = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.FORCEUNIX

    work = pairs(args.pairs)
    for pattern in PATTERNS:  # compile every pattern on both sides before timing (both cache compiled forms)
        match_glob(pattern, "x")
        wcglob.globmatch("x", pattern, flags=flags)

    def ours() -> list[bool]:
        return [match_glob(p, path) for p, path in work]

    def theirs() -> list[bool]:
        return [wcglob.globmatch(path, p, flags=flags) for p, path in work]

    best_ours = best_theirs = float("inf")
    for _ in range(args.repeat):  # in turns, so a passing load falls on both
        started = time.perf_counter()
        ours_result = ours()
        best_ours = min(best_ours, time.perf_counter() - started)
        started = time.perf_counter()
        theirs_result = theirs()
        best_theirs = min(best_theirs, time.perf_counter() - started)
    disagree = sum(a != b for a, b in zip(ours_result, theirs_result, strict=True))
    print_table(
        f"Glob matching: {args.pairs:,} (pattern, path) pairs, {len(PATTERNS)} patterns",
        [Row("grading.globs.match_glob", best_ours, "wcmatch globmatch", best_theirs, goal=None)],
        [
            f"Fastest of {args.repeat} runs each, taken in turns; {machine()}.",
            f"The two disagree on {disagree:,} of {args.pairs:,} pairs ({disagree / args.pairs:.2%}).",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
