"""An imported grade's ``provisional``: metrics.json's own answer (the grader's admission store) together with
the app's revision of the same rubric content (§6)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from rubrics_app.models import Repository, RubricRevision, RunGrade
from rubrics_app.services.runs.store import revision_sha256
from tests.app.runs_helpers import PASSING, grade, write_run, write_scripted, write_task_dir

pytestmark = pytest.mark.django_db


def import_one(tmp_path: Path, repository: Repository, sha: str, provisional: bool) -> RunGrade:
    task_dir = write_task_dir(tmp_path / "checkout")
    run_dir = write_run(tmp_path / "runs", "r0")
    grade(task_dir, run_dir, write_scripted(tmp_path / "p.json", PASSING), rubric_sha256=sha,
          provisional=provisional)  # fmt: skip
    call_command("import_runs", str(tmp_path / "runs"), "--repository", repository.name, stdout=io.StringIO())
    return RunGrade.objects.get()


def test_the_graders_admission_counts_even_for_a_draft(
    tmp_path: Path, draft_revision: RubricRevision, repository: Repository
) -> None:
    graded = import_one(tmp_path, repository, revision_sha256(draft_revision), provisional=False)
    assert graded.revision == draft_revision and graded.provisional is False


def test_a_draft_not_admitted_by_the_grader_is_provisional(
    tmp_path: Path, draft_revision: RubricRevision, repository: Repository
) -> None:
    graded = import_one(tmp_path, repository, revision_sha256(draft_revision), provisional=True)
    assert graded.provisional is True


def test_the_apps_admitted_revision_counts_when_the_graders_store_had_none(
    tmp_path: Path, admitted_revision: RubricRevision, repository: Repository
) -> None:
    graded = import_one(tmp_path, repository, revision_sha256(admitted_revision), provisional=True)
    assert graded.revision == admitted_revision and graded.provisional is False
