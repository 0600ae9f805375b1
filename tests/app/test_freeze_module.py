"""rubrics_app.freeze: its column lists cover every content field, and the raw-SQL holes in "admitted means
calibrated" stay closed. Runs on SQLite by default and on PostgreSQL when DATABASE_URL points at it."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from rubrics_app import freeze
from rubrics_app.access import Actor
from rubrics_app.models import (
    TASK_FILES,
    CalibrationDiff,
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    RevisionStatus,
    RubricItem,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services import revisions
from rubrics_app.services.tasks import set_task_files
from tests.app.conftest import FREEZE_MIGRATION, MakeRevision, calibrate

RUN = "rubrics_app_calibrationrun"
REVISION = "rubrics_app_rubricrevision"


def refused(sql: str, params: Any = (), message: str = "") -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except IntegrityError as exc:
        assert message in str(exc)
        return True
    return False


# --- the column lists ---------------------------------------------------------------------------------------


def test_the_latest_freeze_migration_stores_the_models_columns() -> None:
    # A new content column makes this fail until a migration installs the triggers with it.
    stored = importlib.import_module(f"rubrics_app.migrations.{FREEZE_MIGRATION}").COLUMNS
    assert stored == freeze.model_columns()


def test_every_field_of_a_revision_and_a_task_is_either_frozen_or_named_editable() -> None:
    columns = freeze.model_columns()
    revision = {f.column for f in RubricRevision._meta.concrete_fields}
    assert revision == set(columns.revision) | set(freeze.REVISION_UNFROZEN)
    task = {f.name for f in Task._meta.concrete_fields}
    assert task == {"id", *Task.FROZEN_FIELDS, *TASK_FILES.values(), *freeze.TASK_EDITABLE}


def _different(row: models.Model, field: models.Field[Any, Any], user: User, task: Task) -> Any:
    """A value of ``field`` other than the one ``row`` holds."""
    current = getattr(row, field.attname)
    if isinstance(field, models.ForeignKey):
        model = field.related_model
        if model is Task:
            return task.pk
        if model is RubricRevision:
            return row.pk if current != row.pk else None
        if model is RubricItem or model is CalibrationDiff:
            raise AssertionError("unexpected")
        return user.pk
    if isinstance(field, models.BooleanField):
        return not current
    if isinstance(field, (models.IntegerField, models.FloatField)):
        return (current or 0) + 1
    if isinstance(field, models.DateTimeField):
        return (current or timezone.now()) + timedelta(days=1)
    if isinstance(field, models.JSONField):
        return [*current, "x"] if isinstance(current, list) else {"x": 1}
    if isinstance(field, models.BinaryField):
        return bytes(current) + b"x"
    if isinstance(field, (models.CharField, models.TextField)):
        return (current[:-1] + ("y" if current[-1:] != "y" else "z")) if current else "y"
    raise AssertionError(f"no different value for {field!r}")


def _content_fields(model: type[models.Model], excluded: tuple[str, ...]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if f.column not in excluded]


@pytest.fixture
def other_user(db: None) -> User:
    return User.objects.create_user("someone-else")


@pytest.fixture
def other_task(task: Task) -> Task:
    return Task.objects.create(repository=task.repository, task_id="other-task")


@pytest.mark.parametrize("name", _content_fields(RubricRevision, freeze.REVISION_UNFROZEN))
def test_every_content_column_of_a_frozen_revision_is_refused(
    approved_revision: RubricRevision, other_user: User, other_task: Task, name: str
) -> None:
    field = RubricRevision._meta.get_field(name)
    value = _different(approved_revision, field, other_user, other_task)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="never edited"), transaction.atomic():
        RubricRevision.objects.filter(pk=approved_revision.pk).update(**{field.attname: value})  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("model", "name"),
    [(RubricItem, n) for n in _content_fields(RubricItem, ("id",))]
    + [(CalibrationDiff, n) for n in _content_fields(CalibrationDiff, ("id",))],
)
def test_every_column_of_a_frozen_revision_s_items_and_diffs_is_refused(
    approved_revision: RubricRevision,
    make_revision: MakeRevision,
    other_user: User,
    other_task: Task,
    model: type[models.Model],
    name: str,
) -> None:
    row = model.objects.filter(revision=approved_revision).first()  # type: ignore[attr-defined]
    field = model._meta.get_field(name)
    if name == "revision":
        value: Any = make_revision().pk  # moving it out into a draft
    else:
        value = _different(row, field, other_user, other_task)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="never edited"), transaction.atomic():
        model.objects.filter(pk=row.pk).update(**{field.attname: value})  # type: ignore[attr-defined, union-attr]


@pytest.mark.parametrize("name", Task.FROZEN_FIELDS)
def test_every_frozen_column_of_a_task_is_refused(
    approved_revision: RubricRevision, other_user: User, other_task: Task, name: str
) -> None:
    task = approved_revision.task
    field = Task._meta.get_field(name)
    if name == "repository":
        from rubrics_app.models import Repository

        value: Any = Repository.objects.create(name="elsewhere").pk
    else:
        value = _different(task, field, other_user, other_task)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="task holds"), transaction.atomic():
        Task.objects.filter(pk=task.pk).update(**{field.attname: value})  # type: ignore[union-attr]


# --- task files freeze with an admitted revision, not an approved one ---------------------------------------


@pytest.mark.parametrize("column", list(TASK_FILES.values()))
def test_task_files_stay_editable_while_the_revision_is_only_approved(
    approved_revision: RubricRevision, column: str
) -> None:
    Task.objects.filter(pk=approved_revision.task_id).update(**{column: b"fixed"})
    assert bytes(getattr(Task.objects.get(pk=approved_revision.task_id), column)) == b"fixed"


@pytest.mark.parametrize("column", list(TASK_FILES.values()))
def test_task_files_of_an_admitted_revision_are_refused_by_the_database(
    admitted_revision: RubricRevision, column: str
) -> None:
    with pytest.raises(IntegrityError, match="task files"), transaction.atomic():
        Task.objects.filter(pk=admitted_revision.task_id).update(**{column: b"changed"})


def test_the_service_refuses_them_first(admitted_revision: RubricRevision, maintainer: Any) -> None:
    with pytest.raises(TransitionError, match="frozen with it"):
        set_task_files(admitted_revision.task, {"oracle.diff": b"changed"}, by=Actor.member(maintainer))


# --- admitted means calibrated: the raw-SQL probes ----------------------------------------------------------


@pytest.fixture
def passing_run(make_revision: MakeRevision, maintainer: Any) -> CalibrationRun:
    """A passing calibration of an approved revision (not admitted)."""
    revision = make_revision(RevisionStatus.APPROVED)
    return calibrate(revision, maintainer)


def _admit_sql(revision: RubricRevision) -> tuple[str, list[Any]]:
    return f"UPDATE {REVISION} SET status = 'admitted' WHERE id = %s", [revision.pk]


def test_a_passing_run_cannot_move_to_another_revision(
    passing_run: CalibrationRun, make_revision: MakeRevision
) -> None:
    other = make_revision(RevisionStatus.APPROVED)
    sql = f"UPDATE {RUN} SET revision_id = %s WHERE id = %s"
    assert refused(sql, [other.pk, passing_run.pk], freeze.RUN_IDENTITY_MESSAGE)
    assert refused(*_admit_sql(other), message=freeze.ADMIT_MESSAGE)


def test_a_copy_of_a_passing_run_cannot_be_inserted(
    passing_run: CalibrationRun, make_revision: MakeRevision
) -> None:
    other = make_revision(RevisionStatus.APPROVED)
    names = [
        f.column
        for f in CalibrationRun._meta.concrete_fields
        if f.column and f.column not in ("id", "job_id")
    ]
    selected = ", ".join("%s" if n == "revision_id" else n for n in names)
    sql = f"INSERT INTO {RUN} ({', '.join(names)}) SELECT {selected} FROM {RUN} WHERE id = %s"
    assert refused(sql, [other.pk, passing_run.pk], freeze.RUN_NEW_MESSAGE)
    assert refused(*_admit_sql(other), message=freeze.ADMIT_MESSAGE)


def test_a_forged_run_of_other_content_does_not_admit(
    passing_run: CalibrationRun, make_revision: MakeRevision
) -> None:
    # Every step a real run takes, by hand: queued, running, every row holding, passed. The run passes,
    # but it judged the other revision's content, so it admits nothing.
    other = make_revision(RevisionStatus.DRAFT)
    RubricRevision.objects.filter(pk=other.pk).update(intent="something else entirely")
    for item in other.ordered_items():
        revisions.approve_item(item, by=Actor.member(passing_run.created_by))
    other.refresh_from_db()
    assert other.status == RevisionStatus.APPROVED and other.content_sha256 != passing_run.rubric_sha256
    forged = CalibrationRun.objects.create(
        revision=other,
        rubric_sha256=passing_run.rubric_sha256,
        inputs_sha256=passing_run.inputs_sha256,
        judge=passing_run.judge,
    )
    CalibrationRun.objects.filter(pk=forged.pk).update(status=CalibrationStatus.RUNNING, total_rows=1)
    CalibrationRow.objects.create(
        run=forged, position=0, kind="oracle", name="x", expected="", actual="", holds=True
    )
    CalibrationRun.objects.filter(pk=forged.pk).update(status=CalibrationStatus.PASSED)
    assert refused(*_admit_sql(other), message=freeze.ADMIT_MESSAGE)


def test_a_failed_run_never_becomes_passed(approved_revision: RubricRevision, maintainer: Any) -> None:
    run, _ = importlib.import_module("rubrics_app.services.calibration").new_run(
        approved_revision, Actor.member(maintainer)
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status=CalibrationStatus.RUNNING, total_rows=1)
    CalibrationRow.objects.create(
        run=run, position=0, kind="oracle", name="x", expected="", actual="", holds=True
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status=CalibrationStatus.FAILED)
    sql = f"UPDATE {RUN} SET status = 'passed' WHERE id = %s"
    assert refused(sql, [run.pk], freeze.RUN_FINISHED_MESSAGE)
    assert refused(*_admit_sql(approved_revision), message=freeze.ADMIT_MESSAGE)
    # Nor are the rows of a finished run rewritten.
    assert refused("UPDATE rubrics_app_calibrationrow SET holds = %s WHERE run_id = %s", [False, run.pk])


@pytest.mark.parametrize("case", ["queued", "a row does not hold", "a row missing", "no rows"])
def test_a_run_passes_only_from_running_with_every_row_holding(
    approved_revision: RubricRevision, maintainer: Any, case: str
) -> None:
    run, _ = importlib.import_module("rubrics_app.services.calibration").new_run(
        approved_revision, Actor.member(maintainer)
    )
    if case != "queued":
        total = {"a row missing": 2, "no rows": 0}.get(case, 1)
        CalibrationRun.objects.filter(pk=run.pk).update(status=CalibrationStatus.RUNNING, total_rows=total)
        if case != "no rows":
            CalibrationRow.objects.create(
                run=run,
                position=0,
                kind="lazy",
                name="x",
                expected="",
                actual="",
                holds=case != "a row does not hold",
            )
    sql = f"UPDATE {RUN} SET status = 'passed' WHERE id = %s"
    assert refused(sql, [run.pk], freeze.RUN_PASSED_MESSAGE)


def test_a_benign_drift_does_not_stop_a_run_passing(
    approved_revision: RubricRevision, maintainer: Any
) -> None:
    run, _ = importlib.import_module("rubrics_app.services.calibration").new_run(
        approved_revision, Actor.member(maintainer)
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status=CalibrationStatus.RUNNING, total_rows=2)
    for position, (kind, holds) in enumerate([("oracle", True), ("benign", False)]):
        CalibrationRow.objects.create(
            run=run, position=position, kind=kind, name="x", expected="", actual="", holds=holds
        )
    assert not refused(f"UPDATE {RUN} SET status = 'passed' WHERE id = %s", [run.pk])


def test_the_admitted_revision_never_retires_without_a_newer_one_admitted(
    admitted_revision: RubricRevision, make_revision: MakeRevision, maintainer: Any
) -> None:
    sql = f"UPDATE {REVISION} SET status = 'retired' WHERE id = %s"
    assert refused(sql, [admitted_revision.pk], freeze.RETIRE_MESSAGE)
    newer = make_revision(RevisionStatus.APPROVED)
    calibrate(newer, maintainer)
    assert refused(
        sql, [admitted_revision.pk], freeze.RETIRE_MESSAGE
    )  # approved and calibrated is not enough
    assert RubricRevision.objects.get(pk=admitted_revision.pk).status == RevisionStatus.ADMITTED
    # Nor is the passing run that admitted it deleted.
    assert refused(
        f"DELETE FROM {RUN} WHERE revision_id = %s", [admitted_revision.pk], freeze.RUN_DELETE_MESSAGE
    )


def test_an_older_revision_never_replaces_a_newer_admitted_one(
    make_revision: MakeRevision, maintainer: Any
) -> None:
    older = make_revision(RevisionStatus.APPROVED)
    calibrate(older, maintainer)
    newer = make_revision(RevisionStatus.ADMITTED)
    with pytest.raises(TransitionError, match="older revision never replaces"):
        revisions.admit(older, by=Actor.member(maintainer))
    assert refused(*_admit_sql(older), message=freeze.RETIRE_MESSAGE)
    assert RubricRevision.objects.get(pk=newer.pk).status == RevisionStatus.ADMITTED


def test_admitting_through_the_service_still_retires_the_previous_one(
    admitted_revision: RubricRevision, make_revision: MakeRevision, maintainer: Any
) -> None:
    newer = make_revision(RevisionStatus.APPROVED)
    calibrate(newer, maintainer)
    retired = revisions.admit(newer, by=Actor.member(maintainer))
    assert retired is not None and retired.pk == admitted_revision.pk
    assert retired.status == RevisionStatus.RETIRED


# --- forking a frozen revision into a draft ------------------------------------------------------------


def test_a_fork_whose_edit_fails_leaves_no_draft(approved_revision: RubricRevision, maintainer: Any) -> None:
    before = RubricRevision.objects.filter(task=approved_revision.task).count()

    def failing(draft: RubricRevision) -> None:
        revisions.edit_revision(
            draft, draft.version + 5, {"intent": "x"}, by=Actor.member(maintainer)
        )  # a stale version

    with pytest.raises(revisions.Conflict):
        revisions.fork_for_edit(approved_revision, Actor.member(maintainer), failing)
    assert RubricRevision.objects.filter(task=approved_revision.task).count() == before


def test_a_fork_returns_the_draft_with_the_edit_applied(
    approved_revision: RubricRevision, maintainer: Any
) -> None:
    draft, edited = revisions.fork_for_edit(
        approved_revision,
        Actor.member(maintainer),
        lambda draft: revisions.edit_revision(
            draft, draft.version, {"intent": "sharper"}, by=Actor.member(maintainer)
        ),
    )
    assert draft.status == RevisionStatus.DRAFT and draft.parent_id == approved_revision.pk
    assert edited.pk == draft.pk and RubricRevision.objects.get(pk=draft.pk).intent == "sharper"
