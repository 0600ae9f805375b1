"""The run's current grade is stored (``RunGrade.is_current``), not derived on each read: every change that
can move it moves the stored marker, by the same rule (against the task's admitted revision with the
repository's primary judge, else the newest). The conftest's ``current_grades_stored`` checks the marker
against the rule after every test; these take each kind of change on its own."""

from __future__ import annotations

import importlib
import json
import threading
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    JobStatus,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    refresh_current_grades,
)
from rubrics_app.services.judges import set_judges
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import SweepRequest
from tests.app.conftest import MakeRevision, rubric_data, sound_script
from tests.app.sweep_helpers import import_runs

pytestmark = pytest.mark.django_db

RUNS = 4


def sweep(repository: Repository, maintainer: User) -> None:
    done = sweeps.sweep_now(repository, Actor.member(maintainer), SweepRequest(), cache=MemoryCache())
    assert done.job.status == JobStatus.DONE, done.job.error


def current_revisions() -> set[int | None]:
    return set(RunGrade.objects.current().values_list("revision_id", flat=True))


def newer_revision(make_revision: MakeRevision, task_id: str, criterion: str) -> RubricRevision:
    data = rubric_data(task=task_id)
    data["blockers"][0]["criterion"] = criterion
    return make_revision(RevisionStatus.ADMITTED, data=data)


