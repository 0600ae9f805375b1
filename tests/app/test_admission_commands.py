"""The admission commands: import_rubrics --approved-by, judge_settings, and calibrate's bad input (its
end-to-end runs with a real worker are in test_calibration_worker.py)."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    JudgeSetting,
    Membership,
    Repository,
    ReviewState,
    RevisionStatus,
    Role,
    RubricRevision,
    Task,
)
from tests.app.conftest import CALIBRATION_FILES, ORACLE_DIFF, rubric_data
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + err.getvalue() + str(exc)
    return 0, out.getvalue()


def write_task(repo: GitRepo, task_id: str = "fix_fraction_gt1") -> None:
    repo.write(f"tasks/{task_id}/rubric.json", json.dumps(rubric_data(task=task_id), indent=2) + "\n")
    for path, content in CALIBRATION_FILES.items():
        repo.write(f"tasks/{task_id}/{path}", content)
    repo.write(f"tasks/{task_id}/task.json", json.dumps({"id": task_id, "prompt": "Fix it."}))
    repo.write(f"tasks/{task_id}/oracle.diff", ORACLE_DIFF)
    repo.write(f"tasks/{task_id}/oracle_grade.json", json.dumps({"pass": True}))
    repo.write(f"tasks/{task_id}/tests_base.txt", "tests/test_fraction.py::test_gt1\n")


def project(maintainer: User, reviewer: User) -> Repository:
    repository = Repository.objects.create(name="project")
    Membership.objects.create(repository=repository, user=maintainer, role=Role.MAINTAINER)
    Membership.objects.create(repository=repository, user=reviewer, role=Role.REVIEWER)
    return repository


def test_import_with_approved_by_brings_reviewed_rubrics_in_approved(
    git_repo: GitRepo, maintainer: User, reviewer: User
) -> None:
    write_task(git_repo)
    repository = project(maintainer, reviewer)
    code, out = run(
        "import_rubrics", str(git_repo.path), "--repository", "project", "--approved-by", "maintainer"
    )
    assert code == 0, out
    assert "tasks/fix_fraction_gt1/rubric.json -> project revision 1 (approved)" in out
    revision = RubricRevision.objects.get(task__repository=repository)
    assert revision.status == RevisionStatus.APPROVED and revision.approved_by == maintainer
    assert {i.review_state for i in revision.ordered_items()} == {ReviewState.APPROVED}
    event = AuditEvent.objects.get(revision=revision, verb=AuditVerb.IMPORTED_APPROVED)
    assert event.actor == maintainer and str(event) == f"maintainer imported as approved {revision}"
    # The task's own files came with it.
    task = Task.objects.get(repository=repository)
    assert bytes(task.oracle_diff) == ORACLE_DIFF
    assert json.loads(bytes(task.oracle_grade)) == {"pass": True}
    assert bytes(task.tests_base) == b"tests/test_fraction.py::test_gt1\n"


def test_without_approved_by_they_are_drafts_and_a_bad_approver_imports_nothing(
    git_repo: GitRepo, maintainer: User, reviewer: User
) -> None:
    write_task(git_repo)
    project(maintainer, reviewer)
    code, out = run(
        "import_rubrics", str(git_repo.path), "--repository", "project", "--approved-by", "nobody"
    )
    assert code == 2 and "--approved-by: no user named 'nobody'" in out
    code, out = run(
        "import_rubrics", str(git_repo.path), "--repository", "project", "--approved-by", "reviewer"
    )
    assert code == 2 and "reviewer is not a maintainer of project" in out
    assert not RubricRevision.objects.exists()
    code, _ = run("import_rubrics", str(git_repo.path), "--repository", "project")
    assert code == 0 and RubricRevision.objects.get().status == RevisionStatus.DRAFT


def test_a_bad_task_file_imports_nothing(git_repo: GitRepo, maintainer: User, reviewer: User) -> None:
    write_task(git_repo)
    git_repo.write("tasks/fix_fraction_gt1/oracle_grade.json", "[1, 2]")
    project(maintainer, reviewer)
    code, out = run("import_rubrics", str(git_repo.path), "--repository", "project")
    assert code == 2 and "tasks/fix_fraction_gt1/oracle_grade.json: grade.json is a JSON object" in out
    assert not Task.objects.exists()


def test_judge_settings_sets_and_prints(repository: Repository) -> None:
    code, out = run(
        "judge_settings",
        "--repository",
        repository.name,
        "--judge",
        "anthropic:claude-sonnet-4-5-20250929",
        "--second-judge",
        "openai:gpt-4o-2024-08-06",
        "--decoding",
        "temperature=0",
        "--monthly-cap",
        "25",
    )
    assert code == 0, out
    setting = JudgeSetting.objects.get(repository=repository)
    assert setting.decoding == {"temperature": 0} and str(setting.monthly_cap_usd) == "25.00"
    code, out = run("judge_settings", "--repository", repository.name)
    assert code == 0
    assert out.splitlines() == [
        "repository: example-project",
        "judge: anthropic:claude-sonnet-4-5-20250929",
        "decoding: temperature=0",
        "second judge: openai:gpt-4o-2024-08-06",
        "monthly spend cap: $25.00",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge", "anthropic:sonnet"], "--judge: judge spec 'anthropic:sonnet': 'sonnet' is an alias"),
        (
            [
                "--judge",
                "anthropic:claude-sonnet-4-5-20250929",
                "--second-judge",
                "anthropic:claude-opus-4-1-20250805",
            ],
            "--second-judge: anthropic:claude-opus-4-1-20250805 is of the same model family",
        ),
        (["--judge", "openai:gpt-4o-2024-08-06", "--decoding", "nope"], "expected NAME=VALUE"),
        (
            ["--judge", "openai:gpt-4o-2024-08-06", "--monthly-cap", "lots"],
            "--monthly-cap: 'lots' is not a number",
        ),
        (["--second-judge", "openai:gpt-4o-2024-08-06"], "--judge is required"),
    ],
)
def test_judge_settings_bad_input_exits_2_and_changes_nothing(
    repository: Repository, args: list[str], message: str
) -> None:
    before = JudgeSetting.objects.get(repository=repository).judge
    code, out = run("judge_settings", "--repository", repository.name, *args)
    assert code == 2 and message in out, out
    assert JudgeSetting.objects.get(repository=repository).judge == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--repository", "nope", "--task", "x"], "no repository named 'nope'"),
        (["--repository", "example-project", "--task", "nope"], "has no task 'nope'"),
    ],
)
def test_calibrate_bad_input_exits_2(repository: Repository, args: list[str], message: str) -> None:
    code, out = run("calibrate", *args)
    assert code == 2 and message in out
