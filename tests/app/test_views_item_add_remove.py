"""Adding a blocker or non-blocker to a draft and removing one from it (§6: maintainer review exists to drop
questionable blockers). Under htmx both return the item sections; a plain post redirects to the page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    ItemComment,
    ReviewState,
    RevisionStatus,
    RubricItem,
    RubricRevision,
)
from rubrics_app.services.rubrics import revisions
from tests.app.client_helpers import HX, logged_in
from tests.app.conftest import MakeRevision, rubric_data


def add_url(revision: RubricRevision, kind: str = "blocker") -> str:
    return reverse("rubrics:item_add", args=[revision.task.repository_id, revision.pk, kind])


def remove_url(item: RubricItem) -> str:
    return reverse("rubrics:item_remove", args=[item.revision.task.repository_id, item.pk])


def page_url(revision: RubricRevision) -> str:
    return reverse("rubrics:revision_detail", args=[revision.task.repository_id, revision.pk])


def item(revision: RubricRevision, item_id: str) -> RubricItem:
    return RubricItem.objects.select_related("revision__task").get(revision=revision, item_id=item_id)


NEW_BLOCKER = {
    "item_id": "B3",
    "criterion": "The CLI reports the bad fraction with its value.",
    "rationale": "Users pass it from the command line.",
    "evidence": "src/cli.py:40",
}
NEW_NON_BLOCKER = {"item_id": "N4", "criterion": "The changelog mentions the fix.", "weight": "0.5"}


def ids(revision: RubricRevision) -> list[str]:
    return [i.item_id for i in RubricRevision.objects.get(pk=revision.pk).ordered_items()]


# --- adding -------------------------------------------------------------------------------------------------


def test_a_maintainer_adds_a_blocker_and_gets_the_item_sections(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    response = logged_in(maintainer).post(add_url(draft_revision), NEW_BLOCKER, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert html.strip().startswith('<div id="item-sections">')
    added = item(draft_revision, "B3")
    assert f'id="item-{added.pk}"' in html
    assert "The CLI reports the bad fraction with its value." in html
    # The status (counts, approvability, the message) and the calibration diffs come out of band.
    assert 'id="revision-status" class="card" hx-swap-oob="true"' in html
    assert 'id="calibration-diffs" hx-swap-oob="true"' in html
    assert "Blocker B3 was added to this draft." in html
    assert ids(draft_revision) == ["B1", "B2", "B3", "N1", "N2", "N3"]
    assert added.review_state == ReviewState.PENDING
    assert (added.evidence, added.needs_tree, added.position) == ("src/cli.py:40", False, 2)
    event = AuditEvent.objects.get(revision=draft_revision, verb=AuditVerb.EDITED, item=added)
    assert event.actor == maintainer
    assert event.detail["added"]["item_id"] == "B3"


def test_a_non_blocker_gets_its_weight_and_a_plain_post_redirects_to_it(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    response = client.post(add_url(draft_revision, "non_blocker"), NEW_NON_BLOCKER)
    added = item(draft_revision, "N4")
    assert response.status_code == 302
    assert response["Location"] == f"{page_url(draft_revision)}#item-{added.pk}"
    assert (added.kind, added.weight, added.position) == ("non_blocker", 0.5, 3)
    page = client.get(response["Location"]).content.decode()
    assert "Non-blocker N4 was added to this draft." in page
    assert "added <code>N4</code> to this revision" in page


@pytest.mark.parametrize(
    ("kind", "changes", "message"),
    [
        ("blocker", {"criterion": "   "}, "Say what the change must do: the criterion cannot be blank."),
        ("blocker", {"item_id": "B1"}, "B1 is already the id of another item of this revision."),
        # Ids are unique across blockers and non-blockers.
        ("blocker", {"item_id": "N1"}, "N1 is already the id of another item of this revision."),
        ("blocker", {"item_id": "no spaces"}, "Use letters, digits, &#x27;.&#x27;, &#x27;_&#x27; or"),
        ("blocker", {"item_id": ""}, "Give the item an id, such as B1 or N2."),
        ("blocker", {"evidence": ""}, "A blocker cites evidence"),
        ("non_blocker", {"weight": "0"}, "A weight is a number above 0."),
        ("non_blocker", {"weight": "-1"}, "A weight is a number above 0."),
        ("non_blocker", {"weight": "100.5"}, "A weight is at most 100."),
        ("non_blocker", {"weight": "1e400"}, "Enter a number."),
        ("non_blocker", {"weight": "heavy"}, "Enter a number."),
    ],
)
def test_bad_input_is_a_form_error_and_nothing_is_added(
    maintainer: User, draft_revision: RubricRevision, kind: str, changes: dict[str, str], message: str
) -> None:
    data = {**(NEW_BLOCKER if kind == "blocker" else NEW_NON_BLOCKER), **changes}
    client = logged_in(maintainer)
    htmx = client.post(add_url(draft_revision, kind), data, headers=HX)
    # htmx swaps only 2xx responses: the sections come back with the form open and its errors.
    assert htmx.status_code == 200
    assert message in htmx.content.decode()
    assert f'<details class="add-item" id="add-{kind}" open>' in htmx.content.decode()
    plain = client.post(add_url(draft_revision, kind), data, follow=True)
    assert plain.status_code == 200 and plain.redirect_chain[-1][0].startswith(page_url(draft_revision))
    assert "<html" in plain.content.decode() and message in plain.content.decode()
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]
    assert not AuditEvent.objects.filter(revision=draft_revision, verb=AuditVerb.EDITED).exists()


def test_an_unknown_kind_is_not_found(maintainer: User, draft_revision: RubricRevision) -> None:
    assert logged_in(maintainer).post(add_url(draft_revision, "gate"), NEW_BLOCKER).status_code == 404


def test_an_id_taken_between_check_and_save_is_a_form_error(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubrics_app.forms.rubrics import NewItemForm

    # The race: the form's uniqueness check passed, then someone else saved B1 first; the database refuses.
    monkeypatch.setattr(NewItemForm, "clean_item_id", lambda self: self.cleaned_data["item_id"])
    response = logged_in(maintainer).post(
        add_url(draft_revision), {**NEW_BLOCKER, "item_id": "B1"}, headers=HX
    )
    assert response.status_code == 200
    assert "B1 was just taken by another item of this revision." in response.content.decode()
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]


def test_too_many_blockers_show_the_error_and_the_revision_cannot_be_approved(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    for n in range(3, 7):
        assert client.post(add_url(draft_revision), {**NEW_BLOCKER, "item_id": f"B{n}"}).status_code == 302
    html = client.get(page_url(draft_revision)).content.decode()
    assert re.search(r"2.5 blockers(, found|; this revision has) 6", html)
    for each in draft_revision.items.all():
        revisions.approve_item(each, by=Actor.member(maintainer))
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
    html = client.get(page_url(draft_revision)).content.decode()
    assert "Approve revision" not in html
    client.post(
        reverse("rubrics:revision_approve", args=[draft_revision.task.repository_id, draft_revision.pk])
    )
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
    # Dropping one again makes it approvable.
    client.post(remove_url(item(draft_revision, "B6")))
    assert "Approve revision" in client.get(page_url(draft_revision)).content.decode()


def test_adding_to_an_admitted_revision_goes_into_a_new_draft(
    maintainer: User, admitted_revision: RubricRevision
) -> None:
    response = logged_in(maintainer).post(add_url(admitted_revision), NEW_BLOCKER, headers=HX)
    draft = RubricRevision.objects.get(parent=admitted_revision)
    added = item(draft, "B3")
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"{page_url(draft)}#item-{added.pk}"
    assert draft.status == RevisionStatus.DRAFT
    assert ids(draft) == ["B1", "B2", "B3", "N1", "N2", "N3"]
    assert ids(admitted_revision) == ["B1", "B2", "N1", "N2", "N3"]
    admitted_revision.refresh_from_db()
    assert admitted_revision.status == RevisionStatus.ADMITTED


def test_a_failed_add_to_an_approved_revision_leaves_no_draft_behind(
    maintainer: User, approved_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubrics_app.forms.rubrics import NewItemForm

    monkeypatch.setattr(NewItemForm, "clean_item_id", lambda self: self.cleaned_data["item_id"])
    data = {**NEW_BLOCKER, "item_id": "N1"}
    response = logged_in(maintainer).post(add_url(approved_revision), data, follow=True)
    assert response.status_code == 200
    assert "N1 was just taken by another item of this revision." in response.content.decode()
    assert not RubricRevision.objects.filter(parent=approved_revision).exists()


# --- removing -----------------------------------------------------------------------------------------------


def test_a_maintainer_removes_an_item_and_the_row_is_gone(
    maintainer: User, reviewer: User, make_revision: MakeRevision
) -> None:
    data = rubric_data()
    data["blockers"] = [*data["blockers"], {**data["blockers"][1], "id": "B3", "criterion": "Never clamp."}]
    revision = make_revision(data=data)
    questionable = item(revision, "B3")
    ItemComment.objects.create(item=questionable, author=reviewer, text="clamping is arguably right here")
    response = logged_in(maintainer).post(remove_url(questionable), headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.strip().startswith('<div id="item-sections">')
    assert f'id="item-{questionable.pk}"' not in html
    assert f'id="item-{item(revision, "B1").pk}"' in html
    assert "Blocker B3 was removed from this draft." in html
    assert ids(revision) == ["B1", "B2", "N1", "N2", "N3"]
    assert not ItemComment.objects.filter(text="clamping is arguably right here").exists()
    event = AuditEvent.objects.get(revision=revision, verb=AuditVerb.EDITED)
    assert event.actor == maintainer and event.detail["removed"]["criterion"] == "Never clamp."
    page = logged_in(maintainer).get(page_url(revision)).content.decode()
    assert "removed <code>B3</code> from this revision" in page


def test_removing_below_the_minimum_shows_the_error_and_a_plain_post_redirects(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    response = client.post(remove_url(item(draft_revision, "B1")))
    assert response.status_code == 302
    assert response["Location"] == f"{page_url(draft_revision)}#item-sections"
    html = client.get(response["Location"]).content.decode()
    assert re.search(r"2.5 blockers(, found|; this revision has) 1", html)
    # The lazy calibration diff was written to break B1, which no longer exists: shown beside the diff.
    assert "B1" in html.split('id="calibration-diffs"')[1].split("</section>")[0]
    for each in draft_revision.items.all():
        revisions.approve_item(each, by=Actor.member(maintainer))
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT


def test_removing_the_last_pending_item_lets_the_revision_be_approved(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    client.post(add_url(draft_revision, "non_blocker"), NEW_NON_BLOCKER)
    for each in draft_revision.items.exclude(item_id="N4"):
        revisions.approve_item(each, by=Actor.member(maintainer))
    assert "Approve revision" not in client.get(page_url(draft_revision)).content.decode()
    response = client.post(remove_url(item(draft_revision, "N4")), headers=HX)
    assert "Approve revision" in response.content.decode()  # the status, out of band
    client.post(
        reverse("rubrics:revision_approve", args=[draft_revision.task.repository_id, draft_revision.pk])
    )
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.APPROVED


def test_removing_from_an_approved_revision_goes_into_a_new_draft(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    response = logged_in(maintainer).post(remove_url(item(approved_revision, "N3")))
    draft = RubricRevision.objects.get(parent=approved_revision)
    assert response.status_code == 302
    assert response["Location"] == f"{page_url(draft)}#item-sections"
    assert ids(draft) == ["B1", "B2", "N1", "N2"]
    assert ids(approved_revision) == ["B1", "B2", "N1", "N2", "N3"]


# --- the page, roles, CSRF ----------------------------------------------------------------------------------


def test_the_page_offers_add_and_remove_to_maintainers_on_drafts_only(
    maintainer: User, reviewer: User, draft_revision: RubricRevision, approved_revision: RubricRevision
) -> None:
    html = logged_in(maintainer).get(page_url(draft_revision)).content.decode()
    b1 = item(draft_revision, "B1")
    assert f'action="{add_url(draft_revision)}"' in html
    assert f'action="{add_url(draft_revision, "non_blocker")}"' in html
    assert f'hx-post="{remove_url(b1)}"' in html
    assert 'hx-confirm="Remove blocker B1 from this draft?"' in html
    # Both add forms on one page, with ids of their own.
    assert 'id="id_add_blocker_item_id"' in html and 'id="id_add_non_blocker_item_id"' in html
    frozen = logged_in(maintainer).get(page_url(approved_revision)).content.decode()
    assert "/items/add/" not in frozen and "/remove/" not in frozen
    as_reviewer = logged_in(reviewer).get(page_url(draft_revision)).content.decode()
    assert "/items/add/" not in as_reviewer and "/remove/" not in as_reviewer


@pytest.mark.parametrize("action", ["add", "remove"])
def test_reviewers_and_viewers_get_403_and_outsiders_404(
    reviewer: User,
    viewer: User,
    outsider: User,
    other_repository: Any,
    draft_revision: RubricRevision,
    action: str,
) -> None:
    url = add_url(draft_revision) if action == "add" else remove_url(item(draft_revision, "B1"))
    for user, status in ((reviewer, 403), (viewer, 403), (outsider, 404)):
        client = logged_in(user)
        assert client.post(url, NEW_BLOCKER, headers=HX).status_code == status
        assert client.post(url, NEW_BLOCKER).status_code == status
    anonymous = Client().post(url, NEW_BLOCKER)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]


def test_get_is_refused_for_add(maintainer: User, draft_revision: RubricRevision) -> None:
    assert logged_in(maintainer).get(add_url(draft_revision)).status_code == 405


def test_get_of_remove_is_the_confirmation_step_and_removes_nothing(
    maintainer: User, viewer: User, draft_revision: RubricRevision
) -> None:
    b1 = item(draft_revision, "B1")
    # Without JavaScript the Remove button is a GET form to this page.
    page = logged_in(maintainer).get(page_url(draft_revision)).content.decode()
    assert f'<form class="inline" method="get" action="{remove_url(b1)}"' in page
    response = logged_in(maintainer).get(remove_url(b1))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Remove blocker <code>B1</code>?" in html
    assert f'<form method="post" action="{remove_url(b1)}">' in html
    assert 'name="csrfmiddlewaretoken"' in html and 'name="seen_status" value="draft"' in html
    assert f'href="{page_url(draft_revision)}#item-{b1.pk}">Cancel</a>' in html
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]
    assert logged_in(viewer).get(remove_url(b1)).status_code == 403
    # Confirming removes it.
    confirmed = logged_in(maintainer).post(remove_url(b1), {"seen_status": "draft"})
    assert confirmed.status_code == 302
    assert ids(draft_revision) == ["B2", "N1", "N2", "N3"]


def test_the_confirmation_on_an_approved_revision_says_a_draft_is_made(
    maintainer: User, approved_revision: RubricRevision
) -> None:
    html = logged_in(maintainer).get(remove_url(item(approved_revision, "N3"))).content.decode()
    assert "removing starts a new draft from it without <code>N3</code>" in html
    assert 'name="seen_status" value="approved"' in html
    assert ">Start a new draft without N3</button>" in html
    logged_in(maintainer).post(remove_url(item(approved_revision, "N3")), {"seen_status": "approved"})
    assert ids(RubricRevision.objects.get(parent=approved_revision)) == ["B1", "B2", "N1", "N2"]


def test_add_and_remove_need_the_csrf_token(maintainer: User, draft_revision: RubricRevision) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    html = client.get(page_url(draft_revision)).content.decode()
    token = html.split('hx-headers=\'{"X-CSRFToken": "')[1].split('"')[0]
    b2 = item(draft_revision, "B2")
    assert client.post(add_url(draft_revision), NEW_BLOCKER, headers=HX).status_code == 403
    assert client.post(remove_url(b2), headers=HX).status_code == 403
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]
    with_token = {**HX, "X-CSRFToken": token}
    assert client.post(add_url(draft_revision), NEW_BLOCKER, headers=with_token).status_code == 200
    assert client.post(remove_url(b2), headers=with_token).status_code == 200
    assert ids(draft_revision) == ["B1", "B3", "N1", "N2", "N3"]


# --- a revision approved meanwhile --------------------------------------------------------------------------


def approved_between_check_and_write(monkeypatch: pytest.MonkeyPatch, revision: RubricRevision) -> None:
    """Another maintainer's approval lands after the service found a draft and before it writes (here in the
    same transaction, so it is rolled back with the refused write; what matters is what the write meets)."""
    check = revisions._require_draft

    def then_approved(checked: RubricRevision) -> None:
        check(checked)
        RubricRevision.objects.filter(pk=revision.pk).update(status=RevisionStatus.APPROVED)

    monkeypatch.setattr(revisions, "_require_draft", then_approved)


@pytest.mark.parametrize("htmx", [True, False])
def test_an_add_to_a_revision_approved_meanwhile_is_a_notice(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch, htmx: bool
) -> None:
    approved_between_check_and_write(monkeypatch, draft_revision)
    client = logged_in(maintainer)
    response = client.post(add_url(draft_revision), NEW_BLOCKER, headers=HX if htmx else {}, follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Revision 1 was approved meanwhile, so nothing was added. Reload the page" in html
    assert 'value="B3"' in html  # the maintainer's text is still in the form
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]


def test_a_removal_from_a_revision_approved_meanwhile_is_a_notice(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    approved_between_check_and_write(monkeypatch, draft_revision)
    client = logged_in(maintainer)
    response = client.post(remove_url(item(draft_revision, "N3")), headers=HX)
    assert response.status_code == 200
    assert "Revision 1 was approved meanwhile, so nothing was removed." in response.content.decode()
    assert ids(draft_revision) == ["B1", "B2", "N1", "N2", "N3"]
