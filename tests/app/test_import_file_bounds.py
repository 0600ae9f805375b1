"""The command-line imports read files from disk within the uploads' bounds: a regular file only (a FIFO is
refused, never waited on), its size checked before it is read, and exit 2 naming the file."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from rubrics_app.models import AgentRun, Repository, RubricRevision, Task
from rubrics_app.services.runs import checks as run_checks
from tests.app.conftest import CALIBRATION_FILES, ORACLE_DIFF, rubric_data
from tests.app.runs_helpers import write_run
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db

NOT_REGULAR = "not a regular file (a device, a pipe or a socket)"  # grading's reader's words


def failing(*args: str) -> list[str]:
    """The command's problems (stderr lines), once it has exited 2 with nothing imported."""
    err = io.StringIO()
    with pytest.raises(CommandError) as exc:
        call_command(*args, stdout=io.StringIO(), stderr=err)
    assert exc.value.returncode == 2 and str(exc.value).startswith("nothing imported")
    return err.getvalue().splitlines()


def test_a_workspace_diff_over_the_bound_is_refused_by_its_size(
    repository: Repository, task: Task, tmp_path: Path, settings: Any
) -> None:
    run_dir = write_run(tmp_path / "runs", "r1")
    limit = settings.ZIP_MAX_MEMBER_BYTES  # what a zipped run's workspace.diff may inflate to
    with (run_dir / "workspace.diff").open("r+b") as diff:
        diff.truncate(limit + 1)  # sparse: no disk spent, and zeros all the way if it were read
    assert os.stat(run_dir / "workspace.diff").st_blocks * 512 < limit
    problems = failing("import_runs", str(tmp_path / "runs"), "--repository", repository.name)
    assert problems == [f"{run_dir}/workspace.diff: larger than {limit} bytes; refused"]
    assert not AgentRun.objects.exists()


def test_a_workspace_diff_grown_past_the_bound_before_it_is_stored_is_refused(
    repository: Repository, task: Task, tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashed while the runs are checked, read again to be stored: a diff that grew past the bound in
    between is a problem naming it, not a whole read nor a traceback, and nothing is kept."""
    run_dir = write_run(tmp_path / "runs", "r1")
    diff = run_dir / "workspace.diff"
    settings.ZIP_MAX_MEMBER_BYTES = diff.stat().st_size
    checked = run_checks.prepare_runs

    def checked_then_grown(*args: Any, **kwargs: Any) -> Any:
        prepared = checked(*args, **kwargs)
        with diff.open("ab") as handle:
            handle.write(b"+grown\n")
        return prepared

    monkeypatch.setattr("rubrics_app.services.runs.store.prepare_runs", checked_then_grown)
    problems = failing("import_runs", str(tmp_path / "runs"), "--repository", repository.name)
    assert problems == [f"{diff}: larger than {settings.ZIP_MAX_MEMBER_BYTES} bytes; refused"]
    assert not AgentRun.objects.exists()


def write_task(repo: GitRepo, task_id: str = "fix_fraction_gt1") -> Path:
    repo.write(f"tasks/{task_id}/rubric.json", json.dumps(rubric_data(task=task_id), indent=2) + "\n")
    for path, content in CALIBRATION_FILES.items():
        repo.write(f"tasks/{task_id}/{path}", content)
    repo.write(f"tasks/{task_id}/oracle.diff", ORACLE_DIFF)
    repo.write(f"tasks/{task_id}/tests_base.txt", "tests/test_fraction.py::test_gt1\n")
    return repo.path / "tasks" / task_id


@pytest.mark.usefixtures("deadline")  # a regression blocks on the FIFO: it fails after 5 s instead
@pytest.mark.parametrize("name", ["calib/lazy.diff", "oracle.diff", "tests_base.txt", "rubric.json"])
def test_a_fifo_in_a_task_directory_is_refused_not_waited_on(git_repo: GitRepo, name: str) -> None:
    task_dir = write_task(git_repo)
    (task_dir / name).unlink()
    os.mkfifo(task_dir / name)
    problems = failing("import_rubrics", str(git_repo.path), "--repository", "project")
    assert problems == [f"tasks/fix_fraction_gt1/{name}: {NOT_REGULAR}"]
    assert not RubricRevision.objects.exists()


@pytest.mark.usefixtures("deadline")
def test_a_symlink_to_a_fifo_inside_the_task_is_refused_too(git_repo: GitRepo) -> None:
    task_dir = write_task(git_repo)
    os.mkfifo(task_dir / "pipe")
    (task_dir / "oracle.diff").unlink()
    (task_dir / "oracle.diff").symlink_to("pipe")
    problems = failing("import_rubrics", str(git_repo.path), "--repository", "project")
    assert problems == [
        "tasks/fix_fraction_gt1/oracle.diff: not a regular file (a device, a pipe or a socket)"
    ]


def test_a_task_file_over_the_upload_bound_is_refused_by_its_size(git_repo: GitRepo, settings: Any) -> None:
    task_dir = write_task(git_repo)
    # Below the zip's total, the member's bound is the smaller: it holds, as it does in an upload.
    limit = settings.ZIP_MAX_MEMBER_BYTES = max(p.stat().st_size for p in task_dir.rglob("*") if p.is_file())
    with (task_dir / "oracle.diff").open("r+b") as oracle:
        oracle.truncate(limit + 1)
    problems = failing("import_rubrics", str(git_repo.path), "--repository", "project")
    assert problems == [f"tasks/fix_fraction_gt1/oracle.diff: larger than {limit} bytes; refused"]
    assert not RubricRevision.objects.exists()


def test_a_task_directory_linked_from_outside_the_checkout_is_refused(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    outside = write_task(GitRepo(tmp_path / "elsewhere"), "secret_task")
    write_task(git_repo)
    (git_repo.path / "tasks" / "secret_task").symlink_to(outside, target_is_directory=True)
    problems = failing("import_rubrics", str(git_repo.path), "--repository", "project")
    assert problems == ["tasks/secret_task: leaves the tasks/ directory (symbolic link?)"]
    assert not RubricRevision.objects.exists()
