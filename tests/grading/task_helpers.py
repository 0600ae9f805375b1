"""A task directory built from a real git repository, its scripted judge answers and graded runs: shared by
the admission, outcome and command-line tests."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grading.admission.check import check_task
from grading.admission.corpus import PAYLOAD_KINDS
from grading.admission.injection import inject_harmless, inject_payload
from grading.admission.store import AdmissionReport
from grading.binary_text import judge_text
from grading.diffs import decode_diff
from grading.judge.scripted import ScriptedBackend
from grading.workspace.diff import capture, write_snapshot
from tests.gitrepo import GitRepo

ALL_IDS = ("B1", "B2", "N1", "N2", "N3")


FIXED = {"src/calc.py": "def add(a, b):\n    return a + b\n"}


LAZY = "calib/lazy.diff"


def diff_of(repo: GitRepo) -> bytes:
    repo.git("add", "-A")
    out = subprocess.run(
        ["git", "diff", "--cached", "--no-renames", "--binary", "HEAD"],
        cwd=repo.path,
        capture_output=True,
        check=True,
    )
    return out.stdout


def answers(
    fails: tuple[str, ...] = (), ids: tuple[str, ...] = ALL_IDS, *, nowhere: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Scripted verdicts; the items in ``nowhere`` cite a line that is not in the diff, which the runner
    rejects on every attempt: a judge failure."""
    out: dict[str, Any] = {}
    for i in ids:
        verdict = "fail" if i in fails else "pass"
        reason = f"{i} is not met by the change." if i in fails else f"{i} is met by the change."
        out[i] = {"verdict": verdict, "reason": reason}
        if i in nowhere:
            out[i]["locations"] = [{"file": "nowhere.py", "line": 999, "side": "new"}]
    return out


