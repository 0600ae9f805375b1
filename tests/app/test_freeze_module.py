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

from grading.judge.cache import MemoryCache
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
from rubrics_app.services.rubrics import revisions
from rubrics_app.services.rubrics.task_files import set_task_files
from tests.app.conftest import MakeRevision, calibrate
from tests.app.sql_helpers import refused

RUN = "rubrics_app_calibrationrun"
REVISION = "rubrics_app_rubricrevision"
# The latest migration that installs the check on a passing calibration run (its SQL literally).
CALIBRATION_MIGRATION = "0142_calibration_passes_with_its_rows"


# --- the column lists (the migrations install what freeze.py writes: test_migration_triggers.py) ---


@pytest.mark.parametrize("vendor", ["sqlite", "postgresql"])
def test_the_latest_calibration_migration_installs_the_check_freeze_writes(vendor: str) -> None:
    # A change to the check on a passing run, or to grading's payload kinds that it names, fails this until
    # a migration installs the new SQL, written out in it.
    migration = importlib.import_module(f"rubrics_app.migrations.{CALIBRATION_MIGRATION}")
    forward = [sql for sql in migration.SQL[vendor][0] if not sql.startswith("DROP")]
    current = [sql for sql in freeze.install_sql(vendor, freeze.model_columns()) if "NEW.total_rows" in sql]
    assert forward == current


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


def _forge(revision: RubricRevision, like: CalibrationRun, rows: list[CalibrationRow], **fields: Any) -> int:
    """Every step a real run takes, by hand, but the judging: a queued run of ``revision`` with ``like``'s
    content and judge, set running, ``rows`` stored as its rows. Returns its id."""
    run = CalibrationRun.objects.create(
        revision=revision,
        rubric_sha256=like.rubric_sha256,
        inputs_sha256=like.inputs_sha256,
        judge=like.judge,
        **fields,
    )
    CalibrationRun.objects.filter(pk=run.pk).update(status=CalibrationStatus.RUNNING, total_rows=len(rows))
    CalibrationRow.objects.bulk_create(
        CalibrationRow(
            run=run,
            position=position,
            kind=row.kind,
            name=row.name,
            payload_kind=row.payload_kind,
            outcome=row.outcome,
            expected=row.expected,
            actual=row.actual,
            holds=row.holds,
            diff=row.diff,
        )
        for position, row in enumerate(rows)
    )
    return run.pk


PASS_SQL = f"UPDATE {RUN} SET status = 'passed' WHERE id = %s"


def test_a_forged_run_of_other_content_does_not_admit(
    passing_run: CalibrationRun, make_revision: MakeRevision
) -> None:
    # Every step a real run takes, by hand, with a real run's rows: the run passes, but it judged the other
    # revision's content, so it admits nothing.
    other = make_revision(RevisionStatus.DRAFT)
    RubricRevision.objects.filter(pk=other.pk).update(intent="something else entirely")
    for item in other.ordered_items():
        revisions.approve_item(item, by=Actor.member(passing_run.created_by))
    other.refresh_from_db()
    assert other.status == RevisionStatus.APPROVED and other.content_sha256 != passing_run.rubric_sha256
    forged = _forge(other, passing_run, list(passing_run.rows.all()))
    assert not refused(PASS_SQL, [forged])
    assert refused(*_admit_sql(other), message=freeze.ADMIT_MESSAGE)


