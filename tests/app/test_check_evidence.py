"""`manage.py check_evidence`: a blocker's cited path:line at the base commit against the checkout's HEAD,
with real git."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from rubrics_app.models import EvidenceChange, Repository, RevisionStatus, RubricRevision, Task
from rubrics_app.services.rubrics.rereview import Cite, parse_cites
from tests.app.command_helpers import command_output
from tests.app.conftest import MakeRevision, rubric_data
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db

BASE = "def fraction(x):\n    return x\n\n\ndef other():\n    pass\n"


def test_parse_cites_finds_paths_and_ranges_and_skips_urls() -> None:
    evidence = (
        "shapes/polygon.py:18 (docstring) and shapes/polygon.py:34-35; README.md:6; "
        "https://github.com/example/project/pull/12#discussion_r1 http://host.example:8080/x "
        "../etc/passwd:1 ratio 3:2"
    )
    assert parse_cites(evidence) == [
        Cite("shapes/polygon.py", 18, 18),
        Cite("shapes/polygon.py", 34, 35),
        Cite("README.md", 6, 6),
    ]


def run(*args: str) -> tuple[str, str]:
    return command_output("check_evidence", *args)


@pytest.fixture
def checkout(git_repo: GitRepo, repository: Repository, task: Task) -> GitRepo:
    git_repo.write("src/fraction.py", BASE)
    base = git_repo.commit("base")
    Repository.objects.filter(pk=repository.pk).update(checkout_path=str(git_repo.path))
    Task.objects.filter(pk=task.pk).update(base_commit=base)
    return git_repo


@pytest.fixture
def admitted(checkout: GitRepo, make_revision: MakeRevision, task: Task) -> RubricRevision:
    task.refresh_from_db()
    data = rubric_data(task=task.task_id)
    data["blockers"][0]["evidence"] = "src/fraction.py:2 (returns x unchecked)"
    return make_revision(RevisionStatus.ADMITTED, data=data, task=task)


def test_unchanged_evidence_flags_nothing(
    checkout: GitRepo, admitted: RubricRevision, repository: Repository
) -> None:
    checkout.write("src/fraction.py", BASE + "\n\ndef added():\n    pass\n")  # below the cited line
    checkout.commit("unrelated")
    out, _ = run("--repository", repository.name)
    assert "0 open evidence changes" in out
    assert not EvidenceChange.objects.exists()


def test_a_changed_cited_line_flags_the_revision_and_shows_old_and_new_text(
    checkout: GitRepo, admitted: RubricRevision, repository: Repository, viewer: User
) -> None:
    checkout.write("src/fraction.py", BASE.replace("    return x\n", "    return min(x, 1)\n"))
    head = checkout.commit("upstream change")
    with pytest.raises(CommandError) as exc:
        run("--repository", repository.name)
    assert exc.value.returncode == 1 and "1 open evidence change, 1 new" in str(exc.value)
    change = EvidenceChange.objects.get()
    assert (change.revision, change.item.item_id, change.path, change.line_start) == (
        admitted,
        "B1",
        "src/fraction.py",
        2,
    )
    assert (change.old_text, change.new_text, change.head_commit) == (
        "    return x",
        "    return min(x, 1)",
        head,
    )
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("rubrics:task_detail", args=[repository.pk, admitted.task_id])).content.decode()
    assert "needs re-review" in page and "return min(x, 1)" in page
    # Checking again at the same HEAD adds nothing.
    with pytest.raises(CommandError) as exc:
        run("--repository", repository.name)
    assert "1 open evidence change, 0 new" in str(exc.value)
    assert EvidenceChange.objects.count() == 1


def test_a_dismissed_change_stays_dismissed_at_the_same_head(
    checkout: GitRepo, admitted: RubricRevision, repository: Repository, maintainer: User
) -> None:
    checkout.write("src/fraction.py", BASE.replace("return x", "return abs(x)"))
    checkout.commit("upstream change")
    with pytest.raises(CommandError):
        run("--repository", repository.name)
    change = EvidenceChange.objects.get()
    client = Client()
    client.force_login(maintainer)
    client.post(
        reverse("rubrics:flag_dismiss", args=[repository.pk, "evidence", change.pk]),
        {"reason": "same meaning"},
    )
    out, _ = run("--repository", repository.name)
    assert "0 open evidence changes, 0 new" in out


def test_a_deleted_file_is_flagged(
    checkout: GitRepo, admitted: RubricRevision, repository: Repository
) -> None:
    checkout.git("rm", "-q", "src/fraction.py")
    checkout.commit("removed")
    with pytest.raises(CommandError):
        run("--repository", repository.name)
    assert EvidenceChange.objects.get().new_missing


def test_bad_input_exits_2(repository: Repository, tmp_path: object) -> None:
    with pytest.raises(CommandError) as exc:
        run("--repository", "nope")
    assert exc.value.returncode == 2
    Repository.objects.filter(pk=repository.pk).update(checkout_path="/nonexistent/checkout")
    with pytest.raises(CommandError) as exc:
        run("--repository", repository.name)
    assert exc.value.returncode == 2 and "not a directory" in str(exc.value)
