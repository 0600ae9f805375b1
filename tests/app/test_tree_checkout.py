"""Which checkout the app hands the tree judge (calibration and sweeps): the repository's, read at the task's
base commit, only when the revision has a needs_tree blocker, a judge has tree tools and the checkout holds
that commit here."""

from __future__ import annotations

from pathlib import Path

import pytest

from grading.judge.backend import Backend
from grading.judge.scripted import ScriptedBackend
from grading.judge.specs import make_backend
from rubrics_app.models import Repository, RubricRevision, Task
from rubrics_app.services.calibration.inputs import tree_checkout
from tests.app.conftest import MakeRevision, rubric_data
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkout(git_repo: GitRepo, repository: Repository, task: Task) -> Path:
    """The repository's checkout: a real git repository holding the task's base commit."""
    git_repo.write("src/fit.py", "def fit(fraction):\n    return fraction\n")
    Task.objects.filter(pk=task.pk).update(base_commit=git_repo.commit("base"))
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(git_repo.path))
    return git_repo.path


@pytest.fixture
def api_judge(monkeypatch: pytest.MonkeyPatch) -> Backend:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # no call is made
    return make_backend("anthropic:claude-sonnet-4-5-20250929")


def tree_revision(make_revision: MakeRevision, task: Task, needs_tree: bool = True) -> RubricRevision:
    data = rubric_data(task=task.task_id)
    for blocker in data["blockers"]:
        blocker.pop("needs_tree", None)
    data["blockers"][0]["needs_tree"] = needs_tree
    return make_revision(data=data)


def test_a_needs_tree_blocker_gets_the_repository_checkout_when_a_judge_has_tree_tools(
    make_revision: MakeRevision, task: Task, checkout: Path, tmp_path: Path, api_judge: Backend
) -> None:
    revision = tree_revision(make_revision, task)
    assert tree_checkout(revision, api_judge) == checkout
    assert tree_checkout(revision, None, api_judge) == checkout  # the second judge has them
    script = tmp_path / "judge.json"
    script.write_text("{}")
    assert tree_checkout(revision, ScriptedBackend(script), None) is None  # no tree tools: not measured


def test_no_needs_tree_blocker_no_checkout_or_a_checkout_without_the_base_commit_gives_none(
    make_revision: MakeRevision,
    task: Task,
    repository: Repository,
    checkout: Path,
    tmp_path: Path,
    api_judge: Backend,
) -> None:
    assert tree_checkout(tree_revision(make_revision, task, needs_tree=False), api_judge) is None

    revision = tree_revision(make_revision, task)
    Repository.objects.filter(pk=repository.pk).update(checkout_path="")
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk), api_judge) is None

    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(tmp_path / "not-here"))
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk), api_judge) is None

    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(checkout))
    Task.objects.filter(pk=task.pk).update(base_commit="0" * 40)  # not fetched into this checkout
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk), api_judge) is None

    Task.objects.filter(pk=task.pk).update(base_commit="")
    assert tree_checkout(RubricRevision.objects.get(pk=revision.pk), api_judge) is None