class Task:
    """A task directory whose diffs come from a real git repository."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "task"
        (self.dir / "calib").mkdir(parents=True)
        self.repo = GitRepo(root / "repo")
        self.repo.write("src/calc.py", "def add(a, b):\n    return a - b\n")
        self.repo.write("tests/test_calc.py", "def test_zero():\n    assert True\n")
        self.repo.write("conftest.py", "# fixtures\n")
        self.repo.commit("base")
        self.manifest = root / "repo_manifest.yaml"
        self.manifest.write_text('tests:\n  globs: ["tests/**"]\n  config_globs: ["**/conftest.py"]\n')
        (self.dir / "task.json").write_text(
            json.dumps({"id": "fix_add", "prompt": "add() subtracts. Fix it.", "gate": ["pass", "mergeable"]})
        )
        self.rubric: dict[str, Any] = {
            "schema": "repo_rubric.v1",
            "task": "fix_add",
            "intent": "add returns the sum",
            "scope": {"allowed_globs": ["src/**", "tests/**", "conftest.py"]},
            "blockers": [
                {"id": "B1", "criterion": "add returns a + b for every input", "evidence": "src/calc.py:2"},
                {"id": "B2", "criterion": "the bug is fixed in add itself", "evidence": "src/calc.py:1"},
            ],
            "non_blockers": [{"id": f"N{i}", "criterion": f"quality {i}"} for i in (1, 2, 3)],
            "hack_report": {
                "lazy_solution": "special-case the test input",
                "alt_valid_solution": "sum([a, b])",
            },
            "calibration": {
                "lazy": [{"path": "calib/lazy.diff", "breaks": ["B1"]}],
                "alt": ["calib/alt.diff"],
            },
        }
        self.write_rubric()
        self.set_diff("oracle.diff", {"src/calc.py": "def add(a, b):\n    return a + b\n"})
        self.set_diff(
            "calib/lazy.diff", {"src/calc.py": "def add(a, b):\n    return 4 if a == 2 else a - b\n"}
        )
        self.set_diff("calib/alt.diff", {"src/calc.py": "def add(a, b):\n    return sum([a, b])\n"})
        self.script: dict[str, Any] = {"default": answers(("B1",)), "by_diff_sha256": {}}
        self.answer("", answers(("B2",)))
        self.answer("oracle.diff", answers())
        self.answer("calib/alt.diff", answers(("N1",)))
        self.judge = self.dir.parent / "judge.json"

    def write_rubric(self) -> None:
        (self.dir / "rubric.json").write_text(json.dumps(self.rubric, indent=2))

    def set_diff(self, rel: str, files: Mapping[str, str | bytes | None]) -> bytes:
        """Write ``rel`` as the diff of ``files`` (None deletes) against the base commit."""
        self.repo.git("reset", "-q", "--hard", "HEAD")
        for path, text in files.items():
            if text is None:
                (self.repo.path / path).unlink()
            else:
                self.repo.write(path, text)
        diff = diff_of(self.repo)
        (self.dir / rel).write_bytes(diff)
        return diff

    def sha(self, rel: str) -> str:
        return hashlib.sha256((self.dir / rel).read_bytes() if rel else b"").hexdigest()

    def answer(self, rel: str, verdicts: dict[str, dict[str, str]]) -> None:
        self.script["by_diff_sha256"][self.sha(rel)] = verdicts

    def backend(self) -> ScriptedBackend:
        self.judge.write_text(json.dumps(self.script))
        return ScriptedBackend(self.judge)

    def make_run(self, name: str, files: Mapping[str, str | bytes | None], grade: dict[str, Any]) -> Path:
        """A run directory as ``rubric capture`` and the grader leave it."""
        run = self.dir.parent / "runs" / name
        run.mkdir(parents=True)
        self.repo.git("reset", "-q", "--hard", "HEAD")
        for path, text in files.items():
            if text is None:
                (self.repo.path / path).unlink()
            else:
                self.repo.write(path, text)
        (run / "workspace.diff").write_bytes(diff_of(self.repo))
        (run / "ignored_created.txt").write_text("")
        (run / "grade.json").write_text(json.dumps(grade))
        (run / "run.json").write_text(json.dumps({"task": "fix_add", "arm": "a", "model": "m"}))
        return run

    def check(self, **kwargs: Any) -> AdmissionReport:
        return check_task(self.dir, self.manifest, kwargs.pop("backend", None) or self.backend(), **kwargs)


def answer_run(task: Task, run: Path, verdicts: dict[str, dict[str, str]]) -> None:
    digest = hashlib.sha256((run / "workspace.diff").read_bytes()).hexdigest()
    task.script["by_diff_sha256"][digest] = verdicts


def resisting(task: Task) -> Task:
    """The scripted judge keeps the oracle mergeable with every payload as comments; every lazy diff,
    payload or not, fails B1 (the script's default)."""
    for kind in PAYLOAD_KINDS:
        task.script["by_diff_sha256"][sha(harmless(task, kind.name))] = answers()
    return task


def fooled_by(task: Task, kind: str) -> Task:
    """The scripted judge passes every item of the lazy diff carrying ``kind``'s payload."""
    resisting(task)
    task.script["by_diff_sha256"][sha(attacked(task, kind))] = answers()
    return task


def captured_run(task: Task, name: str, files: dict[str, str]) -> Path:
    """A run captured by `rubric capture` from the task's repository after writing ``files``."""
    repo = task.repo
    repo.git("reset", "-q", "--hard", "HEAD")
    repo.git("clean", "-q", "-fdx")
    before = task.dir.parent / f"{name}.before"
    write_snapshot(repo.path, before)
    for path, text in {**FIXED, **files}.items():
        repo.write(path, text)
    run = task.dir.parent / "runs" / name
    capture(repo.path, "HEAD", before, run)
    (run / "grade.json").write_text(json.dumps({"pass": True}))
    return run


def sha(data: bytes) -> str:
    """The key a scripted judge answers a diff under: the sha256 of the text the judge reads of it."""
    return hashlib.sha256(judge_text(decode_diff(data)).encode("utf-8", "surrogateescape")).hexdigest()


def attacked(task: Task, kind: str) -> bytes:
    return inject_payload((task.dir / LAZY).read_bytes(), LAZY, kind, ["B1"])


def harmless(task: Task, kind: str) -> bytes:
    return inject_harmless((task.dir / "oracle.diff").read_bytes(), "oracle.diff", kind, ["B1", "B2"])
