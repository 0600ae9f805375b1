"""What an htmx review action refreshes on the revision page (issue 8 §6), tested on the responses htmx gets:
approving the last item turns the revision approved, and everything that changes with it is swapped in
(every row, the add forms, the status, Activity, History); a form left on a draft's page that was approved
meanwhile is refused rather than quietly forking a new draft."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import RevisionStatus, RubricItem, RubricRevision
from tests.app.client_helpers import HX, logged_in


def approve_url(item: RubricItem) -> str:
    return reverse("rubrics:item_approve", args=[item.revision.task.repository_id, item.pk])


def section(html: str, element_id: str) -> str:
    start = html.index(f'<section id="{element_id}"')
    return html[start : html.index("</section>", start)]


def approve_all_but_last(client: Client, revision: RubricRevision) -> RubricItem:
    items = list(RubricItem.objects.select_related("revision__task").filter(revision=revision))
    items.sort(key=lambda i: (i.kind != "blocker", i.position))
    for item in items[:-1]:
        assert client.post(approve_url(item), {"version": item.version}, headers=HX).status_code == 200
    return items[-1]


def test_an_approval_refreshes_its_row_the_count_and_the_activity(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    b1 = RubricItem.objects.select_related("revision__task").get(revision=draft_revision, item_id="B1")
    response = logged_in(maintainer).post(approve_url(b1), {"version": b1.version}, headers=HX)
    assert "HX-Retarget" not in response  # the row is swapped where htmx aimed: the item
    html = response.content.decode()
    assert html.strip().startswith(f'<article id="item-{b1.pk}"')
    status = section(html, "revision-status")
    assert 'hx-swap-oob="true"' in status
    assert "1 of 5 items approved" in status
    activity = section(html, "activity")
    assert '<section id="activity" hx-swap-oob="true">' in activity
    assert "approved <code>B1</code>" in activity
    assert "an item of" not in activity


def test_approving_the_last_item_refreshes_everything_the_approval_changes(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    last = approve_all_but_last(client, draft_revision)
    before = client.get(
        reverse("rubrics:revision_detail", args=[last.revision.task.repository_id, last.revision_id])
    )
    assert "4 of 5 items approved" in before.content.decode()

    response = client.post(approve_url(last), {"version": last.version}, headers=HX)
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.APPROVED
    # htmx aimed at the row; the answer replaces the whole item list instead (django-htmx's retarget/reswap).
    assert response["HX-Retarget"] == "#item-sections"
    assert response["HX-Reswap"] == "outerHTML"
    html = response.content.decode()
    assert html.strip().startswith('<div id="item-sections">')
    items = html[: html.index('<section id="revision-status"')]
    assert items.count('<article id="item-') == 5
    # No row offers a draft's actions any more, and nothing can be added to an approved revision.
    for gone in ("/approve/", "/remove/", "/request-changes/", "/items/add/", ">Remove<", "Add blocker"):
        assert gone not in items, gone
    assert items.count('<span class="badge approved">approved</span>') == 5

    status = section(html, "revision-status")
    assert 'hx-swap-oob="true"' in status
    assert '<span class="badge approved">approved</span>' in status
    assert "Every item is approved: revision 1 is approved." in status
    assert ">Admit<" in status and "items approved" not in status

    activity = section(html, "activity")
    assert 'hx-swap-oob="true"' in activity
    assert f"approved <code>{last.item_id}</code>" in activity
    assert "approved this revision" in activity

    history = section(html, "history")
    assert 'hx-swap-oob="true"' in history
    assert "(this one)" in history and '<span class="badge approved">approved</span>' in history
    assert '<span class="badge draft">' not in history


def test_a_stale_remove_is_refused_and_forks_no_draft(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    n3 = RubricItem.objects.get(revision=approved_revision, item_id="N3")
    url = reverse("rubrics:item_remove", args=[approved_revision.task.repository_id, n3.pk])
    # The Remove button of the page as it was while the revision was a draft.
    response = logged_in(maintainer).post(url, {"seen_status": "draft"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Revision 1 was approved meanwhile, so nothing was removed. Reload the page" in html
    assert ">Remove<" not in html  # the list it returns is the approved one
    assert not RubricRevision.objects.filter(parent=approved_revision).exists()
    assert RubricItem.objects.filter(revision=approved_revision).count() == 5


def test_a_stale_add_is_refused_and_forks_no_draft(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    url = reverse(
        "rubrics:item_add", args=[approved_revision.task.repository_id, approved_revision.pk, "blocker"]
    )
    data = {"seen_status": "draft", "item_id": "B3", "criterion": "Say it.", "evidence": "src/x.py:1"}
    response = logged_in(maintainer).post(url, data, follow=True)
    assert response.status_code == 200  # back on the revision's page, with the text still in the form
    assert "Revision 1 was approved meanwhile, so nothing was added." in response.content.decode()
    assert 'value="B3"' in response.content.decode()
    assert not RubricRevision.objects.filter(parent=approved_revision).exists()


def test_drafts_count_approved_items_and_frozen_revisions_do_not(
    viewer: User, draft_revision: RubricRevision, admitted_revision: RubricRevision
) -> None:
    def status(revision: RubricRevision) -> str:
        page = reverse("rubrics:revision_detail", args=[revision.task.repository_id, revision.pk])
        return section(logged_in(viewer).get(page).content.decode(), "revision-status")

    assert "<strong>0 of 5 items approved</strong>" in status(draft_revision)
    assert "items approved" not in status(admitted_revision)


def test_a_stale_item_edit_keeps_the_text_and_forks_only_when_saved_again(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    b1 = RubricItem.objects.select_related("revision__task").get(revision=approved_revision, item_id="B1")
    url = reverse("rubrics:item_edit", args=[approved_revision.task.repository_id, b1.pk])
    data = {
        "seen_status": "draft",
        "version": b1.version,
        "item_id": "B1",
        "criterion": "Mine.",
        "evidence": "a.py:1",
    }
    client = logged_in(maintainer)
    html = client.post(url, data, headers=HX).content.decode()
    assert "Revision 1 was approved meanwhile, so your edit was not saved." in html
    assert "Mine.</textarea>" in html  # still in the form
    assert 'name="seen_status" value="approved"' in html  # which now says saving starts a new draft
    assert "saving starts a new draft from it" in html
    assert not RubricRevision.objects.filter(parent=approved_revision).exists()
    # Saving that form again is a deliberate edit of an approved revision: it goes into a new draft.
    client.post(url, {**data, "seen_status": "approved"}, headers=HX)
    draft = RubricRevision.objects.get(parent=approved_revision)
    assert RubricItem.objects.get(revision=draft, item_id="B1").criterion == "Mine."


def test_a_stale_revision_edit_is_refused_with_the_text_kept(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    url = reverse("rubrics:revision_edit", args=[approved_revision.task.repository_id, approved_revision.pk])
    data = {
        "seen_status": "draft",
        "version": approved_revision.version,
        "intent": "My new intent.",
        "allowed_globs": "src/**",
        "denied_globs": "",
        "max_changed_lines": "",
        "max_files": "",
        "lazy_solution": approved_revision.lazy_solution,
        "alt_valid_solution": approved_revision.alt_valid_solution,
    }
    response = logged_in(maintainer).post(url, data)
    assert response.status_code == 409
    html = response.content.decode()
    assert "Revision 1 was approved meanwhile, so your edit was not saved." in html
    assert "My new intent." in html
    assert not RubricRevision.objects.filter(parent=approved_revision).exists()
