from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db import DataError, IntegrityError, connection, transaction
from django.test import RequestFactory

from grading import MAX_RUN_INT
from grading.loaders import parse_rubric
from rubrics_app.access import Actor, access_of, repositories_for_user
from rubrics_app.models import (
    AgentRun,
    AuditEvent,
    AuditVerb,
    ItemKind,
    Repository,
    ReviewState,
    RevisionFrozen,
    RevisionStatus,
    Role,
    RubricInvalid,
    RubricItem,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services.rubrics import revisions
from tests.app.conftest import RUBRIC, MakeRevision, calibrate, rubric_data


def test_it_builds_the_rubric_dict_the_rubric_came_from(draft_revision: RubricRevision) -> None:
    assert draft_revision.to_rubric_dict() == RUBRIC
    assert draft_revision.validation_errors() == []
    # and it is what grading.schema accepts
    assert parse_rubric(draft_revision.to_rubric_dict()).item_ids() == ["B1", "B2", "N1", "N2", "N3"]


def test_it_keeps_absent_optional_keys_absent(make_revision: MakeRevision) -> None:
    data: dict[str, Any] = rubric_data(
        scope={"allowed_globs": ["src/**"]},
        calibration={"lazy": ["calib/lazy.diff"]},
    )
    data["blockers"][0] = {"id": "B1", "criterion": "c", "evidence": "src/a.py:1", "rationale": ""}
    data["non_blockers"][0] = {"id": "N1", "criterion": "c", "weight": 1.5}
    revision = make_revision(data=data, files={"calib/lazy.diff": b"x"})
    out = revision.to_rubric_dict()
    assert out == data
    assert json.dumps(out, sort_keys=True) == json.dumps(data, sort_keys=True)


def test_it_maps_validation_errors_to_fields(draft_revision: RubricRevision) -> None:
    b2 = draft_revision.items.get(item_id="B2")
    RubricItem.objects.filter(pk=b2.pk).update(evidence="   ")
    RubricRevision.objects.filter(pk=draft_revision.pk).update(allowed_globs=["src/[a"])
    draft_revision.refresh_from_db()
    errors = draft_revision.validation_errors()
    by_path = {e.path: e for e in errors}
    assert by_path["blockers[1].evidence"].item_pk == b2.pk
    assert by_path["blockers[1].evidence"].field == "evidence"
    assert by_path["blockers[1].evidence"].message == "must not be blank"
    globs = [e for e in errors if e.path.startswith("scope.allowed_globs")]
    assert globs and globs[0].field == "allowed_globs" and globs[0].item_pk is None


def test_it_refuses_to_approve_an_invalid_revision(draft_revision: RubricRevision, maintainer: Any) -> None:
    # Only two blockers: deleting one leaves too few for §2.
    draft_revision.items.get(item_id="B2").delete()
    for item in draft_revision.ordered_items():
        outcome = revisions.approve_item(item, by=Actor.member(maintainer))
    assert not outcome.revision_approved
    assert [e.path for e in outcome.errors] == ["blockers"]
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
    with pytest.raises(RubricInvalid) as exc:
        draft_revision.approve(by=maintainer)
    assert exc.value.for_revision()[0].field == "blockers"


def test_it_turns_approved_only_when_every_item_is(draft_revision: RubricRevision, maintainer: Any) -> None:
    items = draft_revision.ordered_items()
    for item in items[:-1]:
        assert not revisions.approve_item(item, by=Actor.member(maintainer)).revision_approved
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.DRAFT
    with pytest.raises(TransitionError):
        draft_revision.approve(by=maintainer)
    outcome = revisions.approve_item(items[-1], by=Actor.member(maintainer))
    assert outcome.revision_approved and outcome.errors == []
    draft_revision.refresh_from_db()
    assert draft_revision.status == RevisionStatus.APPROVED
    assert draft_revision.approved_by == maintainer


def test_only_a_maintainer_approves_items(draft_revision: RubricRevision, reviewer: Any, viewer: Any) -> None:
    from django.core.exceptions import PermissionDenied

    item = draft_revision.ordered_items()[0]
    for user in (reviewer, viewer):
        with pytest.raises(PermissionDenied):
            revisions.approve_item(item, by=Actor.member(user))
    item.refresh_from_db()
    assert item.review_state == ReviewState.PENDING


def test_one_admitted_revision_per_task_is_kept_by_the_database(
    make_revision: MakeRevision, maintainer: Any
) -> None:
    first = make_revision(RevisionStatus.ADMITTED)
    second = make_revision(RevisionStatus.APPROVED)
    calibrate(second, maintainer)
    # A raw admission retires the admitted one, in the same statement (rubrics_app.freeze).
    RubricRevision.objects.filter(pk=second.pk).update(status=RevisionStatus.ADMITTED)
    assert set(RubricRevision.objects.filter(task=first.task, status=RevisionStatus.ADMITTED)) == {second}
    first.refresh_from_db()
    assert first.status == RevisionStatus.RETIRED


def test_admitting_retires_the_previous_admitted_revision(
    make_revision: MakeRevision, maintainer: Any
) -> None:
    first = make_revision(RevisionStatus.ADMITTED)
    second = make_revision(RevisionStatus.APPROVED)
    calibrate(second, maintainer)
    retired = revisions.admit(second, by=Actor.member(maintainer))
    assert retired is not None and retired.pk == first.pk
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (RevisionStatus.RETIRED, RevisionStatus.ADMITTED)
    assert first.is_frozen
    assert second.task.admitted_revision() == second


def test_a_draft_cannot_be_admitted(draft_revision: RubricRevision, maintainer: Any) -> None:
    with pytest.raises(TransitionError):
        revisions.admit(draft_revision, by=Actor.member(maintainer))


def test_roles_and_visibility(
    repository: Repository, maintainer: Any, viewer: Any, outsider: Any, other_repository: Repository
) -> None:
    # The one policy (rubrics_app/access.py): the role a command or service sees, the list a page shows.
    assert access_of(maintainer, repository).role == Role.MAINTAINER
    assert access_of(viewer, repository).role == Role.VIEWER
    assert access_of(outsider, repository).role is None

    def visible_to(user: Any) -> list[Repository]:
        request = RequestFactory().get("/")
        request.user = user
        return [access.repository for access in repositories_for_user(request)]

    assert visible_to(outsider) == [other_repository]
    assert visible_to(viewer) == [repository]
    assert visible_to(AnonymousUser()) == []


def test_revision_numbers_count_per_task(make_revision: MakeRevision, repository: Repository) -> None:
    other = Task.objects.create(repository=repository, task_id="other")
    assert [make_revision().number for _ in range(2)] == [1, 2]
    assert make_revision(task=other, data=rubric_data(task="other")).number == 1


def test_items_keep_their_kind_and_order(draft_revision: RubricRevision) -> None:
    assert [i.item_id for i in draft_revision.blockers()] == ["B1", "B2"]
    assert {i.kind for i in draft_revision.non_blockers()} == {ItemKind.NON_BLOCKER}


def test_the_admin_shows_revisions_read_only(client: Any, admitted_revision: RubricRevision) -> None:
    admin_user = User.objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(admin_user)
    url = f"/admin/rubrics_app/rubricrevision/{admitted_revision.pk}/change/"
    response = client.get(url)
    assert response.status_code == 200
    assert "B2" in response.content.decode()
    assert client.post(url, {"intent": "changed"}).status_code == 403
    assert client.get("/admin/rubrics_app/rubricrevision/add/").status_code == 403


# --- optimistic locking and the audit trail -------------------------------------------------------------


def test_a_stale_edit_gets_a_conflict_with_the_other_text(
    draft_revision: RubricRevision, maintainer: Any
) -> None:
    from rubrics_app.services.rubrics.revisions import Conflict

    mine = draft_revision.items.get(item_id="B1")
    theirs = RubricItem.objects.get(
        pk=mine.pk
    )  # a second maintainer's browser tab, loaded at the same version
    revisions.approve_item(mine, by=Actor.member(maintainer))
    revisions.edit_item(theirs, theirs.version, {"criterion": "their wording"}, by=Actor.member(maintainer))
    with pytest.raises(Conflict) as exc:
        revisions.edit_item(mine, mine.version, {"criterion": "my wording"}, by=Actor.member(maintainer))
    assert exc.value.current["criterion"] == "their wording"
    assert exc.value.version == mine.version + 1
    assert exc.value.who == "maintainer"
    stored = RubricItem.objects.get(pk=mine.pk)
    assert stored.criterion == "their wording"
    # Their edit put the item back to pending: an approval is of a text, not of a row.
    assert stored.review_state == ReviewState.PENDING and stored.reviewed_by is None
    # Saving again against the version the conflict showed works.
    revisions.edit_item(
        stored, exc.value.version, {"criterion": "merged wording"}, by=Actor.member(maintainer)
    )
    assert RubricItem.objects.get(pk=mine.pk).criterion == "merged wording"


def test_a_stale_revision_edit_gets_a_conflict(draft_revision: RubricRevision, maintainer: Any) -> None:
    from rubrics_app.services.rubrics.revisions import Conflict

    other = RubricRevision.objects.get(pk=draft_revision.pk)
    revisions.edit_revision(
        other, other.version, {"intent": "theirs", "max_files": 3}, by=Actor.member(maintainer)
    )
    with pytest.raises(Conflict) as exc:
        revisions.edit_revision(
            draft_revision, draft_revision.version, {"intent": "mine"}, by=Actor.member(maintainer)
        )
    assert exc.value.current["intent"] == "theirs"
    assert RubricRevision.objects.get(pk=draft_revision.pk).intent == "theirs"


def test_edits_check_the_fields_and_the_role(
    draft_revision: RubricRevision, maintainer: Any, reviewer: Any
) -> None:
    from django.core.exceptions import PermissionDenied

    item = draft_revision.items.get(item_id="B1")
    with pytest.raises(ValueError, match="not editable: review_state"):
        revisions.edit_item(item, item.version, {"review_state": "approved"}, by=Actor.member(maintainer))
    with pytest.raises(PermissionDenied):
        revisions.edit_item(item, item.version, {"criterion": "x"}, by=Actor.member(reviewer))
    assert RubricItem.objects.get(pk=item.pk).text() == item.text()


def test_the_audit_trail_records_who_did_what(
    make_revision: MakeRevision, maintainer: Any, tmp_path: Any
) -> None:
    from rubrics_app.models import AuditEvent, AuditVerb
    from rubrics_app.services.rubrics import exports

    revision = make_revision()
    b1 = revision.items.get(item_id="B1")
    revisions.edit_item(b1, b1.version, {"criterion": "sharper"}, by=Actor.member(maintainer))
    for item in revision.ordered_items():
        revisions.approve_item(item, by=Actor.member(maintainer))
    revision.refresh_from_db()
    calibrate(revision, maintainer)
    revisions.admit(revision, by=Actor.member(maintainer))
    revision.refresh_from_db()
    exports.export_rubric_json(revision, by=Actor.member(maintainer))
    events = list(AuditEvent.objects.filter(revision=revision).order_by("at", "pk"))
    verbs = [e.verb for e in events]
    assert verbs == [
        AuditVerb.DRAFTED,
        AuditVerb.EDITED,
        *[AuditVerb.ITEM_APPROVED] * 5,
        AuditVerb.APPROVED,
        AuditVerb.CALIBRATED,
        AuditVerb.ADMITTED,
        AuditVerb.EXPORTED,
    ]
    assert {e.actor for e in events} == {maintainer}
    edited = events[1]
    assert edited.item == b1
    assert edited.detail["after"] == {"criterion": "sharper"}
    assert edited.detail["before"]["criterion"] == RUBRIC["blockers"][0]["criterion"]
    assert str(events[-2]) == f"maintainer admitted {revision}"


def test_request_changes_keeps_the_note(draft_revision: RubricRevision, maintainer: Any) -> None:
    item = draft_revision.items.get(item_id="N1")
    revisions.request_changes(item, by=Actor.member(maintainer), note="Name the parameter in the message.")
    item.refresh_from_db()
    assert item.review_state == ReviewState.CHANGES_REQUESTED
    assert item.review_note == "Name the parameter in the message."
    assert item.reviewed_by == maintainer


def test_an_edit_audits_the_stored_text_as_before_whatever_the_instance_holds(
    maintainer: User, draft_revision: RubricRevision
) -> None:
    stored = draft_revision.intent
    draft_revision.intent = "typed into a form"  # what a bound ModelForm does to its instance
    revisions.edit_revision(draft_revision, 1, {"intent": "typed into a form"}, by=Actor.member(maintainer))
    event = AuditEvent.objects.get(revision=draft_revision, verb=AuditVerb.EDITED)
    assert event.detail["before"] == {"intent": stored}
    assert event.detail["after"] == {"intent": "typed into a form"}


def test_a_second_approval_from_a_stale_copy_is_a_transition_error(
    draft_revision: RubricRevision, maintainer: Any
) -> None:
    # Every item approved while the revision stays a draft (as after a fix to its intent or scope).
    draft_revision.items.update(review_state=ReviewState.APPROVED)
    mine = RubricRevision.objects.get(pk=draft_revision.pk)
    theirs = RubricRevision.objects.get(pk=draft_revision.pk)
    theirs.approve(by=maintainer)
    # Before, the stale copy's save hit the frozen-revision trigger: an IntegrityError, a 500 in the view.
    with pytest.raises(TransitionError, match="approved meanwhile"):
        mine.approve(by=maintainer)
    stored = RubricRevision.objects.get(pk=draft_revision.pk)
    assert stored.status == RevisionStatus.APPROVED and stored.approved_at == theirs.approved_at


def test_add_and_remove_items_of_a_draft(draft_revision: RubricRevision, maintainer: Any) -> None:
    added = revisions.add_item(
        draft_revision,
        ItemKind.NON_BLOCKER,
        {"item_id": "N4", "criterion": "x", "weight": 2.0},
        by=Actor.member(maintainer),
    )
    assert (added.position, added.review_state, added.weight) == (3, ReviewState.PENDING, 2.0)
    assert parse_rubric(draft_revision.to_rubric_dict()).item_ids()[-1] == "N4"
    revisions.remove_item(
        RubricItem.objects.get(revision=draft_revision, item_id="N1"), by=Actor.member(maintainer)
    )
    assert [i.item_id for i in RubricRevision.objects.get(pk=draft_revision.pk).non_blockers()] == [
        "N2",
        "N3",
        "N4",
    ]
    verbs = list(AuditEvent.objects.filter(revision=draft_revision).values_list("verb", "detail"))
    details = [d for v, d in verbs if v == AuditVerb.EDITED]
    assert {"added", "removed"} == {k for d in details for k in d if k in ("added", "removed")}
    # A duplicate id is the database's refusal (the view turns it into a form error).
    with pytest.raises(IntegrityError), transaction.atomic():
        revisions.add_item(
            draft_revision, ItemKind.BLOCKER, {"item_id": "N2", "criterion": "y"}, by=Actor.member(maintainer)
        )


def test_add_and_remove_need_a_maintainer_and_a_draft(
    make_revision: MakeRevision, maintainer: Any, reviewer: Any
) -> None:
    draft = make_revision()
    with pytest.raises(PermissionDenied):
        revisions.add_item(
            draft, ItemKind.BLOCKER, {"item_id": "B3", "criterion": "x"}, by=Actor.member(reviewer)
        )
    with pytest.raises(PermissionDenied):
        revisions.remove_item(RubricItem.objects.get(revision=draft, item_id="B1"), by=Actor.member(reviewer))
    # A stale copy that still says draft: the services read the stored status, and refuse.
    stale = RubricRevision.objects.get(pk=draft.pk)
    stale_item = RubricItem.objects.get(revision=draft, item_id="B1")
    for item in draft.items.all():
        revisions.approve_item(item, by=Actor.member(maintainer))
    assert RubricRevision.objects.get(pk=draft.pk).status == RevisionStatus.APPROVED
    assert stale.status == RevisionStatus.DRAFT
    with pytest.raises(RevisionFrozen):
        revisions.add_item(
            stale, ItemKind.BLOCKER, {"item_id": "B3", "criterion": "x"}, by=Actor.member(maintainer)
        )
    with pytest.raises(RevisionFrozen):
        revisions.remove_item(stale_item, by=Actor.member(maintainer))
    with pytest.raises(RevisionFrozen):
        revisions.request_changes(stale_item, by=Actor.member(maintainer), note="late")
    assert RubricItem.objects.filter(revision=draft).count() == 5


def test_a_write_the_trigger_refuses_is_revision_frozen_not_integrity_error(
    draft_revision: RubricRevision, maintainer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The approval lands between the service's draft check and its write.
    check = revisions._require_draft

    def then_approved(revision: RubricRevision) -> None:
        check(revision)
        RubricRevision.objects.filter(pk=revision.pk).update(status=RevisionStatus.APPROVED)

    monkeypatch.setattr(revisions, "_require_draft", then_approved)
    b1 = RubricItem.objects.get(revision=draft_revision, item_id="B1")
    calls: list[Callable[[], object]] = [
        lambda: revisions.edit_item(b1, 1, {"criterion": "new"}, by=Actor.member(maintainer)),
        lambda: revisions.request_changes(b1, by=Actor.member(maintainer), note="n"),
        lambda: revisions.approve_item(b1, by=Actor.member(maintainer)),
        lambda: revisions.add_item(
            draft_revision, ItemKind.BLOCKER, {"item_id": "B3", "criterion": "x"}, by=Actor.member(maintainer)
        ),
        lambda: revisions.remove_item(b1, by=Actor.member(maintainer)),
    ]
    for call in calls:
        with pytest.raises(RevisionFrozen, match="is approved: it is never edited"):
            call()
    b1.refresh_from_db()
    assert (b1.criterion, b1.review_state) == (RUBRIC["blockers"][0]["criterion"], ReviewState.PENDING)


@pytest.mark.parametrize("repetition", [-1, MAX_RUN_INT + 1, 2**40])
def test_the_database_refuses_a_repetition_out_of_range(task: Task, repetition: int) -> None:
    """The bound run.json and the forms check is the schema's too: SQLite stores 64-bit integers, so without
    the constraint 2**31 would be a run here and an overflow on PostgreSQL."""
    fields = {"task": task, "passed": True, "diff_sha256": "0" * 64, "diff_bytes": 0}
    AgentRun.objects.create(repetition=MAX_RUN_INT, **fields)  # the bound itself is a repetition
    # The constraint on SQLite; PostgreSQL's integer column refuses past 2**31 - 1 before it.
    with pytest.raises((IntegrityError, DataError)) as refused, transaction.atomic():
        AgentRun.objects.create(repetition=repetition, model="other", **fields)
    assert "agent_run_repetition_in_range" in str(refused.value) or "out of range" in str(refused.value)
    assert AgentRun.objects.count() == 1


def test_the_repetition_constraint_is_in_the_database(db: None) -> None:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, AgentRun._meta.db_table)
    assert constraints["agent_run_repetition_in_range"]["check"]
