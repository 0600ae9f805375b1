"""An oracle with mutable blockers in several files, and a task around it: shared by the mutant tests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from grading.judge.scripted import ScriptedBackend
from grading.mutants.derive import Mutant
from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import workspace_diff

KERNEL = """def run(fraction, rows):
    total = 0
    for row in rows:
        total += row
    return total * fraction
"""


LIMITS = """def within(value, limit):
    return value < limit


def unused_one():
    pass


def unused_two():
    pass


def count_rows(count, ok):
    if count > 0 and ok:
        return count
    return 0
"""


BASE = {
    "src/cpu/kernel.py": KERNEL,
    "src/gpu/kernel.py": KERNEL.replace("run(", "run_gpu("),
    "src/sycl/kernel.py": KERNEL.replace("run(", "run_sycl("),
    "src/common/limits.py": LIMITS,
    "docs/changes.md": "# Changes\n\n- nothing yet",  # no newline at the end
}


KERNEL_FIXED = """def run(fraction, rows):
    if fraction > 1.0:
        raise ValueError("fraction must be at most 1.0")
    total = 0
    for row in rows:
        total += row
    return total * fraction
"""


LIMITS_FIXED = """def within(value, limit):
    # a fraction of exactly the limit is valid
    return value <= limit


def unused_one():
    pass


def unused_two():
    pass


def count_rows(count, ok):
    if count > 0 and ok and count < 1000:
        return count
    return None
"""


ORACLE = {
    "src/cpu/kernel.py": KERNEL_FIXED,
    "src/gpu/kernel.py": KERNEL_FIXED.replace("run(", "run_gpu("),
    "src/sycl/kernel.py": KERNEL_FIXED.replace("run(", "run_sycl("),
    "src/common/limits.py": LIMITS_FIXED,
    "docs/changes.md": "# Changes\n\n- a fraction above 1 is an error",
}


IDS = ("B1", "B2", "N1", "N2", "N3")


class Oracle:
    """A base commit and the oracle diff against it, in a real git repository."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        for rel, text in BASE.items():
            repo.write(rel, text)
        self.base = repo.commit("base")
        for rel, text in ORACLE.items():
            repo.write(rel, text)
        self.diff = workspace_diff(repo, self.base)
        repo.git("reset", "-q", "--hard", self.base)

    def apply(self, diff: bytes, tmp: Path) -> dict[str, str]:
        """Apply ``diff`` to a clean base after ``git apply --check``; the tree's text files."""
        self.repo.git("reset", "-q", "--hard", self.base)
        self.repo.git("clean", "-qfd")
        patch = tmp / "mutant.diff"
        patch.write_bytes(diff)
        self.repo.git("apply", "--check", str(patch))
        self.repo.git("apply", str(patch))
        return {rel: (self.repo.path / rel).read_text() for rel in BASE}

    def regenerated(self) -> bytes:
        """git's own diff of the working tree against the base."""
        return workspace_diff(self.repo, self.base)


def verdicts(fails: tuple[str, ...] = (), nowhere: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in IDS:
        failed = i in fails
        out[i] = {"verdict": "fail" if failed else "pass", "reason": f"{i} is {'not ' if failed else ''}met."}
        if i in nowhere:
            out[i]["locations"] = [{"file": "nowhere.py", "line": 999, "side": "new"}]
    return out


class Task:
    """A task directory around the oracle, and a scripted judge that catches mutants by default."""

    def __init__(self, root: Path, oracle: Oracle) -> None:
        self.oracle = oracle
        self.dir = root / "task"
        self.dir.mkdir()
        (self.dir / "oracle.diff").write_bytes(oracle.diff)
        (self.dir / "task.json").write_text(
            json.dumps({"id": "fix_fraction", "prompt": "Refuse fraction > 1."})
        )
        rubric = {
            "schema": "repo_rubric.v1",
            "task": "fix_fraction",
            "intent": "a fraction above 1 is refused on every backend",
            "scope": {"allowed_globs": ["src/**", "docs/**"]},
            "blockers": [
                {
                    "id": "B1",
                    "criterion": "every backend refuses a fraction above 1",
                    "evidence": "src/cpu/kernel.py:1",
                },
                {
                    "id": "B2",
                    "criterion": "the limit check is inclusive",
                    "evidence": "src/common/limits.py:2",
                },
            ],
            "non_blockers": [{"id": f"N{i}", "criterion": f"quality {i}"} for i in (1, 2, 3)],
            "hack_report": {
                "lazy_solution": "fix the CPU backend only",
                "alt_valid_solution": "check in a helper",
            },
            "calibration": {"lazy": [], "alt": []},
        }
        (self.dir / "rubric.json").write_text(json.dumps(rubric))
        self.manifest = root / "repo_manifest.yaml"
        self.manifest.write_text('tests:\n  globs: ["tests/**"]\n')
        self.script: dict[str, Any] = {"default": verdicts(("B1",)), "by_diff_sha256": {}}
        self.judge = root / "judge.json"

    def answer(self, mutant: Mutant, answers: dict[str, Any]) -> None:
        self.script["by_diff_sha256"][hashlib.sha256(mutant.diff).hexdigest()] = answers

    def backend(self) -> ScriptedBackend:
        self.judge.write_text(json.dumps(self.script))
        return ScriptedBackend(self.judge)
