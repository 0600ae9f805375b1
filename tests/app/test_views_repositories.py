"""Repository list, repository page (tasks) and task page (admitted revision, drafts, history)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import Repository, RevisionStatus, Task
from tests.app.client_helpers import HX, logged_in
from tests.app.conftest import MakeRevision


def test_the_list_shows_only_repositories_with_a_role(
    viewer: User, outsider: User, repository: Repository, other_repository: Repository
) -> None:
    html = logged_in(viewer).get(reverse("rubrics:repository_list")).content.decode()
    assert "example-project" in html and "other-project" not in html
    html = logged_in(outsider).get(reverse("rubrics:repository_list")).content.decode()
    assert "other-project" in html and "example-project" not in html


def test_the_repository_page_lists_tasks_with_admitted_and_draft_revisions(
    viewer: User, task: Task, make_revision: MakeRevision, repository: Repository
) -> None:
    make_revision(RevisionStatus.ADMITTED)
    make_revision()
    make_revision()
    html = logged_in(viewer).get(reverse("rubrics:repository_detail", args=[repository.pk])).content.decode()
    assert "<code>fix_fraction_gt1</code>" in html
    assert '>r1</a> <span class="badge admitted">admitted</span>' in html
    assert '2 <span class="badge draft">draft</span>' in html
    assert "Import a rubric" not in html  # viewers do not import


def test_a_maintainer_sees_the_upload_form(maintainer: User, repository: Repository) -> None:
    html = (
        logged_in(maintainer).get(reverse("rubrics:repository_detail", args=[repository.pk])).content.decode()
    )
    assert 'enctype="multipart/form-data"' in html and 'name="file"' in html


def test_the_task_page_shows_the_admitted_revision_beside_the_drafts(
    reviewer: User, task: Task, make_revision: MakeRevision, repository: Repository
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    draft = make_revision()
    html = (
        logged_in(reviewer)
        .get(reverse("rubrics:task_detail", args=[repository.pk, task.pk]))
        .content.decode()
    )
    admitted_part = html[html.index("<h2>Admitted rubric</h2>") : html.index("<h2>Drafts</h2>")]
    drafts_part = html[html.index("<h2>Drafts</h2>") : html.index("<h2>History</h2>")]
    assert f"Revision {admitted.number}" in admitted_part
    assert f"Revision {draft.number}" in drafts_part and "provisional" in drafts_part
    assert "Make fit() reject fraction &gt; 1." in html  # the spec prompt, escaped
    assert 'href="https://github.com/example/project/pull/12"' in html


def test_a_task_without_admitted_rubric_says_results_are_provisional(
    viewer: User, task: Task, draft_revision: object, repository: Repository
) -> None:
    html = (
        logged_in(viewer).get(reverse("rubrics:task_detail", args=[repository.pk, task.pk])).content.decode()
    )
    assert "No admitted rubric: results on this task are provisional." in html


def test_outsiders_get_404_on_repository_and_task_pages(
    outsider: User, task: Task, repository: Repository, other_repository: Repository
) -> None:
    client = logged_in(outsider)
    for page in (
        reverse("rubrics:repository_detail", args=[repository.pk]),
        reverse("rubrics:task_detail", args=[repository.pk, task.pk]),
        # a task of this repository looked up through a repository the outsider does maintain
        reverse("rubrics:task_detail", args=[other_repository.pk, task.pk]),
    ):
        assert client.get(page).status_code == 404
        assert client.get(page, headers=HX).status_code == 404


def test_every_page_requires_login(task: Task, repository: Repository) -> None:
    for page in (
        reverse("rubrics:repository_list"),
        reverse("rubrics:repository_detail", args=[repository.pk]),
        reverse("rubrics:task_detail", args=[repository.pk, task.pk]),
    ):
        response = Client().get(page)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