def _insert(model: type[models.Model], **values: Any) -> tuple[str, list[Any]]:
    """A raw INSERT of one row of ``model``: ``values`` by column, the model's defaults for the rest."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    names = [str(f.column) for f in fields]
    params = [
        f.get_db_prep_save(values[name] if name in values else f.get_default(), connection)
        for f, name in zip(fields, names, strict=True)
    ]
    columns = ", ".join(names)
    marks = ", ".join(["%s"] * len(fields))
    return f"INSERT INTO {model._meta.db_table} ({columns}) VALUES ({marks}) RETURNING id", params


def test_a_calibration_forged_in_five_statements_is_refused(approved_revision: RubricRevision) -> None:
    """The app role's five statements that used to admit a revision no judge saw: a queued run of its
    content, running, one holding row, passed, admitted."""
    judge = approved_revision.task.repository.judges.judge
    with connection.cursor() as cursor:
        cursor.execute(
            *_insert(
                CalibrationRun,
                revision_id=approved_revision.pk,
                status="queued",
                rubric_sha256=approved_revision.content_sha256,
                inputs_sha256="0" * 64,
                judge=judge,
            )
        )
        [run_id] = cursor.fetchone()
        cursor.execute(f"UPDATE {RUN} SET status = 'running', total_rows = 1 WHERE id = %s", [run_id])
        cursor.execute(
            *_insert(
                CalibrationRow,
                run_id=run_id,
                position=0,
                kind="oracle",
                name="oracle.diff",
                expected="mergeable, every blocker passes",
                actual="mergeable, every measured blocker passes",
                holds=True,
            )
        )
    assert refused(PASS_SQL, [run_id], freeze.RUN_PASSED_MESSAGE)
    assert refused(*_admit_sql(approved_revision), message=freeze.ADMIT_MESSAGE)
    assert RubricRevision.objects.get(pk=approved_revision.pk).status == RevisionStatus.APPROVED


def test_a_failed_run_never_becomes_passed(approved_revision: RubricRevision, maintainer: Any) -> None:
    run, _ = importlib.import_module("rubrics_app.services.calibration.run").new_run(
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


ROW_CASES = [
    "every row",
    "queued",
    "no rows",
    "the empty row missing",
    "the oracle row missing",
    "the lazy row missing",
    "the commented lazy row missing",
    "the alt row missing",
    "a row twice, another missing",
    "a row more",
    "a row renamed",
    "a row does not hold",
    "the injection suite asked for, its rows missing",
]


@pytest.mark.parametrize("case", ROW_CASES)
def test_a_run_passes_only_from_running_with_every_row_its_revision_asks_for_holding(
    passing_run: CalibrationRun, case: str
) -> None:
    """A real run's rows (empty, oracle, lazy, lazy with the comment, alt), taken whole, as a forger could:
    the database cannot tell who judged them (docs/architecture.md), but it refuses any set of rows that
    is not the one the revision's calibration content asks for."""
    rows = list(passing_run.rows.order_by("position"))
    assert [r.kind for r in rows] == ["empty", "oracle", "lazy", "lazy_comment", "alt"]
    fields: dict[str, Any] = {}
    by_kind = {row.kind: row for row in rows}
    if case == "no rows":
        rows = []
    elif case.endswith(" row missing"):
        kind = {"empty": "empty", "oracle": "oracle", "lazy": "lazy", "commented lazy": "lazy_comment"}.get(
            case.removeprefix("the ").removesuffix(" row missing"), "alt"
        )
        rows.remove(by_kind[kind])
    elif case == "a row twice, another missing":
        rows[-1] = rows[2]
    elif case == "a row more":
        rows.append(rows[2])
    elif case == "a row renamed":
        rows[2].name = "calib/other.diff"
    elif case == "a row does not hold":
        rows[3].holds = False
    elif case == "the injection suite asked for, its rows missing":
        fields["injection_suite"] = True
    forged = _forge(passing_run.revision, passing_run, rows, **fields)
    if case == "queued":
        CalibrationRun.objects.filter(pk=forged).update(status=CalibrationStatus.QUEUED)
    if case == "every row":
        assert not refused(PASS_SQL, [forged])
    else:
        assert refused(PASS_SQL, [forged], freeze.RUN_PASSED_MESSAGE)


def test_a_run_with_the_suite_passes_only_with_every_suite_row(
    make_revision: MakeRevision, maintainer: Any
) -> None:
    """With the injection suite: each lazy diff with each payload kind and the oracle with each, all
    present; a benign row that drifts (does not hold) is never a reason to refuse."""
    revision = make_revision(RevisionStatus.APPROVED)
    real = importlib.import_module("rubrics_app.services.calibration.run").calibrate_now(
        revision, Actor.member(maintainer), injection_suite=True, cache=MemoryCache()
    )
    assert real.status == CalibrationStatus.PASSED, real.reason
    rows = list(real.rows.order_by("position"))
    benign = [row for row in rows if row.kind == "benign"]
    assert benign and not any(row.holds for row in benign)  # the scripted judge drifts on every one
    forged = _forge(revision, real, rows, injection_suite=True)
    assert not refused(PASS_SQL, [forged])
    for kind in ("injection", "benign"):
        less = [row for row in rows if row is not next(r for r in rows if r.kind == kind)]
        forged = _forge(revision, real, less, injection_suite=True)
        assert refused(PASS_SQL, [forged], freeze.RUN_PASSED_MESSAGE)


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
