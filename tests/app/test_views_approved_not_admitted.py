"""An approved revision that is not admitted yet shows as approved, not as "none yet" (issue 8 §6)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Repository, RevisionStatus, Task
from tests.app.conftest import MakeRevision


def html_of(user: User, url: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


def test_the_repository_page_shows_the_newest_approved_revision(
    viewer: User, task: Task, make_revision: MakeRevision, repository: Repository
) -> None:
    page = reverse("rubrics:repository_detail", args=[repository.pk])
    make_revision()
    assert '<span class="muted">none yet</span>' in html_of(viewer, page)
    make_revision(RevisionStatus.APPROVED)
    newest = make_revision(RevisionStatus.APPROVED)
    html = html_of(viewer, page)
    revision_url = reverse("rubrics:revision_detail", args=[repository.pk, newest.pk])
    assert (
        f'<a href="{revision_url}">r3</a> <span class="badge approved">approved</span> '
        '<span class="muted">not admitted yet</span>'
    ) in html
    assert "none yet" not in html
    # Once one is admitted, that is the task's rubric.
    make_revision(RevisionStatus.ADMITTED)
    html = html_of(viewer, page)
    assert '>r4</a> <span class="badge admitted">admitted</span>' in html and "not admitted yet" not in html


def test_the_task_page_names_the_approved_revision_while_none_is_admitted(
    viewer: User, task: Task, make_revision: MakeRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    html = html_of(viewer, reverse("rubrics:task_detail", args=[task.repository_id, task.pk]))
    part = html[html.index("<h2>Admitted rubric</h2>") : html.index("<h2>Drafts</h2>")]
    assert "No admitted rubric: results on this task are provisional." in part
    assert f"<strong>Revision {approved.number}</strong>" in part and "not admitted yet" in part
