"""The revision page and its revision-level actions: edit intent, scope and hack report; approve; admit."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    ItemComment,
    ItemKind,
    Repository,
    ReviewState,
    RevisionStatus,
    RubricItem,
    RubricRevision,
)
from rubrics_app.services.rubrics import revisions
from rubrics_app.views.common import validation_report
from tests.app.client_helpers import HX, logged_in
from tests.app.conftest import MakeRevision, calibrate


def url(name: str, revision: RubricRevision, **query: Any) -> str:
    out = reverse(f"rubrics:{name}", args=[revision.task.repository_id, revision.pk])
    return out + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_it_shows_every_part_of_the_rubric(viewer: User, draft_revision: RubricRevision) -> None:
    response = logged_in(viewer).get(url("revision_detail", draft_revision))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Reject a fraction above 1 with a clear error on every backend" in html  # intent
    assert "<code>src/**</code>" in html and "<code>.ci/**</code>" in html  # scope globs
    assert "200" in html and "Max files" in html  # limits
    for item_id in ("B1", "B2", "N1", "N2", "N3"):
        assert f'<span class="item-id">{item_id}</span>' in html
    # evidence: a link for the URL, path:line as code
    assert '<a href="https://github.com/example/project/pull/12#discussion_r1"' in html
    assert '<code class="ref">src/fraction.py:2</code>' in html
    assert "needs tree" in html  # B2's flag
    assert "Clamp the fraction to 1" in html  # hack report
    assert "calib/lazy.diff" in html and "calib/alt.diff" in html
    assert html.count('<span class="badge pending">pending</span>') == 5


def test_it_marks_a_draft_provisional_and_an_admitted_one_not(
    viewer: User, draft_revision: RubricRevision, make_revision: MakeRevision
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    client = logged_in(viewer)
    assert 'class="badge provisional"' in client.get(url("revision_detail", draft_revision)).content.decode()
    html = client.get(url("revision_detail", admitted)).content.decode()
    assert 'class="badge provisional"' not in html
    assert '<span class="badge admitted">admitted</span>' in html


def test_a_viewer_sees_no_edit_or_review_buttons(viewer: User, draft_revision: RubricRevision) -> None:
    html = logged_in(viewer).get(url("revision_detail", draft_revision)).content.decode()
    assert "Request changes" not in html
    assert ">Approve<" not in html
    assert 'name="text"' not in html  # no comment box


def test_a_reviewer_may_comment_but_not_approve(reviewer: User, draft_revision: RubricRevision) -> None:
    html = logged_in(reviewer).get(url("revision_detail", draft_revision)).content.decode()
    assert 'name="text"' in html
    assert ">Approve<" not in html


def test_it_shows_validation_errors_beside_their_field_in_plain_words(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    RubricRevision.objects.filter(pk=draft_revision.pk).update(intent="  ", max_files=0)
    b1 = draft_revision.items.get(item_id="B1")
    RubricItem.objects.filter(pk=b1.pk).update(evidence=" ")
    html = logged_in(maintainer).get(url("revision_detail", draft_revision)).content.decode()
    assert "keep this revision from being approved" in html
    assert "the intent is empty" in html
    assert "Use a number above 0." in html  # not pydantic's "Input should be greater than 0"
    assert "Input should be" not in html
    # B1's evidence error sits inside B1's row, and its Approve button is disabled
    row = html[html.index(f'id="item-{b1.pk}"') :]
    row = row[: row.index("</article>")]
    assert "Cite the evidence" in row
    assert 'disabled title="Fix the problems shown first"' in row


def test_it_counts_blockers_in_the_maintainers_words(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    RubricItem.objects.filter(revision=draft_revision, item_id="B2").delete()
    html = logged_in(maintainer).get(url("revision_detail", draft_revision)).content.decode()
    summary = html[html.index('id="validation-summary"') : html.index("</section>")]
    assert "A task has 2–5 blockers; this revision has 1." in summary
    assert "List should have" not in html
    assert "found 1" not in html  # not the command line's wording either


def test_a_count_error_and_a_type_error_land_on_their_fields(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    n1 = draft_revision.items.get(item_id="N1")
    RubricItem.objects.filter(pk=n1.pk).update(item_id="-N1")
    RubricItem.objects.filter(revision=draft_revision, item_id="B2").delete()
    RubricRevision.objects.filter(pk=draft_revision.pk).update(max_files=0)
    report = validation_report(RubricRevision.objects.get(pk=draft_revision.pk))
    assert report.general == ["A task has 2–5 blockers; this revision has 1."]
    assert report.by_field == {"max_files": ["Use a number above 0."]}
    assert report.by_item == {
        n1.pk: {"item_id": ["Use letters, digits, '.', '_' or '-', starting with a letter or digit."]}
    }
    html = logged_in(maintainer).get(url("revision_detail", draft_revision)).content.decode()
    row = html[html.index(f'id="item-{n1.pk}"') :]
    row = row[: row.index("</article>")]
    assert "starting with a letter or digit" in row
    assert "String should match" not in html


def test_the_page_needs_a_fixed_number_of_queries(
    maintainer: User,
    reviewer: User,
    draft_revision: RubricRevision,
    make_revision: MakeRevision,
    django_assert_num_queries: Any,
) -> None:
    client = logged_in(maintainer)
    page = url("revision_detail", draft_revision)
    client.get(page)  # warm the session and content types
    with CaptureQueriesContext(connection) as few:
        assert client.get(page).status_code == 200
    # 5 items and 1 revision -> 12 items (with comments and reviews) and 4 revisions
    for n in range(7):
        item = revisions.add_item(
            draft_revision,
            ItemKind.NON_BLOCKER,
            {"item_id": f"X{n}", "criterion": f"extra {n}"},
            by=Actor.member(maintainer),
        )
        ItemComment.objects.create(item=item, author=reviewer, text=f"comment {n}")
        ItemComment.objects.create(item=item, author=maintainer, text=f"reply {n}")
    for item in draft_revision.items.all()[:4]:
        revisions.approve_item(item, by=Actor.member(maintainer))
    for _ in range(3):
        make_revision()
    assert draft_revision.items.count() == 12
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(page)
    assert response.content.decode().count('class="item state-') == 12


def test_outsider_gets_404_and_anonymous_goes_to_login(
    outsider: User, draft_revision: RubricRevision
) -> None:
    page = url("revision_detail", draft_revision)
    assert logged_in(outsider).get(page).status_code == 404
    assert logged_in(outsider).get(page, headers=HX).status_code == 404
    anonymous = Client().get(page)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))


def test_a_revision_of_another_repository_is_not_found_through_this_one(
    maintainer: User, draft_revision: RubricRevision, repository: Repository, other_repository: Repository
) -> None:
    wrong = reverse("rubrics:revision_detail", args=[other_repository.pk, draft_revision.pk])
    assert logged_in(maintainer).get(wrong).status_code == 404


# --- intent, scope and hack report ------------------------------------------------------------------


def form_data(revision: RubricRevision, **changes: Any) -> dict[str, Any]:
    data = {
        "version": revision.version,
        "intent": revision.intent,
        "allowed_globs": "\n".join(revision.allowed_globs),
        "denied_globs": "\n".join(revision.denied_globs),
        "max_changed_lines": revision.max_changed_lines or "",
        "max_files": revision.max_files or "",
        "lazy_solution": revision.lazy_solution,
        "alt_valid_solution": revision.alt_valid_solution,
    }
    data.update(changes)
    return data


def test_the_edit_form_is_a_partial_under_htmx(maintainer: User, draft_revision: RubricRevision) -> None:
    response = logged_in(maintainer).get(url("revision_edit", draft_revision), headers=HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.strip().startswith('<section id="revision-fields"')
    assert 'name="allowed_globs"' in html
    # without htmx the same URL is the whole page with the form in place
    full = logged_in(maintainer).get(url("revision_edit", draft_revision)).content.decode()
    assert "<html" in full and 'name="allowed_globs"' in full


def test_it_saves_intent_and_scope_and_returns_the_fields(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    data = form_data(draft_revision, intent="A sharper intent.", allowed_globs="src/**\nlib/*.py")
    response = logged_in(maintainer).post(url("revision_edit", draft_revision), data, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and "A sharper intent." in html and "<code>lib/*.py</code>" in html
    draft_revision.refresh_from_db()
    assert draft_revision.intent == "A sharper intent."
    assert draft_revision.allowed_globs == ["src/**", "lib/*.py"]
    assert draft_revision.version == 2


def test_a_plain_post_redirects_back_to_the_page(maintainer: User, draft_revision: RubricRevision) -> None:
    response = logged_in(maintainer).post(
        url("revision_edit", draft_revision), form_data(draft_revision, intent="X")
    )
    assert response.status_code == 302
    assert response["Location"].startswith(url("revision_detail", draft_revision))


def test_bad_scope_input_is_shown_beside_the_field(maintainer: User, draft_revision: RubricRevision) -> None:
    data = form_data(draft_revision, allowed_globs="src/[a", max_files="0", intent=" ")
    response = logged_in(maintainer).post(url("revision_edit", draft_revision), data, headers=HX)
    html = response.content.decode()
    assert "unclosed bracket" in html
    assert "give a number of at least 1" in html
    assert "the intent cannot be blank" in html
    draft_revision.refresh_from_db()
    assert draft_revision.version == 1 and draft_revision.allowed_globs == ["src/**", "docs/**"]


def test_a_second_save_from_a_stale_form_shows_the_other_text(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    first = form_data(draft_revision, intent="First maintainer's intent.")
    second = form_data(draft_revision, intent="Second maintainer's intent.")
    client = logged_in(maintainer)
    client.post(url("revision_edit", draft_revision), first, headers=HX)
    response = client.post(url("revision_edit", draft_revision), second, headers=HX)
    html = response.content.decode()
    assert "since you opened them" in html
    assert "First maintainer&#x27;s intent." in html  # theirs, shown
    assert "Second maintainer&#x27;s intent." in html  # mine, still in the form
    draft_revision.refresh_from_db()
    assert draft_revision.intent == "First maintainer's intent."
    # the form now carries their version: saving again is a deliberate overwrite
    assert 'name="version" value="2"' in html
    client.post(url("revision_edit", draft_revision), {**second, "version": 2}, headers=HX)
    draft_revision.refresh_from_db()
    assert draft_revision.intent == "Second maintainer's intent."


def test_editing_an_admitted_revision_makes_a_new_draft(
    maintainer: User, make_revision: MakeRevision
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    response = logged_in(maintainer).post(
        url("revision_edit", admitted), form_data(admitted, intent="Changed after admission."), headers=HX
    )
    draft = RubricRevision.objects.get(parent=admitted)
    assert response.status_code == 200
    assert response["HX-Redirect"] == url("revision_detail", draft)
    assert draft.status == RevisionStatus.DRAFT and draft.intent == "Changed after admission."
    admitted.refresh_from_db()
    assert admitted.status == RevisionStatus.ADMITTED and admitted.intent != "Changed after admission."
    # No item's text changed, so their approvals carry over; the new intent waits for "Approve revision".
    assert {i.review_state for i in draft.items.all()} == {ReviewState.APPROVED}
    assert ">Approve revision<" in logged_in(maintainer).get(url("revision_detail", draft)).content.decode()


def test_reviewer_and_viewer_may_not_edit(
    reviewer: User, viewer: User, draft_revision: RubricRevision
) -> None:
    for user in (reviewer, viewer):
        data = form_data(draft_revision, intent="no")
        assert logged_in(user).post(url("revision_edit", draft_revision), data, headers=HX).status_code == 403
        assert logged_in(user).get(url("revision_edit", draft_revision)).status_code == 403
    draft_revision.refresh_from_db()
    assert draft_revision.intent != "no"


# --- approve, admit, new draft ---------------------------------------------------------------------------


def test_admit_is_for_maintainers_and_only_from_approved(
    maintainer: User, reviewer: User, make_revision: MakeRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    assert logged_in(reviewer).post(url("revision_admit", approved)).status_code == 403
    calibrate(approved, maintainer)  # a passing calibration of this content: "Admit" admits at once
    response = logged_in(maintainer).post(url("revision_admit", approved))
    assert response.status_code == 302
    approved.refresh_from_db()
    assert approved.status == RevisionStatus.ADMITTED
    assert AuditEvent.objects.filter(revision=approved, verb=AuditVerb.ADMITTED, actor=maintainer).exists()


def test_admitting_a_draft_is_refused_with_a_message(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    response = logged_in(maintainer).post(url("revision_admit", draft_revision), follow=True)
    assert "only an approved revision can be admitted" in response.content.decode()
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT


def test_the_page_offers_admit_only_on_an_approved_revision(
    maintainer: User, make_revision: MakeRevision, draft_revision: RubricRevision
) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    client = logged_in(maintainer)
    assert ">Admit<" in client.get(url("revision_detail", approved)).content.decode()
    assert ">Admit<" not in client.get(url("revision_detail", draft_revision)).content.decode()


def test_approve_revision_after_fixing_a_revision_level_problem(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    RubricRevision.objects.filter(pk=draft_revision.pk).update(intent=" ")
    for item in draft_revision.ordered_items():
        outcome = revisions.approve_item(item, by=Actor.member(maintainer))
    assert outcome.errors and not outcome.revision_approved
    client = logged_in(maintainer)
    client.post(url("revision_approve", draft_revision))
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT  # would not validate: not approved
    draft_revision.refresh_from_db()
    client.post(url("revision_edit", draft_revision), form_data(draft_revision, intent="Fixed."))
    assert ">Approve revision<" in client.get(url("revision_detail", draft_revision)).content.decode()
    client.post(url("revision_approve", draft_revision))
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.APPROVED


def test_new_draft_from_an_approved_revision(maintainer: User, make_revision: MakeRevision) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    response = logged_in(maintainer).post(url("revision_new_draft", approved), headers=HX)
    draft = RubricRevision.objects.get(parent=approved)
    assert response["HX-Redirect"] == url("revision_detail", draft)
    assert sorted(draft.items.values_list("item_id", flat=True)) == ["B1", "B2", "N1", "N2", "N3"]


@pytest.mark.parametrize("name", ["revision_approve", "revision_admit", "revision_new_draft"])
def test_state_changes_refuse_get(maintainer: User, draft_revision: RubricRevision, name: str) -> None:
    assert logged_in(maintainer).get(url(name, draft_revision)).status_code == 405


# --- history and comparison ------------------------------------------------------------------------------


def test_compare_shows_two_revisions_item_by_item(
    viewer: User, maintainer: User, make_revision: MakeRevision
) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    b1 = new.items.get(item_id="B1")
    revisions.edit_item(
        b1,
        b1.version,
        {"criterion": "A fraction above 1 raises, on CPU and GPU."},
        by=Actor.member(maintainer),
    )
    n3 = new.items.get(item_id="N3")
    revisions.remove_item(n3, by=Actor.member(maintainer))
    client = logged_in(viewer)
    response = client.get(url("revision_compare", new, other=old.pk))
    html = response.content.decode()
    assert response.status_code == 200
    words = re.sub(r"</?(ins|del)>", "", html)  # the changed words are marked (word_marks)
    assert "A fraction above 1 raises ValueError; it is not silently clamped." in words  # old text
    assert "A fraction above 1 raises, on CPU and GPU." in words  # new text
    assert 'class="badge changes_requested">removed<' in html  # N3 is only in the old one
    assert html.count('<span class="muted">unchanged</span>') == 3  # B2, N1, N2
    partial = client.get(url("revision_compare", new, other=old.pk), headers=HX).content.decode()
    assert "<html" not in partial and partial.strip().startswith('<section id="comparison">')


def test_compare_defaults_to_the_parent_and_lists_history(
    viewer: User, maintainer: User, make_revision: MakeRevision
) -> None:
    old = make_revision(RevisionStatus.APPROVED)
    new = revisions.new_draft_from(old, by=Actor.member(maintainer))
    html = logged_in(viewer).get(url("revision_compare", new)).content.decode()
    assert f'<option value="{old.pk}" selected>' in html
    page = logged_in(viewer).get(url("revision_detail", new)).content.decode()
    assert f"?other={old.pk}" in page  # history row links to the comparison


def test_compare_with_an_unknown_revision_is_not_found(
    viewer: User, draft_revision: RubricRevision, other_repository: Repository, outsider: User
) -> None:
    page = url("revision_compare", draft_revision, other=999999)
    assert logged_in(viewer).get(page).status_code == 404


def test_the_calibration_diff_is_highlighted_and_escaped(viewer: User, make_revision: MakeRevision) -> None:
    hostile = b"--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a = 1\n+a = '<script>alert(1)</script>'\n"
    revision = make_revision(files={"calib/lazy.diff": hostile, "calib/alt.diff": b""})
    diff = revision.calibration_diffs.get(path="calib/lazy.diff")
    page = reverse("rubrics:calibration_diff", args=[revision.task.repository_id, revision.pk, diff.pk])
    html = logged_in(viewer).get(page).content.decode()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<tr class="diff-add"' in html
    partial = logged_in(viewer).get(page, headers=HX).content.decode()
    assert partial.strip().startswith('<section id="diff-view">')


def test_cancel_returns_the_fields_partial(maintainer: User, draft_revision: RubricRevision) -> None:
    html = logged_in(maintainer).get(url("revision_fields", draft_revision), headers=HX).content.decode()
    assert html.strip().startswith('<section id="revision-fields"')
    assert "<code>src/**</code>" in html and 'name="intent"' not in html


def test_provenance_names_the_drafting_model(viewer: User, draft_revision: RubricRevision) -> None:
    RubricRevision.objects.filter(pk=draft_revision.pk).update(
        origin="model", drafted_by=None, drafted_by_model="claude-opus-5-5-20260101", input_hash="ab" * 32
    )
    html = logged_in(viewer).get(url("revision_detail", draft_revision)).content.decode()
    assert "Drafted by <code>claude-opus-5-5-20260101</code> from input" in html
    assert f'title="{"ab" * 32}"' in html


def test_the_page_shows_who_did_what(maintainer: User, viewer: User, draft_revision: RubricRevision) -> None:
    item = draft_revision.items.get(item_id="B2")
    revisions.request_changes(item, by=Actor.member(maintainer), note="Is <GPU> really in scope?")
    html = logged_in(viewer).get(url("revision_detail", draft_revision)).content.decode()
    activity = html[html.index("<h2>Activity</h2>") : html.index("<h2>History</h2>")]
    assert "requested changes on <code>B2</code>: Is &lt;GPU&gt; really in scope?" in activity
    assert "drafted this revision" in activity and "<td>maintainer</td>" in activity


def test_the_audit_trail_records_the_text_before_an_edit(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    old_intent = draft_revision.intent
    data = form_data(draft_revision, intent="A sharper intent.")
    logged_in(maintainer).post(url("revision_edit", draft_revision), data, headers=HX)
    event = AuditEvent.objects.get(revision=draft_revision, verb=AuditVerb.EDITED)
    assert event.actor == maintainer
    assert event.detail["before"]["intent"] == old_intent
    assert event.detail["after"]["intent"] == "A sharper intent."


def test_an_edit_of_an_admitted_revision_is_audited_on_the_draft_against_the_admitted_text(
    maintainer: User, make_revision: MakeRevision
) -> None:
    admitted = make_revision(RevisionStatus.ADMITTED)
    data = form_data(admitted, intent="Changed after admission.")
    logged_in(maintainer).post(url("revision_edit", admitted), data, headers=HX)
    draft = RubricRevision.objects.get(parent=admitted)
    event = AuditEvent.objects.get(revision=draft, verb=AuditVerb.EDITED)
    assert event.detail["before"]["intent"] == admitted.intent
    assert event.detail["after"]["intent"] == "Changed after admission."


def test_approve_revision_checks_the_stored_reviews_not_the_loaded_ones(
    maintainer: User, draft_revision: RubricRevision, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rubrics_app.views.common import load_revision as load

    for item in draft_revision.items.all():
        RubricItem.objects.filter(pk=item.pk).update(review_state=ReviewState.APPROVED)

    def loaded_then_changes_requested(repository: Any, pk: int) -> RubricRevision:
        revision = load(repository, pk)
        # Another maintainer requests changes on B1 after this request loaded the revision.
        RubricItem.objects.filter(revision_id=pk, item_id="B1").update(
            review_state=ReviewState.CHANGES_REQUESTED
        )
        return revision

    monkeypatch.setattr("rubrics_app.views.revisions.load_revision", loaded_then_changes_requested)
    response = logged_in(maintainer).post(url("revision_approve", draft_revision), follow=True)
    assert "every blocker and non-blocker must be approved first" in response.content.decode()
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
