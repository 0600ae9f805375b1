"""Calibration's fake judge replies and a multi-file oracle: shared by the calibration
tests, in process and on a worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import workspace_diff
from tests.grading.judge.fake_servers import Behaviour, ParsedPrompt, default_reply

CPU = "def fraction(x):\n    return x\n"


FIX = '    if x > 1:\n        raise ValueError(f"fraction is {x}; it must be at most 1")\n'


def calibration_replies(prompt: ParsedPrompt, behaviour: Behaviour) -> dict[str, Any]:
    """B1 passes only where the fraction is checked (the oracle and the valid alternative)."""
    reply = default_reply(prompt, behaviour)
    for verdict in reply["verdicts"]:
        if verdict["id"] == "B1" and "raise ValueError" not in prompt.user_text:
            verdict.update(
                verdict="fail", finding="violated", reason="Misses B1: the fraction is clamped or unchecked."
            )
    return reply


def multi_file_oracle(root: Path) -> bytes:
    """The example fix in the CPU and the GPU backend, and a docs line: a real git diff."""
    repo = GitRepo(root / "checkout-repo")
    repo.write("src/fraction.py", CPU)
    repo.write("src/gpu/fraction.py", CPU.replace("fraction(", "gpu_fraction("))
    repo.write("docs/errors.md", "# Errors\n")
    base = repo.commit("base")
    repo.write("src/fraction.py", CPU.replace("\n    return", "\n" + FIX + "    return"))
    repo.write(
        "src/gpu/fraction.py",
        CPU.replace("fraction(", "gpu_fraction(").replace("\n    return", "\n" + FIX + "    return"),
    )
    repo.write("docs/errors.md", "# Errors\n\n- ValueError when the fraction is above 1\n")
    return workspace_diff(repo, base)
