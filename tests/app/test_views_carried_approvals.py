"""A new draft made from an approved revision keeps the approval of every item whose text did not change,
recorded as carried over; changed and new items need review (issue 8 §6)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    Membership,
    ReviewState,
    RevisionStatus,
    Role,
    RubricItem,
    RubricRevision,
)
from rubrics_app.services.rubrics import revisions
from tests.app.client_helpers import HX, logged_in
from tests.app.conftest import MakeRevision


def states(revision: RubricRevision) -> dict[str, str]:
    return dict(RubricItem.objects.filter(revision=revision).values_list("item_id", "review_state"))


def page(revision: RubricRevision, user: User) -> str:
    url = reverse("rubrics:revision_detail", args=[revision.task.repository_id, revision.pk])
    return logged_in(user).get(url).content.decode()


def test_one_edit_leaves_the_other_approvals_in_place(
    maintainer: User, reviewer: User, make_revision: MakeRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    b1 = RubricItem.objects.get(revision=approved, item_id="B1")
    first_review = {i.item_id: i.reviewed_at for i in approved.items.all()}
    data = {"version": b1.version, "item_id": "B1", "criterion": "Sharper.", "evidence": b1.evidence}
    edit = reverse("rubrics:item_edit", args=[approved.task.repository_id, b1.pk])
    # Another maintainer makes the draft: the approvals stay the first maintainer's.
    co_maintainer = User.objects.create_user("co-maintainer")
    Membership.objects.create(repository=approved.task.repository, user=co_maintainer, role=Role.MAINTAINER)
    response = logged_in(co_maintainer).post(edit, data, headers=HX)
    draft = RubricRevision.objects.get(parent=approved)
    assert response["HX-Redirect"].startswith(
        reverse("rubrics:revision_detail", args=[approved.task.repository_id, draft.pk])
    )

    assert states(draft) == {
        "B1": ReviewState.PENDING,  # its text changed
        "B2": ReviewState.APPROVED,
        "N1": ReviewState.APPROVED,
        "N2": ReviewState.APPROVED,
        "N3": ReviewState.APPROVED,
    }
    b2 = RubricItem.objects.get(revision=draft, item_id="B2")
    assert b2.reviewed_by == maintainer and b2.reviewed_at == first_review["B2"]

    carried = AuditEvent.objects.filter(revision=draft, verb=AuditVerb.ITEM_APPROVED)
    assert sorted(e.item_label for e in carried) == ["B2", "N1", "N2", "N3"]
    assert {e.detail["carried_over_from"] for e in carried} == {approved.number}
    assert {e.actor for e in carried} == {co_maintainer}
    html = page(draft, reviewer)
    assert "carried over the approval of <code>B2</code> from r1 (approved by maintainer)" in html
    assert "carried over the approval of <code>B1</code>" not in html
    assert "edited <code>B1</code>" in html
    assert "<strong>4 of 5 items approved</strong>" in html

    # Reviewing the one changed item is all the draft needs.
    approve = reverse(
        "rubrics:item_approve",
        args=[approved.task.repository_id, RubricItem.objects.get(revision=draft, item_id="B1").pk],
    )
    logged_in(maintainer).post(approve, {"version": 2}, headers=HX)
    draft.refresh_from_db()
    assert draft.status == RevisionStatus.APPROVED


def test_a_removal_carries_the_rest_and_an_added_item_needs_review(
    maintainer: User, make_revision: MakeRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    n3 = RubricItem.objects.get(revision=approved, item_id="N3")
    logged_in(maintainer).post(reverse("rubrics:item_remove", args=[approved.task.repository_id, n3.pk]))
    draft = RubricRevision.objects.get(parent=approved)
    assert states(draft) == dict.fromkeys(["B1", "B2", "N1", "N2"], ReviewState.APPROVED)
    # The removed item's approval was never carried into the draft.
    carried = AuditEvent.objects.filter(revision=draft, verb=AuditVerb.ITEM_APPROVED)
    assert "N3" not in {e.item_label for e in carried}

    add = reverse("rubrics:item_add", args=[approved.task.repository_id, draft.pk, "non_blocker"])
    logged_in(maintainer).post(
        add, {"seen_status": "draft", "item_id": "N4", "criterion": "New.", "weight": "1"}
    )
    assert states(draft)["N4"] == ReviewState.PENDING


def test_only_approvals_are_carried(maintainer: User, draft_revision: RubricRevision) -> None:
    b1, b2 = (RubricItem.objects.get(revision=draft_revision, item_id=i) for i in ("B1", "B2"))
    revisions.approve_item(b1, by=Actor.member(maintainer))
    revisions.request_changes(b2, by=Actor.member(maintainer), note="Vague.")
    copy = revisions.new_draft_from(draft_revision, by=Actor.member(maintainer))
    assert states(copy)["B1"] == ReviewState.APPROVED
    assert states(copy)["B2"] == ReviewState.PENDING
    assert RubricItem.objects.get(revision=copy, item_id="B2").review_note == ""
