"""Which checkout the app hands the tree judge (calibration and sweeps): the repository's, read at the task's
base commit, only when the revision has a needs_tree blocker and both are known."""

from __future__ import annotations

from pathlib import Path

import pytest

from rubrics_app.models import Repository, RubricRevision, Task
from rubrics_app.services.calibration import tree_checkout
from tests.app.conftest import MakeRevision, rubric_data

pytestmark = pytest.mark.django_db


def tree_revision(make_revision: MakeRevision, task: Task, needs_tree: bool = True) -> RubricRevision:
    data = rubric_data(task=task.task_id)
    for blocker in data["blockers"]:
        blocker.pop("needs_tree", None)
    data["blockers"][0]["needs_tree"] = needs_tree
    return make_revision(data=data)


def test_a_needs_tree_blocker_gets_the_repository_checkout(
    make_revision: MakeRevision, task: Task, repository: Repository, tmp_path: Path
) -> None:
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(tmp_path))
    revision = tree_revision(make_revision, task)
    assert tree_checkout(revision) == tmp_path


def test_no_needs_tree_blocker_no_checkout_path_or_no_base_commit_gives_none(
    make_revision: MakeRevision, task: Task, repository: Repository, tmp_path: Path
) -> None:
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(tmp_path))
    assert tree_checkout(tree_revision(make_revision, task, needs_tree=False)) is None

    revision = tree_revision(make_revision, task)
    Repository.objects.filter(pk=repository.pk).update(checkout_path="")
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk)) is None

    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(tmp_path))
    Task.objects.filter(pk=task.pk).update(base_commit="")
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk)) is None
