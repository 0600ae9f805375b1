"""The shipped example task (examples/) is real: its repo builds, its diffs apply, its files validate."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from examples.build import EXAMPLES, JUDGE_SCRIPTED, MANIFEST, RUNS, TASK_ID, TASKS, build_example_repo, git
from examples.demo import main as demo
from grading.cli.rubric import main as rubric_cli
from grading.draft import load_pr_export
from grading.loaders import load_grade, load_manifest, load_rubric, load_run, load_task
from grading.workspace.testlist import ListingFailed, list_command, run_test_list

TASK_DIR = TASKS / TASK_ID
RUN_DIRS = sorted(p for p in RUNS.iterdir() if p.is_dir())
DIFFS = {
    "oracle": TASK_DIR / "oracle.diff",
    "lazy": TASK_DIR / "calib" / "lazy.diff",
    "alt": TASK_DIR / "calib" / "alt.diff",
    **{f"run:{d.name}": d / "workspace.diff" for d in RUN_DIRS},
}
CLOCKWISE_SQUARE = "[(0.0, 2.0), (2.0, 2.0), (2.0, 0.0), (0.0, 0.0)]"


@pytest.fixture(scope="module")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    dest = tmp_path_factory.mktemp("example") / "repo"
    return dest, build_example_repo(dest)


def fresh_checkout(tmp_path: Path) -> Path:
    dest = tmp_path / "repo"
    build_example_repo(dest)
    return dest


def test_it_builds_the_same_commit_everywhere(base_repo: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = base_repo
    assert build_example_repo(tmp_path / "again") == sha
    assert load_task(TASK_DIR).base_commit == sha
    assert git(repo, "status", "--porcelain") == ""
    tracked = git(repo, "ls-files").split()
    expected = {"shapes/polygon.py", "tests/test_polygon.py", "conftest.py", "pytest.ini", ".gitignore"}
    assert expected <= set(tracked)
    assert not any("__pycache__" in p for p in tracked)


def test_it_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build_example_repo(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_the_script_prints_the_sha(base_repo: tuple[Path, str], tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "examples.build", str(tmp_path / "r")],
        cwd=EXAMPLES.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == base_repo[1]


@pytest.mark.parametrize("name", sorted(DIFFS))
def test_every_diff_applies_to_the_base(name: str, base_repo: tuple[Path, str]) -> None:
    repo, _ = base_repo
    git(repo, "apply", "--check", str(DIFFS[name]))


def _nested_env() -> dict[str, str]:
    # The example's own pytest must not pick up this suite's plugins (pytest-django) or settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    return {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _run_python(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=repo, env=_nested_env(), capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("name", "centroid_ok"),
    [("oracle", True), ("alt", True), ("run:good", True), ("lazy", False), ("run:scope_creep", False)],
)
def test_each_diff_passes_the_tests_and_only_the_good_ones_keep_centroid(
    name: str, centroid_ok: bool, tmp_path: Path
) -> None:
    # The rubric's story: every diff passes the tests; the lazy ones break the clockwise centroid (B1).
    repo = fresh_checkout(tmp_path)
    git(repo, "apply", str(DIFFS[name]))
    tests = _run_python(repo, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout
    script = f"import shapes; p = {CLOCKWISE_SQUARE}; print(shapes.polygon_area(p), shapes.centroid(p))"
    probe = _run_python(repo, "-c", script)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split(" ", 1)[0] == "4.0"
    assert ("(1.0, 1.0)" in probe.stdout) is centroid_ok, probe.stdout


def test_the_base_has_the_bug(base_repo: tuple[Path, str]) -> None:
    probe = _run_python(base_repo[0], "-c", f"import shapes; print(shapes.polygon_area({CLOCKWISE_SQUARE}))")
    assert probe.stdout.strip() == "-4.0"


def test_the_task_files_validate() -> None:
    rubric = load_rubric(TASK_DIR / "rubric.json")
    assert rubric.task == TASK_ID == load_task(TASK_DIR).id
    assert load_task(TASK_DIR).gate == ["pass", "mergeable"]
    assert load_grade(TASK_DIR / "oracle_grade.json").tests_skipped == 0
    lazy = rubric.calibration.lazy_entries()
    assert [e.path for e in lazy] == ["calib/lazy.diff"] and lazy[0].breaks == ["B1"]
    assert rubric.calibration.alt == ["calib/alt.diff"]
    manifest = load_manifest(MANIFEST)
    assert manifest.tests is not None and manifest.tests.list_command


@pytest.mark.parametrize("run_dir", RUN_DIRS, ids=lambda p: p.name)
def test_the_run_files_validate(run_dir: Path, base_repo: tuple[Path, str]) -> None:
    assert load_run(run_dir / "run.json").task == TASK_ID
    assert load_grade(run_dir / "grade.json").passed is True
    ignored = [line for line in (run_dir / "ignored_created.txt").read_text().splitlines() if line]
    if ignored:
        # Each listed file really is ignored by the base's .gitignore (check-ignore exits 0 for all).
        git(base_repo[0], "check-ignore", "--no-index", *ignored)
    assert (run_dir / "tests_list.txt").read_text().strip()


def _run_manifest_listing(checkout: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest's tests.list, run as `rubric list-tests` and `rubric capture` run it (no shell of ours,
    pinned environment); the command says "python", so this interpreter comes first on PATH."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    argv = list_command(load_manifest(MANIFEST).tests, MANIFEST)
    assert argv is not None
    run_test_list(checkout, argv, out)


def test_tests_base_is_what_the_manifest_list_command_prints(
    base_repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "tests_list.txt"
    _run_manifest_listing(base_repo[0], out, monkeypatch)
    assert out.read_text().splitlines() == (TASK_DIR / "tests_base.txt").read_text().splitlines()


def test_the_manifest_listing_fails_on_a_test_file_that_does_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest exits 2 on a collection error; the listing must fail with it (test_listing_broken), not pass
    grep's status on and list the other files' tests."""
    checkout = fresh_checkout(tmp_path)
    (checkout / "tests" / "test_broken.py").write_text("def test_x(:\n    pass\n")
    out = tmp_path / "tests_list.txt"
    with pytest.raises(ListingFailed, match="exited with status 2"):
        _run_manifest_listing(checkout, out, monkeypatch)
    assert not out.exists()


