"""The database, not only the code, refuses to edit an approved, admitted or retired revision (0006).

Every write here goes around the model methods (QuerySet.update/delete, raw cursor) to prove the trigger
refuses it. Run on SQLite by default and on PostgreSQL when DATABASE_URL points at it.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationDiff,
    DiffKind,
    ItemKind,
    ReviewState,
    RevisionFrozen,
    RevisionStatus,
    RubricItem,
    RubricRevision,
)
from rubrics_app.services.rubrics import revisions
from tests.app.conftest import MakeRevision, calibrate


def refused(action: Any) -> bool:
    try:
        with transaction.atomic():
            action()
    except IntegrityError as exc:
        assert "never edited" in str(exc)
        return True
    return False


@pytest.fixture(params=[RevisionStatus.APPROVED, RevisionStatus.ADMITTED, RevisionStatus.RETIRED])
def frozen_revision(request: pytest.FixtureRequest, make_revision: MakeRevision) -> RubricRevision:
    if request.param == RevisionStatus.RETIRED:
        # Retired: admitted until a later revision of the task was (migration 0011 keeps it frozen).
        retired = make_revision(RevisionStatus.ADMITTED)
        make_revision(RevisionStatus.ADMITTED)
        retired.refresh_from_db()
        assert retired.status == RevisionStatus.RETIRED
        return retired
    return make_revision(request.param)


@pytest.mark.parametrize(
    "changes",
    [
        {"intent": "something else"},
        {"allowed_globs": ["**"]},
        {"denied_globs": []},
        {"max_changed_lines": 10_000},
        {"max_files": None},
        {"lazy_solution": "x"},
        {"alt_valid_solution": "x"},
        {"number": 99},
        {"version": 7},
        {"status": RevisionStatus.DRAFT},
        {"omitted_keys": ["calibration"]},
        {"drafted_by_model": "anthropic:claude"},
    ],
)
def test_the_database_refuses_content_updates(
    frozen_revision: RubricRevision, changes: dict[str, Any]
) -> None:
    assert refused(lambda: RubricRevision.objects.filter(pk=frozen_revision.pk).update(**changes))
    fresh = RubricRevision.objects.get(pk=frozen_revision.pk)
    assert fresh.to_rubric_dict() == frozen_revision.to_rubric_dict()
    assert fresh.status == frozen_revision.status


def test_the_database_refuses_a_raw_sql_update(frozen_revision: RubricRevision) -> None:
    def raw_update() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE rubrics_app_rubricrevision SET intent = %s WHERE id = %s",
                ["rewritten", frozen_revision.pk],
            )

    assert refused(raw_update)


def test_the_database_refuses_deleting_it(frozen_revision: RubricRevision) -> None:
    assert refused(lambda: RubricRevision.objects.filter(pk=frozen_revision.pk).delete())
    assert refused(lambda: frozen_revision.items.all().delete())
    assert refused(lambda: frozen_revision.calibration_diffs.all().delete())
    assert frozen_revision.items.count() == 5
    assert frozen_revision.calibration_diffs.count() == 2


@pytest.mark.parametrize(
    "changes",
    [
        {"criterion": "weaker"},
        {"evidence": "elsewhere"},
        {"needs_tree": False},
        {"weight": 9},
        {"review_state": ReviewState.PENDING},
        {"version": 5},
        {"item_id": "B9"},
    ],
)
def test_the_database_refuses_item_updates(frozen_revision: RubricRevision, changes: dict[str, Any]) -> None:
    item = frozen_revision.items.get(item_id="B2")
    assert refused(lambda: RubricItem.objects.filter(pk=item.pk).update(**changes))
    assert RubricItem.objects.get(pk=item.pk).text() == item.text()


def test_the_database_refuses_new_items_and_diffs(frozen_revision: RubricRevision) -> None:
    assert refused(
        lambda: RubricItem.objects.create(
            revision=frozen_revision, kind=ItemKind.BLOCKER, item_id="B9", criterion="c", evidence="e"
        )
    )
    assert refused(
        lambda: CalibrationDiff.objects.create(
            revision=frozen_revision, kind=DiffKind.ALT, path="calib/x.diff", content=b"x"
        )
    )


def test_the_database_refuses_moving_an_item_into_a_frozen_revision(
    frozen_revision: RubricRevision, draft_revision: RubricRevision
) -> None:
    item = draft_revision.items.get(item_id="B1")
    assert refused(lambda: RubricItem.objects.filter(pk=item.pk).update(revision=frozen_revision))


def test_the_database_refuses_calibration_diff_updates(frozen_revision: RubricRevision) -> None:
    diff = frozen_revision.calibration_diffs.get(kind=DiffKind.LAZY)
    assert refused(lambda: CalibrationDiff.objects.filter(pk=diff.pk).update(content=b"rewritten"))
    assert refused(lambda: CalibrationDiff.objects.filter(pk=diff.pk).update(breaks=[]))
    assert bytes(CalibrationDiff.objects.get(pk=diff.pk).content) == bytes(diff.content)


@pytest.mark.parametrize("status", ["retracted", ""])
def test_the_database_refuses_any_status_that_would_unfreeze_it(
    frozen_revision: RubricRevision, status: str
) -> None:
    # Any status outside approved/admitted would make the revision editable again (then set back).
    assert refused(lambda: RubricRevision.objects.filter(pk=frozen_revision.pk).update(status=status))
    assert RubricRevision.objects.get(pk=frozen_revision.pk).status == frozen_revision.status


def test_the_legal_transitions_still_work(make_revision: MakeRevision, maintainer: Any) -> None:
    approved = make_revision(RevisionStatus.APPROVED)
    calibrate(approved, maintainer)  # admitted means calibrated (rubrics_app.freeze)
    # approved -> admitted -> retired are allowed by the triggers (and nothing backwards: test_freeze_holes);
    # retired only as a newer revision is admitted, which the database does itself.
    RubricRevision.objects.filter(pk=approved.pk).update(status=RevisionStatus.ADMITTED)
    assert RubricRevision.objects.get(pk=approved.pk).status == RevisionStatus.ADMITTED
    newer = make_revision(RevisionStatus.APPROVED)
    calibrate(newer, maintainer)
    RubricRevision.objects.filter(pk=newer.pk).update(status=RevisionStatus.ADMITTED)
    assert RubricRevision.objects.get(pk=approved.pk).status == RevisionStatus.RETIRED


def test_a_draft_is_freely_editable_at_the_database_level(draft_revision: RubricRevision) -> None:
    RubricRevision.objects.filter(pk=draft_revision.pk).update(intent="changed")
    RubricItem.objects.filter(revision=draft_revision, item_id="B1").update(criterion="changed")
    CalibrationDiff.objects.filter(revision=draft_revision).update(content=b"changed")
    draft_revision.refresh_from_db()
    assert draft_revision.intent == "changed"


def test_the_code_refuses_too_and_points_at_a_new_draft(
    frozen_revision: RubricRevision, maintainer: Any
) -> None:
    item = frozen_revision.items.get(item_id="B1")
    with pytest.raises(RevisionFrozen):
        revisions.edit_item(item, item.version, {"criterion": "x"}, by=Actor.member(maintainer))
    with pytest.raises(RevisionFrozen):
        revisions.edit_revision(
            frozen_revision, frozen_revision.version, {"intent": "x"}, by=Actor.member(maintainer)
        )


def test_editing_starts_a_new_draft_carrying_every_item(
    frozen_revision: RubricRevision, maintainer: Any
) -> None:
    draft = revisions.new_draft_from(frozen_revision, by=Actor.member(maintainer))
    assert draft.status == RevisionStatus.DRAFT
    assert draft.parent_id == frozen_revision.pk
    assert draft.number == frozen_revision.task.revisions.count()  # the next number of the task
    assert draft.to_rubric_dict() == frozen_revision.to_rubric_dict()
    # Unchanged text keeps its approval (issue 8 §6); an edit puts the edited item back to pending.
    assert {i.review_state for i in draft.items.all()} == {ReviewState.APPROVED}
    assert {i.reviewed_by_id for i in draft.items.all()} == {maintainer.pk}
    b1 = draft.items.get(item_id="B1")
    revisions.edit_item(b1, b1.version, {"criterion": "sharper"}, by=Actor.member(maintainer))
    assert frozen_revision.items.get(item_id="B1").criterion != "sharper"
    assert draft.items.get(item_id="B1").review_state == ReviewState.PENDING


def test_the_vendor_is_one_the_triggers_cover() -> None:
    assert connection.vendor in {"sqlite", "postgresql"}