@pytest.fixture
def swept(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    """RUNS runs (one fails its tests: graded without a judge), swept against the admitted revision."""
    import_runs(repository, tmp_path / "runs", RUNS, failing_tests=(1,))
    sweep(repository, maintainer)
    assert RunGrade.objects.count() == RUNS


@pytest.fixture
def second(
    swept: None,
    admitted_revision: RubricRevision,
    make_revision: MakeRevision,
    repository: Repository,
    maintainer: User,
) -> RubricRevision:
    """A newer admitted revision of the task (the first one retired), swept too: each run has a grade
    against each revision."""
    revision = newer_revision(
        make_revision, admitted_revision.task.task_id, "fit() refuses a fraction above 1."
    )
    sweep(repository, maintainer)
    return revision


def rewrite_as_newest(grades: list[RunGrade]) -> None:
    """The grades written again, so each is its run's newest (as a writer outside the services would, which
    then stores the current grades itself)."""
    for grade in grades:
        grade.delete()
        grade.pk = None
        grade.is_current = False
        grade.save()
    refresh_current_grades(runs=[g.run_id for g in grades])


def test_a_re_sweep_after_an_admission_moves_the_current_grade(
    swept: None,
    admitted_revision: RubricRevision,
    make_revision: MakeRevision,
    repository: Repository,
    maintainer: User,
) -> None:
    newer = newer_revision(make_revision, admitted_revision.task.task_id, "fit() refuses a fraction above 1.")
    # Admitted, not yet swept: no grade is against it, so each run's newest (the older revision's) counts.
    assert current_revisions() == {admitted_revision.pk}
    sweep(repository, maintainer)
    assert RunGrade.objects.count() == 2 * RUNS
    assert current_revisions() == {newer.pk}
    assert set(RunGrade.objects.history().values_list("revision_id", flat=True)) == {admitted_revision.pk}


def test_admitting_a_revision_moves_the_current_grade_off_the_retired_one(
    second: RubricRevision, admitted_revision: RubricRevision, make_revision: MakeRevision
) -> None:
    first_grades = list(RunGrade.objects.filter(revision=admitted_revision))
    rewrite_as_newest(first_grades)  # now newer than the grades against the admitted revision
    assert current_revisions() == {second.pk}
    newer_revision(make_revision, admitted_revision.task.task_id, "fit() refuses 1.5 with a ValueError.")
    # The second revision is retired: no grade is current by its key, so each run's newest counts. The
    # grades against the retired (frozen) revision lose the marker: it is not part of what was graded.
    assert RubricRevision.objects.get(pk=second.pk).status == RevisionStatus.RETIRED
    assert current_revisions() == {admitted_revision.pk}
    assert set(RunGrade.objects.current().values_list("pk", flat=True)) == {
        g.pk for g in RunGrade.objects.filter(revision=admitted_revision)
    }


def test_changing_the_primary_judge_moves_the_current_grade(
    second: RubricRevision,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
) -> None:
    rewrite_as_newest(list(RunGrade.objects.filter(revision=admitted_revision)))
    assert current_revisions() == {second.pk}
    first_judge = JudgeSetting.objects.get(repository=repository).judge
    other = tmp_path / "other-judge.json"
    other.write_text(json.dumps(sound_script()))
    set_judges(repository, by=Actor.member(maintainer), judge=f"scripted:{other}")
    # The judged runs have no grade by the new primary judge: their newest counts. The run whose tests
    # failed was graded without a judge: its grade against the admitted revision stays current.
    unjudged = AgentRun.objects.get(repetition=1)
    current = RunGrade.objects.current()
    assert {g.revision_id for g in current if g.run_id != unjudged.pk} == {admitted_revision.pk}
    assert current.get(run=unjudged).revision_id == second.pk
    # And back: the grades by the first judge against the admitted revision are current again.
    set_judges(repository, by=Actor.member(maintainer), judge=first_judge)
    assert current_revisions() == {second.pk}


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks are PostgreSQL's (SQLite has one writer)"
)
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_a_refresh_waits_for_a_change_of_judge_in_flight_and_then_sees_it(
    swept: None, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    """Two writers at once: a change of primary judge (holding its transaction open) and a sweep-like
    refresh of one run. The refresh waits on the task lock until the change commits, then stores the
    marker as the rule gives it with the new judge; without the lock it would run on the old judge."""
    other = tmp_path / "other-judge.json"
    other.write_text(json.dumps(sound_script()))
    run = AgentRun.objects.exclude(repetition=1).first()  # a judged run: its grade by the first judge
    assert run is not None
    judge_set, commit, refreshed = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def change_judge() -> None:
        try:
            with transaction.atomic():
                set_judges(repository, by=Actor.member(maintainer), judge=f"scripted:{other}")
                judge_set.set()
                assert commit.wait(30)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
            judge_set.set()
        finally:
            connection.close()

    def refresh() -> None:
        try:
            with transaction.atomic():
                refresh_current_grades(runs=[run.pk])
            refreshed.set()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    changer = threading.Thread(target=change_judge)
    changer.start()
    assert judge_set.wait(30)
    refresher = threading.Thread(target=refresh)
    refresher.start()
    # While the change is open, the refresh cannot pass the lock (it would in an instant without one).
    assert not refreshed.wait(1)
    commit.set()
    changer.join(30)
    refresher.join(30)
    assert not errors, errors
    assert refreshed.is_set()
    assert set(RunGrade.objects.current().values_list("pk", flat=True)) == set(
        RunGrade.objects.derived_current().values_list("pk", flat=True)
    )


def test_deleting_the_current_grade_moves_it_to_the_run_s_other_grade(
    second: RubricRevision, admitted_revision: RubricRevision
) -> None:
    run = AgentRun.objects.get(repetition=0)
    RunGrade.objects.filter(run=run, revision=second).delete()
    assert not RunGrade.objects.filter(run=run).current().exists()  # the run has no current grade yet
    refresh_current_grades(runs=[run.pk])
    assert RunGrade.objects.filter(run=run).current().get().revision_id == admitted_revision.pk


def test_one_current_grade_per_run_is_in_the_schema(swept: None) -> None:
    grade = RunGrade.objects.current().first()
    assert grade is not None
    grade.pk, grade.rubric_sha256 = None, "0" * 64
    with pytest.raises(IntegrityError), transaction.atomic():
        grade.save()


def test_the_migration_fills_the_marker_by_the_rule(
    second: RubricRevision, admitted_revision: RubricRevision
) -> None:
    rewrite_as_newest(list(RunGrade.objects.filter(revision=admitted_revision)))  # the newest is not current
    stored = set(RunGrade.objects.current().values_list("pk", flat=True))
    assert {g.revision_id for g in RunGrade.objects.current()} == {second.pk}
    RunGrade.objects.update(is_current=False)
    migration = importlib.import_module("rubrics_app.migrations.0134_stored_current_grade")
    name = ("rubrics_app", "0134_stored_current_grade")
    migration.fill(MigrationExecutor(connection).loader.project_state(name).apps, None)
    assert set(RunGrade.objects.current().values_list("pk", flat=True)) == stored
