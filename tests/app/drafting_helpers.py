"""What the drafting tests share: a real checkout at a base commit, the task and settings pointing at it, and
the PR and drafter replies of the grading side's drafting tests (tests/grading/test_draft.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rubrics_app.models import DraftSetting, Repository, Task
from tests.gitrepo import GitRepo
from tests.grading.draft_helpers import INJECTION, LAZY, MODEL, POLYGON, good_reply, pr_parts

__all__ = ["INJECTION", "LAZY", "MODEL", "good_reply", "pr_parts"]

DRAFTER = f"anthropic:{MODEL}"
GITHUB_REPOSITORY = "octo/shapes"  # FakeGitHub's


def make_checkout(git_repo: GitRepo) -> str:
    """The repository at the task's base commit (returned), and a later commit the drafter must not read."""
    git_repo.write("shapes/polygon.py", POLYGON)
    git_repo.write("CONTRIBUTING.md", "Every public area function must stay signed-compatible.\n")
    git_repo.write("docs/dev/style.md", "Keep functions small.\n")
    base = git_repo.commit("base")
    git_repo.write("shapes/polygon.py", "WORK TREE TEXT, NOT THE BASE\n")
    git_repo.commit("later")
    return base


def set_up_drafting(repository: Repository, task: Task, git_repo: GitRepo, *, use_token: bool = True) -> str:
    base = make_checkout(git_repo)
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(git_repo.path))
    Task.objects.filter(pk=task.pk).update(base_commit=base)
    DraftSetting.objects.create(
        repository=repository,
        drafter=DRAFTER,
        github_repository=GITHUB_REPOSITORY,
        use_token=use_token,
        token_env="GITHUB_TOKEN",
    )
    repository.refresh_from_db()
    task.refresh_from_db()
    return base


def write_prices(path: Path) -> Path:
    """A price table naming the drafter's model, so the draft has a known cost."""
    path.write_text(json.dumps({MODEL: {"input": 3.0, "output": 15.0}}))
    return path


def bad_reply() -> dict[str, Any]:
    """A draft every check finds fault with: evidence past the file's end and in a file the base lacks, a lazy
    diff that does not apply, two non-blockers, an id used twice, and markup in a criterion."""
    reply = good_reply()
    reply["blockers"][0]["evidence"] = "shapes/polygon.py:99"
    reply["blockers"][0]["criterion"] = "<script>alert('draft')</script> keeps its sign"
    reply["blockers"][1]["evidence"] = "nowhere.py:1"
    reply["blockers"][1]["id"] = "B1"
    reply["non_blockers"] = reply["non_blockers"][:2]
    reply["lazy_diff"] = {"diff": LAZY.replace("total = 0.0", "total = 1.0"), "breaks": ["B1"]}
    return reply


def export_json(**changes: Any) -> bytes:
    parts = pr_parts()
    parts.update(changes)
    return json.dumps(parts).encode()
