"""Valid and minimal rubrics and a task directory holding one: shared by the schema and validation tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Data = dict[str, Any]


def valid_rubric() -> Data:
    return {
        "schema": "repo_rubric.v1",
        "task": "fix_df_fraction_gt1",
        "intent": "reject fractions above 1 in every backend",
        "scope": {
            "allowed_globs": ["cpp/oneapi/dal/algo/decision_forest/**", "docs/**"],
            "denied_globs": [".ci/**", ".github/**"],
            "max_changed_lines": 200,
            "max_files": 8,
        },
        "blockers": [
            {
                "id": "B1",
                "criterion": "the GPU backend checks too",
                "rationale": "both paths",
                "evidence": "https://github.com/o/r/pull/1#discussion_r1",
            },
            {
                "id": "B2",
                "criterion": "no public API change",
                "rationale": "ABI",
                "evidence": "docs/api.md:12",
                "needs_tree": True,
            },
        ],
        "non_blockers": [
            {"id": "N1", "criterion": "adds a test", "weight": 2, "rationale": "regressions"},
            {"id": "N2", "criterion": "names follow the guide", "weight": 0.5, "rationale": ""},
            {"id": "N3", "criterion": "docs updated", "weight": 1, "rationale": "users"},
        ],
        "hack_report": {
            "lazy_solution": "clamp in the CPU path only",
            "alt_valid_solution": "validate in the params",
        },
        "calibration": {
            "lazy": [{"path": "calib/lazy.diff", "breaks": ["B1"]}, "calib/lazy2.diff"],
            "alt": ["calib/alt.diff"],
        },
    }


def minimal_rubric() -> Data:
    """Only the required keys: every optional key absent."""
    return {
        "schema": "repo_rubric.v1",
        "task": "t",
        "intent": "i",
        "scope": {"allowed_globs": ["src/**"]},
        "blockers": [
            {"id": "B1", "criterion": "c", "evidence": "e"},
            {"id": "B2", "criterion": "c", "evidence": "e"},
        ],
        "non_blockers": [
            {"id": "N1", "criterion": "c"},
            {"id": "N2", "criterion": "c"},
            {"id": "N3", "criterion": "c"},
        ],
        "hack_report": {"lazy_solution": "l", "alt_valid_solution": "a"},
    }


def write_task(tmp_path: Path, data: Any, *, raw: bytes | None = None) -> Path:
    """A task directory holding rubric.json and every calibration diff it names."""
    task_dir = tmp_path / "task"
    task_dir.mkdir(parents=True, exist_ok=True)
    for rel in ("calib/lazy.diff", "calib/lazy2.diff", "calib/alt.diff"):
        (task_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / rel).write_text("diff --git a/x b/x\n")
    path = task_dir / "rubric.json"
    path.write_bytes(raw if raw is not None else json.dumps(data, indent=2, ensure_ascii=False).encode())
    return path
