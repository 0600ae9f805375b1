from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import RequestFactory

from examples.build import TASK_ID, TASKS
from grading.loaders import load_rubric
from rubrics_app.access import access_of
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    CalibrationDiff,
    Job,
    JobKind,
    Origin,
    Repository,
    ReviewState,
    RevisionStatus,
    RubricRevision,
    Task,
)
from tests.app.command_helpers import command_output
from tests.app.conftest import CALIBRATION_FILES, MakeRevision, rubric_data
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    return command_output(*args)


def write_task(repo: GitRepo, task_id: str, data: dict[str, Any] | None = None) -> None:
    repo.write(f"tasks/{task_id}/rubric.json", json.dumps(data or rubric_data(task=task_id), indent=2) + "\n")
    for path, content in CALIBRATION_FILES.items():
        repo.write(f"tasks/{task_id}/{path}", content)


# --- import_rubrics ------------------------------------------------------------------------------------


def test_import_rubrics_imports_every_task_as_a_draft(git_repo: GitRepo) -> None:
    write_task(git_repo, "fix_fraction_gt1")
    write_task(git_repo, "second_task")
    git_repo.write("tasks/second_task/task.json", json.dumps({"id": "second_task", "prompt": "Do it."}))
    git_repo.write("repo_manifest.yaml", "tests:\n  globs: ['tests/**']\n  list: pytest --co -q\n")
    out, _ = run("import_rubrics", str(git_repo.path), "--repository", "project")
    assert "tasks/second_task/rubric.json -> project revision 1 (draft)" in out
    repository = Repository.objects.get(name="project")
    assert repository.checkout_path == str(git_repo.path.resolve())
    assert repository.tests().list_command == "pytest --co -q"
    assert sorted(repository.tasks.values_list("task_id", flat=True)) == ["fix_fraction_gt1", "second_task"]
    assert Task.objects.get(task_id="second_task").spec_prompt == "Do it."
    assert set(RubricRevision.objects.values_list("status", "origin")) == {
        (RevisionStatus.DRAFT, Origin.IMPORTED)
    }
    assert AuditEvent.objects.filter(verb=AuditVerb.IMPORTED).count() == 2
    # Again: new draft revisions of the same tasks, numbered on.
    run("import_rubrics", str(git_repo.path), "--repository", "project")
    assert sorted(RubricRevision.objects.values_list("number", flat=True)) == [1, 1, 2, 2]


def test_import_rubrics_lists_every_invalid_file_and_imports_nothing(git_repo: GitRepo) -> None:
    write_task(git_repo, "fix_fraction_gt1")
    bad = rubric_data(task="bad_task")
    bad["blockers"] = [{**bad["blockers"][0], "evidence": ""}, bad["blockers"][1]]
    write_task(git_repo, "bad_task", bad)
    git_repo.write("tasks/broken/rubric.json", '{"schema": "repo_rubric.v1",,}')
    with pytest.raises(CommandError) as exc:
        run("import_rubrics", str(git_repo.path))
    assert exc.value.returncode == 2
    assert str(exc.value) == "nothing imported: 2 problems"
    assert not Repository.objects.exists()  # not even the repository
    assert not RubricRevision.objects.exists()


