"""Where a download's provenance comes from: the code's commit read from a real git checkout's files
(plain, packed refs, a worktree, a detached HEAD), never by running git, and bounded; the file names."""

from __future__ import annotations

import subprocess
from pathlib import Path

from grading import download_name, read_git_commit


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _repo(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "pkg").mkdir()
    (root / "pkg" / "a.py").write_text("x = 1\n")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one")
    return root


def test_the_commit_is_read_from_the_checkouts_files(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    head = _git(repo, "rev-parse", "HEAD")
    assert read_git_commit(repo / "pkg") == head
    _git(repo, "pack-refs", "--all")  # the branch's loose ref is gone: packed-refs holds it
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert read_git_commit(repo / "pkg") == head
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    assert (tmp_path / "wt" / ".git").is_file()
    assert read_git_commit(tmp_path / "wt" / "pkg") == head
    _git(repo, "checkout", "-q", "--detach")
    assert read_git_commit(repo) == head


def test_no_checkout_or_an_oversized_or_escaping_head_gives_none(tmp_path: Path) -> None:
    assert read_git_commit(tmp_path) is None  # no .git here nor above
    repo = _repo(tmp_path / "repo")
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n" + " " * 10_000)
    assert read_git_commit(repo) is None
    (repo / ".git" / "HEAD").write_text("ref: refs/../../../etc/passwd\n")
    assert read_git_commit(repo) is None


def test_file_names_carry_the_repository_and_the_filters() -> None:
    assert download_name("shapes", "report", {}, "json") == "shapes-report.json"
    assert download_name("shapes", "report", {"arm": "guidance"}, "json") == "shapes-report-arm-guidance.json"
    name = download_name("shapes", "runs", {"model": "anthropic:claude/x", "prompt_style": "spec"}, "csv")
    assert name == "shapes-runs-model-anthropic_claude_x-prompt-style-spec.csv"


def test_a_rows_file_reads_back_as_written_whatever_its_text() -> None:
    from grading import ItemRow, Provenance, read_rows, rows_text
    from grading.judge.models import Location

    provenance = Provenance(
        repository="shapes", filters={"arm": "a,b"}, generated_at="2026-01-01T00:00:00Z", version="1",
        commit=None, report_format=2, bootstrap=0, seed=0, rubrics=[], judges=[],
    )  # fmt: skip
    row = ItemRow(
        run="r", task="t", arm="a,b", model="m", repetition=None, role="second", judge="scripted:x",
        model_id=None, item_id="B1", kind="blocker", verdict="fail", finding=None,
        reason='[not a list] "quoted",\nover two lines', tree_judged=False, human_label="fail",
        cited_lines=[Location(file="a.py", line=3, side="old")],
    )  # fmt: skip
    for fmt in ("csv", "jsonl"):
        assert read_rows(rows_text([row], ItemRow, provenance, fmt), ItemRow) == (provenance, [row])