def test_the_scripted_judge_covers_every_diff_and_item() -> None:
    rubric = load_rubric(TASK_DIR / "rubric.json")
    ids = set(rubric.item_ids())
    blockers = [b.id for b in rubric.blockers]
    data = json.loads(JUDGE_SCRIPTED.read_text())
    assert set(data) == {"default", "by_diff_sha256"}
    by_sha = data["by_diff_sha256"]
    shas = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in DIFFS.items()}
    shas["empty"] = hashlib.sha256(b"").hexdigest()
    assert set(by_sha) == set(shas.values())  # every key is one of the diffs, and every diff has a key
    for entry in [data["default"], *by_sha.values()]:
        assert set(entry) == ids
        assert all(v["verdict"] in ("pass", "fail") and v["reason"].strip() for v in entry.values())

    def failed_blockers(name: str) -> list[str]:
        return [b for b in blockers if by_sha[shas[name]][b]["verdict"] == "fail"]

    assert failed_blockers("oracle") == failed_blockers("alt") == failed_blockers("run:good") == []
    assert failed_blockers("lazy") == rubric.calibration.lazy_entries()[0].breaks
    assert failed_blockers("empty")
    assert "B1" in failed_blockers("run:scope_creep")
    # Any unlisted diff (e.g. the lazy diff with an injected reviewer comment) still fails B1.
    assert data["default"]["B1"]["verdict"] == "fail"


def test_the_demo_replays_and_grades_both_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:

    assert demo([str(tmp_path / "work")]) == 0
    out = capsys.readouterr().out
    assert "admitted" in out and "demo: every step as expected" in out
    for name in ("good", "scope_creep"):
        # The capture of the replayed run is byte for byte the shipped one (so the scripted judge keys match).
        captured = tmp_path / "work" / "runs" / name
        assert (captured / "workspace.diff").read_bytes() == (RUNS / name / "workspace.diff").read_bytes()
    good = json.loads((tmp_path / "work" / "runs" / "good" / "metrics.json").read_text())
    creep = json.loads((tmp_path / "work" / "runs" / "scope_creep" / "metrics.json").read_text())
    assert good["mergeable"] is True and good["pass"] is True and 0 < good["merge_score"] < 1
    assert creep["mergeable"] is False and creep["pass"] is True and creep["merge_score"] == 0
    # The demo admits the rubric first, with the same judge and store: the results are not provisional.
    assert good["provisional"] is False and creep["provisional"] is False


def test_the_demo_needs_a_work_directory(capsys: pytest.CaptureFixture[str]) -> None:

    assert demo([]) == 2
    assert "usage" in capsys.readouterr().err


DRAFT_SCRIPTED = EXAMPLES / "draft_scripted.json"
PR_EXPORT = EXAMPLES / "pr_fix_clockwise_polygon_area.json"


def test_the_pr_export_has_review_threads_and_the_oracle_change(
    base_repo: tuple[Path, str], tmp_path: Path
) -> None:
    pr = load_pr_export(PR_EXPORT)
    assert pr.base_sha == load_task(TASK_DIR).base_commit
    (tmp_path / "pr.diff").write_text(pr.diff)
    git(base_repo[0], "apply", "--check", str(tmp_path / "pr.diff"))  # the oracle's change, file by file
    assert pr.touched_paths() == ["CHANGELOG.md", "shapes/polygon.py", "tests/test_polygon.py"]
    threads = pr.review_threads()
    assert [len(t) for t in threads] == [3, 1]  # a thread with two replies, and a lone comment
    assert all(c.diff_hunk and c.side == "RIGHT" for t in threads for c in t)


def test_the_scripted_drafter_drafts_the_example_task_with_no_api(
    base_repo: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "draft"
    code = rubric_cli(
        [
            "draft",
            str(TASK_DIR),
            "--checkout",
            str(base_repo[0]),
            "--pr-export",
            str(PR_EXPORT),
            "--drafter",
            f"scripted:{DRAFT_SCRIPTED}",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "drafted by scripted (scripted drafter: a stand-in, not a model)" in printed
    record = json.loads((out / "draft.json").read_text())
    assert record["scripted"] is True and record["model_id"] == "scripted" and record["problems"] == []
    # The draft is the example's rubric and calibration diffs, as the file holds them.
    drafted = json.loads((out / "rubric.json").read_text())
    shipped = json.loads((TASK_DIR / "rubric.json").read_text())
    assert [b["id"] for b in drafted["blockers"]] == [b["id"] for b in shipped["blockers"]]
    assert (out / "calib" / "lazy.diff").read_bytes() == (TASK_DIR / "calib" / "lazy.diff").read_bytes()
    assert (out / "calib" / "alt.diff").read_bytes() == (TASK_DIR / "calib" / "alt.diff").read_bytes()