def test_import_rubrics_prints_the_problems(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    bad = rubric_data(task="bad_task")
    bad["blockers"] = [{**bad["blockers"][0], "evidence": ""}, bad["blockers"][1]]
    write_task(git_repo, "bad_task", bad)
    git_repo.write("tasks/broken/rubric.json", '{"schema": "repo_rubric.v1",,}')
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_rubrics", str(git_repo.path), stdout=io.StringIO(), stderr=err)
    assert err.getvalue().splitlines() == [
        "tasks/bad_task/rubric.json: blockers[0].evidence: must not be blank",
        "tasks/broken/rubric.json: line 1 column 29: malformed JSON: "
        "Expecting property name enclosed in double quotes",
    ]


def test_import_rubrics_refuses_a_calib_symlink_out_of_the_task(git_repo: GitRepo, tmp_path: Path) -> None:
    write_task(git_repo, "fix_fraction_gt1")
    secret = tmp_path / "secret.diff"
    secret.write_text("secret\n")
    link = git_repo.path / "tasks/fix_fraction_gt1/calib/lazy.diff"
    link.unlink()
    link.symlink_to(secret)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_rubrics", str(git_repo.path), stdout=io.StringIO(), stderr=err)
    assert "tasks/fix_fraction_gt1/calib/lazy.diff: leaves the task directory" in err.getvalue()
    assert not CalibrationDiff.objects.exists()


def test_import_rubrics_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a directory"):
        run("import_rubrics", str(tmp_path / "missing"))


# --- export_rubrics ------------------------------------------------------------------------------------


def test_export_rubrics_writes_admitted_revisions_into_the_checkout(
    make_revision: MakeRevision, git_repo: GitRepo
) -> None:
    git_repo.write("README.md", "x\n")
    git_repo.commit()
    admitted = make_revision(RevisionStatus.ADMITTED)
    make_revision(RevisionStatus.DRAFT)  # newer, but a draft: not exported
    repository = admitted.task.repository
    repository.checkout_path = str(git_repo.path)
    repository.save()
    head = git_repo.head()
    out, _ = run("export_rubrics", "--repository", repository.name, "--branch", "rubrics/export")
    assert "exported 1 admitted revision" in out
    commit = git_repo.git("rev-parse", "rubrics/export").strip()
    assert f"committed {commit[:12]} on branch rubrics/export" in out
    assert "your checkout (HEAD, index, files) is unchanged" in out
    # The commit holds the files; the maintainer's checkout stays on its branch with nothing new.
    assert git_repo.head() == head and git_repo.git("symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git_repo.git("status", "--porcelain") == ""
    assert not (git_repo.path / "tasks").exists()
    committed = git_repo.git("show", f"{commit}:tasks/fix_fraction_gt1/rubric.json")
    assert json.loads(committed) == admitted.to_rubric_dict()
    git_repo.git("switch", "-q", "rubrics/export")
    assert load_rubric(git_repo.path / "tasks/fix_fraction_gt1/rubric.json").task == "fix_fraction_gt1"


def test_export_rubrics_to_a_directory_and_private_path(make_revision: MakeRevision, tmp_path: Path) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    name = admitted.task.repository.name
    run("export_rubrics", "--repository", name, "--out", str(tmp_path / "out"), "--task", "fix_fraction_gt1")
    assert (tmp_path / "out/tasks/fix_fraction_gt1/calib/alt.diff").read_bytes() == CALIBRATION_FILES[
        "calib/alt.diff"
    ]
    Path(admitted.task.repository.private_path).mkdir()
    run("export_rubrics", "--repository", name, "--private")
    assert (Path(admitted.task.repository.private_path) / "tasks/fix_fraction_gt1/rubric.json").is_file()


def test_export_rubrics_without_an_admitted_revision_fails(
    make_revision: MakeRevision, tmp_path: Path
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    name = revision.task.repository.name
    with pytest.raises(CommandError, match="no admitted revision"):
        run("export_rubrics", "--repository", name, "--out", str(tmp_path))
    with pytest.raises(CommandError, match="no admitted revision for: fix_fraction_gt1"):
        run("export_rubrics", "--repository", name, "--task", "fix_fraction_gt1")
    with pytest.raises(CommandError, match="no repository named"):
        run("export_rubrics", "--repository", "nope")
    assert list(tmp_path.iterdir()) == []


# --- load_demo -----------------------------------------------------------------------------------------


def test_load_demo_loads_every_state_once(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path / "var"
    out, _ = run("load_demo")
    assert "Demo login: demo / demo" in out
    login = RequestFactory().post("/accounts/login/")  # django-axes throttles per request
    assert authenticate(login, username="demo", password="demo") is not None
    repository = Repository.objects.get(name="shapes")
    assert access_of(authenticate(login, username="demo", password="demo"), repository).role == "maintainer"
    assert repository.tasks.count() == 3
    statuses = sorted(RubricRevision.objects.values_list("status", flat=True))
    assert statuses == ["admitted", "approved", "draft", "draft"]
    # Its admission calibration ran here and passed: its job ended with it, not "queued" for ever.
    (job,) = Job.objects.filter(kind=JobKind.CALIBRATE_REVISION)
    assert job.result is not None
    assert (job.status, job.progress, job.result["status"]) == ("done", 100, "passed")
    assert job.finished_at is not None and job.started_at is not None
    example = Task.objects.get(task_id=TASK_ID)
    admitted = example.admitted_revision()
    assert admitted is not None
    # The admitted revision is the example's rubric.json, byte for byte once exported.
    assert admitted.to_rubric_dict() == json.loads((TASKS / TASK_ID / "rubric.json").read_text())
    edited = example.revisions.get(status="draft")
    assert edited.parent == admitted
    assert {i.item_id: i.review_state for i in edited.items.all()}["N2"] == ReviewState.CHANGES_REQUESTED
    assert RubricRevision.objects.filter(
        origin=Origin.MODEL, drafted_by_model="scripted:demo-drafter"
    ).exists()
    assert CalibrationDiff.objects.filter(revision=admitted).count() == 2
    assert (tmp_path / "var/demo/shapes/.git").is_dir()
    assert example.base_commit == GitRepo(tmp_path / "var/demo/shapes").head()

    # Every demo calibration diff applies to the demo checkout's base.
    checkout = GitRepo(tmp_path / "var/demo/shapes")
    for diff in CalibrationDiff.objects.all():
        patch = tmp_path / "check.diff"
        patch.write_bytes(bytes(diff.content))
        checkout.git("apply", "--check", str(patch))

    before = (RubricRevision.objects.count(), AuditEvent.objects.count())
    out, _ = run("load_demo")
    assert "already loaded" in out
    assert (RubricRevision.objects.count(), AuditEvent.objects.count()) == before
