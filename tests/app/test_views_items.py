"""Row actions on one blocker or non-blocker: each returns just its row under htmx, the page otherwise."""

from __future__ import annotations

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
from tests.app.conftest import MakeRevision


def item_url(name: str, item: RubricItem) -> str:
    return reverse(f"rubrics:{name}", args=[item.revision.task.repository_id, item.pk])


def blocker(revision: RubricRevision, item_id: str = "B1") -> RubricItem:
    return revision.items.select_related("revision__task").get(item_id=item_id)


def edit_data(item: RubricItem, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "version": item.version,
        "item_id": item.item_id,
        "criterion": item.criterion,
        "rationale": item.rationale,
    }
    if item.kind == "blocker":
        data["evidence"] = item.evidence
        if item.needs_tree:
            data["needs_tree"] = "on"
    else:
        data["weight"] = item.weight
    data.update(changes)
    return data


def only_the_row(html: str, item: RubricItem) -> None:
    assert "<html" not in html
    assert html.strip().startswith(f'<article id="item-{item.pk}"')


def test_the_row_partial(viewer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    response = logged_in(viewer).get(item_url("item_row", item), headers=HX)
    assert response.status_code == 200
    only_the_row(response.content.decode(), item)
    # without htmx the row URL sends the browser to the page, at the row
    plain = logged_in(viewer).get(item_url("item_row", item))
    assert plain.status_code == 302 and plain["Location"].endswith(f"#item-{item.pk}")


def test_the_edit_form_replaces_the_row(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    html = logged_in(maintainer).get(item_url("item_edit", item), headers=HX).content.decode()
    only_the_row(html, item)
    assert 'name="criterion"' in html and 'name="evidence"' in html and 'name="weight"' not in html
    assert 'name="version" value="1"' in html
    non_blocker = blocker(draft_revision, "N1")
    html = logged_in(maintainer).get(item_url("item_edit", non_blocker), headers=HX).content.decode()
    assert 'name="weight"' in html and 'name="evidence"' not in html


def test_the_edit_form_without_javascript_is_the_whole_page(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    html = logged_in(maintainer).get(item_url("item_edit", item)).content.decode()
    assert "<html" in html and f'action="{item_url("item_edit", item)}"' in html


def test_saving_an_edit_returns_the_row_and_resets_its_review(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    revisions.approve_item(item, by=Actor.member(maintainer))
    item.refresh_from_db()
    data = edit_data(item, criterion="Raises ValueError above 1, on CPU & GPU.")
    response = logged_in(maintainer).post(item_url("item_edit", item), data, headers=HX)
    html = response.content.decode()
    assert response.status_code == 200
    only_the_row(html.split('<section id="revision-status"')[0], item)
    assert "Raises ValueError above 1, on CPU &amp; GPU." in html
    item.refresh_from_db()
    assert item.criterion == "Raises ValueError above 1, on CPU & GPU."
    assert item.review_state == ReviewState.PENDING and item.version == 2
    assert AuditEvent.objects.filter(item=item, verb=AuditVerb.EDITED, actor=maintainer).exists()


def test_a_plain_post_redirects_to_the_row(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    response = logged_in(maintainer).post(item_url("item_edit", item), edit_data(item, criterion="New."))
    assert response.status_code == 302 and response["Location"].endswith(f"#item-{item.pk}")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"criterion": "   "}, "the criterion cannot be blank"),
        ({"evidence": ""}, "A blocker cites evidence"),
        ({"item_id": "B 1"}, "starting with a letter or digit"),
        ({"item_id": "N1"}, "N1 is already the id of another item of this revision."),
        ({"version": "x"}, "Enter a whole number"),
    ],
)
def test_bad_input_is_shown_beside_the_field_and_nothing_is_saved(
    maintainer: User, draft_revision: RubricRevision, changes: dict[str, str], message: str
) -> None:
    item = blocker(draft_revision)
    response = logged_in(maintainer).post(item_url("item_edit", item), edit_data(item, **changes), headers=HX)
    html = response.content.decode()
    assert response.status_code == 200  # htmx swaps only 2xx responses
    assert message in html
    assert 'class="field invalid"' in html or "This form is out of date" in html
    item.refresh_from_db()
    assert item.version == 1 and item.criterion.startswith("A fraction above 1")


def test_a_bad_weight_is_refused(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision, "N2")
    response = logged_in(maintainer).post(item_url("item_edit", item), edit_data(item, weight="0"))
    assert response.status_code == 400
    assert "A weight is a number above 0." in response.content.decode()


def test_two_maintainers_editing_one_item_lose_nothing(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    theirs = edit_data(item, criterion="Their criterion.")
    mine = edit_data(item, criterion="My criterion.")  # both forms were loaded at version 1
    logged_in(maintainer).post(item_url("item_edit", item), theirs, headers=HX)
    response = logged_in(maintainer).post(item_url("item_edit", item), mine, headers=HX)
    html = response.content.decode()
    only_the_row(html.split('<section id="revision-status"')[0], item)
    assert "saved this item since you opened it" in html
    assert "Their criterion." in html  # their text is shown
    assert "My criterion." in html  # mine is still in the form
    item.refresh_from_db()
    assert item.criterion == "Their criterion."
    # saving again from the conflict form is a deliberate overwrite
    assert 'name="version" value="2"' in html
    logged_in(maintainer).post(item_url("item_edit", item), {**mine, "version": 2}, headers=HX)
    item.refresh_from_db()
    assert item.criterion == "My criterion."


def test_a_conflict_without_javascript_shows_the_page_with_both_texts(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    stale = edit_data(item, criterion="Mine, stale.")
    revisions.edit_item(item, 1, {"criterion": "Saved first."}, by=Actor.member(maintainer))
    response = logged_in(maintainer).post(item_url("item_edit", item), stale)
    html = response.content.decode()
    assert response.status_code == 409
    assert "<html" in html and "Saved first." in html and "Mine, stale." in html


def test_editing_an_item_of_an_approved_revision_makes_a_new_draft(
    maintainer: User, make_revision: MakeRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    item = blocker(approved, "B2")
    response = logged_in(maintainer).post(
        item_url("item_edit", item), edit_data(item, criterion="Every backend gets the check."), headers=HX
    )
    draft = RubricRevision.objects.get(parent=approved)
    carried = draft.items.get(item_id="B2")
    assert response.status_code == 200
    assert response["HX-Redirect"].endswith(f"/revisions/{draft.pk}/#item-{carried.pk}")
    assert carried.criterion == "Every backend gets the check."
    assert carried.needs_tree is True
    item.refresh_from_db()
    assert item.criterion == "The GPU backend gets the same check as the CPU one."


def test_approving_returns_the_row_and_the_status_out_of_band(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    response = logged_in(maintainer).post(item_url("item_approve", item), {"version": 1}, headers=HX)
    html = response.content.decode()
    only_the_row(html.split('<section id="revision-status"')[0], item)
    assert '<span class="badge approved">approved</span>' in html
    assert '<section id="revision-status" class="card" hx-swap-oob="true">' in html
    item.refresh_from_db()
    assert item.review_state == ReviewState.APPROVED and item.reviewed_by == maintainer


def test_the_last_approval_turns_the_revision_approved(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    client = logged_in(maintainer)
    items = list(draft_revision.ordered_items())
    for item in items[:-1]:
        client.post(item_url("item_approve", item), {"version": item.version}, headers=HX)
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
    html = client.post(item_url("item_approve", items[-1]), {"version": 1}, headers=HX).content.decode()
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.APPROVED
    status = html[html.index('<section id="revision-status"') :]
    assert '<span class="badge approved">approved</span>' in status
    assert "is approved" in status  # the message travels with the out-of-band status
    assert ">Admit<" in status


def test_an_item_that_would_not_validate_cannot_be_approved(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    RubricItem.objects.filter(pk=item.pk).update(evidence="  ")
    response = logged_in(maintainer).post(item_url("item_approve", item), headers=HX)
    assert "Fix the problems shown before approving this item." in response.content.decode()
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING


def test_approving_a_stale_version_is_refused(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    revisions.edit_item(item, 1, {"criterion": "Changed meanwhile."}, by=Actor.member(maintainer))
    response = logged_in(maintainer).post(item_url("item_approve", item), {"version": 1}, headers=HX)
    assert "read it again, then approve" in response.content.decode()
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING


def test_request_changes_keeps_the_note(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    response = logged_in(maintainer).post(
        item_url("item_request_changes", item), {"note": "Clamping is <arguably> right."}, headers=HX
    )
    html = response.content.decode()
    assert '<span class="badge changes_requested">changes requested</span>' in html
    assert "Clamping is &lt;arguably&gt; right." in html
    item.refresh_from_db()
    assert (
        item.review_state == ReviewState.CHANGES_REQUESTED
        and item.review_note == "Clamping is <arguably> right."
    )


def test_a_reviewer_comments_and_the_row_shows_it(reviewer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    response = logged_in(reviewer).post(
        item_url("item_comment", item), {"text": "The judge disagrees here."}, headers=HX
    )
    html = response.content.decode()
    assert "The judge disagrees here." in html and "<strong>reviewer</strong>" in html
    assert ItemComment.objects.filter(item=item, author=reviewer).count() == 1
    # the audit trail says who commented on what, and the revision page lists it
    event = AuditEvent.objects.get(verb=AuditVerb.COMMENTED)
    assert (event.actor, event.item, event.revision) == (reviewer, item, draft_revision)
    assert event.detail["note"] == "The judge disagrees here."
    page = logged_in(reviewer).get(
        reverse("rubrics:revision_detail", args=[draft_revision.task.repository_id, draft_revision.pk])
    )
    assert "commented on <code>B1</code>: The judge disagrees here." in page.content.decode()


def test_a_blank_comment_is_refused(reviewer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    html = (
        logged_in(reviewer).post(item_url("item_comment", item), {"text": "  "}, headers=HX).content.decode()
    )
    assert "errorlist" in html
    assert not ItemComment.objects.exists()


def test_comments_are_allowed_on_a_frozen_revision(reviewer: User, make_revision: MakeRevision) -> None:
    item = blocker(make_revision(RevisionStatus.ADMITTED))
    logged_in(reviewer).post(
        item_url("item_comment", item), {"text": "Disputed by the second judge."}, headers=HX
    )
    assert ItemComment.objects.filter(item=item).count() == 1
    assert AuditEvent.objects.filter(verb=AuditVerb.COMMENTED, item=item, actor=reviewer).count() == 1


@pytest.mark.parametrize("name", ["item_edit", "item_approve", "item_request_changes"])
def test_reviewers_and_viewers_may_not_change_items(
    reviewer: User, viewer: User, draft_revision: RubricRevision, name: str
) -> None:
    item = blocker(draft_revision)
    for user in (reviewer, viewer):
        response = logged_in(user).post(item_url(name, item), edit_data(item, criterion="no"), headers=HX)
        assert response.status_code == 403
    item.refresh_from_db()
    assert item.criterion != "no" and item.review_state == ReviewState.PENDING


def test_a_viewer_may_not_comment(viewer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    assert (
        logged_in(viewer).post(item_url("item_comment", item), {"text": "hi"}, headers=HX).status_code == 403
    )


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("item_row", "get"),
        ("item_edit", "get"),
        ("item_edit", "post"),
        ("item_approve", "post"),
        ("item_request_changes", "post"),
        ("item_comment", "post"),
    ],
)
def test_an_outsider_gets_404_for_every_row_endpoint(
    outsider: User, other_repository: Any, draft_revision: RubricRevision, name: str, method: str
) -> None:
    item = blocker(draft_revision)
    client = logged_in(outsider)  # a maintainer elsewhere, nothing here
    send = getattr(client, method)
    assert send(item_url(name, item), edit_data(item), headers=HX).status_code == 404
    assert send(item_url(name, item), edit_data(item)).status_code == 404


def test_htmx_posts_need_the_csrf_header(maintainer: User, draft_revision: RubricRevision) -> None:
    item = blocker(draft_revision)
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    page = client.get(
        reverse("rubrics:revision_detail", args=[draft_revision.task.repository_id, draft_revision.pk])
    )
    html = page.content.decode()
    token = html.split('hx-headers=\'{"X-CSRFToken": "')[1].split('"')[0]
    assert client.post(item_url("item_approve", item), {"version": 1}, headers=HX).status_code == 403
    with_token = {**HX, "X-CSRFToken": token}
    assert client.post(item_url("item_approve", item), {"version": 1}, headers=with_token).status_code == 200
    item.refresh_from_db()
    assert item.review_state == ReviewState.APPROVED


def test_an_id_taken_between_check_and_save_is_a_form_error(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubrics_app.forms.rubrics import ItemForm

    # The race: the form's uniqueness check passed, then someone else saved N1 first; the database refuses.
    monkeypatch.setattr(ItemForm, "clean_item_id", lambda self: self.cleaned_data["item_id"])
    item = blocker(draft_revision)
    response = logged_in(maintainer).post(
        item_url("item_edit", item), edit_data(item, item_id="N1"), headers=HX
    )
    assert response.status_code == 200
    assert "N1 was just taken by another item of this revision." in response.content.decode()
    item.refresh_from_db()
    assert item.item_id == "B1" and item.version == 1


# --- a revision approved while a maintainer acts on one of its items ----------------------------------------


def approved_between_check_and_write(monkeypatch: pytest.MonkeyPatch, revision: RubricRevision) -> None:
    """Another maintainer's approval of the last pending item lands after the service found a draft and
    before it writes: the database trigger then refuses the write (in the same transaction here, so the
    approval is rolled back with it; what matters is what the write meets)."""
    check = revisions._require_draft
    busy: list[bool] = []  # the approval below checks for a draft too: it must not approve again from inside

    def then_approved(checked: RubricRevision) -> None:
        check(checked)
        if busy:
            return
        busy.append(True)
        try:
            pending = RubricItem.objects.filter(revision=revision).exclude(review_state=ReviewState.APPROVED)
            for other in pending:
                revisions.approve_item(other, by=Actor.member(checked.drafted_by))
        finally:
            busy.clear()
        assert RubricRevision.objects.get(pk=revision.pk).status == RevisionStatus.APPROVED

    monkeypatch.setattr(revisions, "_require_draft", then_approved)


def test_request_changes_on_a_revision_approved_meanwhile_is_a_notice_not_a_500(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = blocker(draft_revision)
    approved_between_check_and_write(monkeypatch, draft_revision)
    client = logged_in(maintainer)
    url = item_url("item_request_changes", item)
    response = client.post(url, {"note": "clamping is fine"}, headers=HX)
    assert response.status_code == 200
    only_the_row(response.content.decode(), item)
    assert (
        "Revision 1 was approved meanwhile, so your request was not recorded. Reload the page"
        in response.content.decode()
    )
    plain = client.post(url, {"note": "clamping is fine"}, follow=True)
    assert plain.status_code == 200
    assert "was approved meanwhile, so your request was not recorded" in plain.content.decode()
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING and item.review_note == ""


def test_request_changes_from_a_page_loaded_before_the_approval_is_the_same_notice(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    item = blocker(draft_revision)
    for each in draft_revision.items.all():
        revisions.approve_item(each, by=Actor.member(maintainer))
    response = logged_in(maintainer).post(
        item_url("item_request_changes", item), {"note": "too late"}, headers=HX
    )
    assert response.status_code == 200
    assert "Revision 1 was approved meanwhile, so your request was not recorded." in response.content.decode()
    item.refresh_from_db()
    assert item.review_state == ReviewState.APPROVED


@pytest.mark.parametrize("htmx", [True, False])
def test_an_edit_of_a_revision_approved_meanwhile_keeps_the_text_and_says_so(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch, htmx: bool
) -> None:
    item = blocker(draft_revision)
    approved_between_check_and_write(monkeypatch, draft_revision)
    response = logged_in(maintainer).post(
        item_url("item_edit", item),
        edit_data(item, criterion="Raise, never clamp."),
        headers=HX if htmx else {},
    )
    assert response.status_code == (200 if htmx else 409)
    html = response.content.decode()
    assert "Revision 1 was approved meanwhile, so your edit was not saved. Reload the page" in html
    assert "was just taken" not in html
    assert "Raise, never clamp." in html  # still in the form
    item.refresh_from_db()
    assert item.criterion != "Raise, never clamp." and item.version == 1


def test_approving_an_item_of_a_revision_approved_meanwhile_is_a_notice(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = blocker(draft_revision)
    approved_between_check_and_write(monkeypatch, draft_revision)
    response = logged_in(maintainer).post(item_url("item_approve", item), {"version": 1}, headers=HX)
    assert response.status_code == 200
    assert "Revision 1 was approved meanwhile, so nothing was approved." in response.content.decode()


def test_a_failed_edit_of_an_approved_revision_leaves_no_draft_behind(
    maintainer: User, make_revision: MakeRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubrics_app.forms.rubrics import ItemForm

    approved = make_revision(RevisionStatus.APPROVED)
    # The form's uniqueness check is passed by (as in a race); the draft's unique constraint refuses N1.
    monkeypatch.setattr(ItemForm, "clean_item_id", lambda self: self.cleaned_data["item_id"])
    item = blocker(approved)
    response = logged_in(maintainer).post(item_url("item_edit", item), edit_data(item, item_id="N1"))
    assert response.status_code == 409
    assert "N1 was just taken by another item of this revision." in response.content.decode()
    assert not RubricRevision.objects.filter(parent=approved).exists()
