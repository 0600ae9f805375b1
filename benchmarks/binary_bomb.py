"""A ``GIT binary patch`` whose literal inflates to 1 GiB: scope and integrity must not inflate it.

    .venv/bin/python benchmarks/binary_bomb.py [--inflated-mib 1024] [--repeat N]

The diff is about 1.3 MB (zlib's best ratio on zeros is about 1000:1). Goal: ``rubric scope`` and
``rubric integrity`` each under 1 s and 200 MB of memory (it took 2.1 GB and 5-8 s when the parser
inflated every literal to check its size). The reference is the same command on a one-line text change:
what is left over it is the cost of reading the 1.3 MB.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import REPO_ROOT, RUBRIC, Row, bench_rubric, machine, peak_rss_mb, print_table, time_command

sys.path.insert(0, str(REPO_ROOT))

from tests.grading.diff_helpers import zeros_literal_diff

SMALL = "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inflated-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rubric-bench-") as tmp:
        root = Path(tmp)
        task = root / "task"
        task.mkdir()
        (task / "rubric.json").write_text(json.dumps(bench_rubric(["**"])))
        manifest = root / "repo_manifest.yaml"
        manifest.write_text('tests:\n  globs: ["tests/**"]\n')
        bomb, small = root / "bomb", root / "small"
        for run_dir in (bomb, small):
            run_dir.mkdir()
        diff = zeros_literal_diff("assets/blob.bin", args.inflated_mib << 20)
        (bomb / "workspace.diff").write_bytes(diff)
        (small / "workspace.diff").write_text(SMALL)
        rows: list[Row] = []
        memory: list[str] = []
        for name, argv in (
            ("scope", ["scope", task]),
            ("integrity", ["integrity", task]),
        ):
            extra = ["--manifest", manifest] if name == "integrity" else []
            seconds = time_command([*RUBRIC, *argv, bomb, *extra], args.repeat)
            reference = time_command([*RUBRIC, *argv, small, *extra], args.repeat)
            rows.append(
                Row(f"`rubric {name}`, the bomb", seconds, "the same on a one-line change", reference, None)
            )
            rss = peak_rss_mb([*RUBRIC, *argv, bomb, *extra])
            rss_small = peak_rss_mb([*RUBRIC, *argv, small, *extra])
            verdict = "yes" if seconds < 1 and rss < 200 else "NO"
            memory.append(
                f"`rubric {name}`: {seconds:.2f} s, peak {rss:.0f} MB (one-line change: {rss_small:.0f} MB); "
                f"under 1 s and 200 MB: {verdict}"
            )
    print_table(
        f"A {len(diff) / 1e6:.1f} MB diff whose binary literal inflates to {args.inflated_mib} MiB",
        rows,
        ["; ".join(memory) + ".", f"Fastest of {args.repeat} runs each, memory of one run; {machine()}."],
    )


if __name__ == "__main__":
    main()
