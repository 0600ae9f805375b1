"""A `rubric` subcommand loads only what it runs: the judge's machinery (asyncio, the SQLite verdict cache,
the provider SDKs) only where a judge runs. How long start-up takes is benchmarks/startup.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.grading.diff_helpers import rubric_data, write_run

REPO_ROOT = Path(__file__).resolve().parents[2]
JUDGE_ONLY = ("asyncio", "sqlite3", "ssl", "anthropic", "openai", "httpx2", "grading.judge.runner")

PROBE = """
import json, sys
from grading.cli.rubric import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(*argv: str) -> tuple[int, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    report = json.loads(result.stdout.splitlines()[-1])
    return report["code"], {m.split(".")[0] if not m.startswith("grading.") else m for m in report["modules"]}


@pytest.fixture
def run_dirs(git_repo: GitRepo, tmp_path: Path) -> tuple[Path, Path, Path]:
    git_repo.write("src/a.py", "a\n")
    base = git_repo.commit("base")
    git_repo.write("src/a.py", "b\n")
    task = tmp_path / "task"
    task.mkdir()
    (task / "rubric.json").write_text(json.dumps(rubric_data({"allowed_globs": ["src/**"]})))
    manifest = tmp_path / "repo_manifest.yaml"
    manifest.write_text('tests:\n  globs: ["tests/**"]\n')
    return task, write_run(tmp_path / "run", git_repo, base), manifest


def test_scope_and_integrity_load_nothing_of_the_judge(run_dirs: tuple[Path, Path, Path]) -> None:
    task, run, manifest = run_dirs
    for argv in (
        ["scope", str(task), str(run)],
        ["integrity", str(task), str(run), "--manifest", str(manifest)],
    ):
        code, modules = loaded_by(*argv)
        assert code == 0
        assert not modules & set(JUDGE_ONLY), sorted(modules & set(JUDGE_ONLY))
        assert "numpy" not in modules  # only a report's bootstrap needs it


def test_a_judge_command_loads_the_runner_but_no_provider_sdk_for_a_scripted_judge(
    run_dirs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    task, run, _ = run_dirs
    (task / "task.json").write_text(json.dumps({"id": "fix_parser", "prompt": "Fix the parser."}))
    script = tmp_path / "judge.json"
    verdict = {"verdict": "pass", "reason": "fine"}
    script.write_text(json.dumps({"default": dict.fromkeys(("B1", "B2", "N1", "N2", "N3"), verdict)}))
    cache = tmp_path / "cache.sqlite3"
    code, modules = loaded_by(
        "judge", str(task), str(run), "--judge", f"scripted:{script}", "--cache", str(cache)
    )
    assert code == 0
    assert "grading.judge.runner" in modules
    assert not modules & {"anthropic", "openai", "httpx2"}


def test_the_top_level_help_loads_no_subcommand() -> None:
    # `rubric --help` lists the subcommands without loading them: no pydantic, schema, YAML, judge or SDK.
    code, modules = loaded_by("--help")
    assert code == 0
    subcommands = {m for m in modules if m.startswith("grading.cli.") and m != "grading.cli.rubric"}
    assert not subcommands, sorted(subcommands)
    heavy = {"pydantic", "yaml", "numpy", "importlib.metadata", "grading.schema", *JUDGE_ONLY}
    assert not modules & heavy, sorted(modules & heavy)


def test_snapshot_and_capture_load_neither_pydantic_nor_the_judge(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.write("src/a.py", "a\n")
    git_repo.commit("base")
    snapshot = tmp_path / "snapshot"
    code, modules = loaded_by("snapshot", str(git_repo.path), "--output", str(snapshot))
    assert code == 0 and not modules & {"pydantic", "yaml", "grading.diffs"}
    git_repo.write("src/a.py", "b\n")
    code, modules = loaded_by(
        "capture",
        str(git_repo.path),
        "--base",
        "HEAD",
        "--before",
        str(snapshot),
        "--out",
        str(tmp_path / "run"),
    )
    assert code == 0 and b"+b" in (tmp_path / "run" / "workspace.diff").read_bytes()
    judge = {m for m in modules if m.startswith("grading.judge")}
    assert not judge, sorted(judge)
    # nor pydantic, the diff reader's models or the YAML loader: the capture needs none of them; nor OpenSSL
    # (hashlib) when nothing under .git changed
    heavy = {
        "pydantic",
        "yaml",
        "numpy",
        "grading.diffs",
        "grading.schema",
        "grading.loaders",
        "hashlib",
        # dataclasses brings inspect, ast and dis; argparse's help width and tempfile bring shutil, and it
        # bz2 and lzma: a fifth of the command's start-up, for records and a scratch directory; typing for
        # annotations (TYPE_CHECKING = False stands in for typing's)
        "dataclasses",
        "inspect",
        "shutil",
        "tempfile",
        "typing",
        *JUDGE_ONLY,
    }
    if "TMPDIR" in os.environ or not os.access("/dev/shm", os.W_OK | os.X_OK):
        heavy -= {"shutil", "tempfile"}  # the scratch directory is then tempfile's
    assert not modules & heavy, sorted(modules & heavy)


def test_help_still_lists_every_subcommand() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "grading", "--help"], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    for name in (
        "validate",
        "schema",
        "snapshot",
        "capture",
        "scope",
        "integrity",
        "judge",
        "grade",
        "check",
    ):
        assert name in result.stdout
