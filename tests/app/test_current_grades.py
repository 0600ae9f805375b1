"""A run's current grade (RunGrade.objects.current()): after a new admission and a second sweep a run has
two grades, and the queue, the report and every count take only the current one; the older one is history
on the run's page, beside the rubric text it was graded against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import (
    AgentRun,
    JudgeSetting,
    QueueKind,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    Task,
    refresh_current_grades,
)
from rubrics_app.services.reports.report import repository_report
from rubrics_app.services.runs.pages import repository_runs_summary
from rubrics_app.services.runs.queue import Queue
from tests.app.conftest import MakeRevision, judge_answers, rubric_data
from tests.app.sweep_helpers import import_runs, sweep

pytestmark = pytest.mark.django_db

RUNS = 13
NEW_CRITERION = "fit() refuses a fraction above 1 with a ValueError naming the value."


@pytest.fixture
def swept_twice(
    admitted_revision: RubricRevision,
    make_revision: MakeRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
) -> RubricRevision:
    """13 runs (two fail their tests: never judged), swept against r1 with a second judge that passes
    everything (the primary fails B1: one disagreement per judged run), then r2 admitted and swept again."""
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"default": judge_answers()}))
    JudgeSetting.objects.filter(repository=repository).update(second_judge=f"scripted:{second}")
    import_runs(repository, tmp_path / "runs", RUNS, failing_tests=(3, 7))
    sweep(repository, maintainer)
    data = rubric_data(task=admitted_revision.task.task_id)
    data["blockers"][0]["criterion"] = NEW_CRITERION
    newer = make_revision(RevisionStatus.ADMITTED, data=data)
    assert newer.rubric_sha256() != admitted_revision.rubric_sha256()
    sweep(repository, maintainer)
    assert RunGrade.objects.count() == 2 * RUNS
    return newer


def test_each_run_has_one_current_grade_against_the_admitted_revision(swept_twice: RubricRevision) -> None:
    current = RunGrade.objects.current()
    assert current.count() == RUNS
    assert set(current.values_list("revision_id", flat=True)) == {swept_twice.pk}
    assert RunGrade.objects.history().count() == RUNS


def test_the_current_grade_is_against_the_admitted_revision_even_when_older(
    swept_twice: RubricRevision,
) -> None:
    # The grades against the retired revision written again: now each run's newest.
    for grade in list(RunGrade.objects.exclude(revision=swept_twice)):
        grade.delete()
        grade.pk, grade.is_current = None, False
        grade.save()
    refresh_current_grades()  # as any writer of grades does
    current = RunGrade.objects.current()
    assert set(current.values_list("revision_id", flat=True)) == {swept_twice.pk}
    assert current.count() == RUNS


def test_without_a_grade_by_the_primary_judge_the_newest_is_current(
    swept_twice: RubricRevision, repository: Repository
) -> None:
    JudgeSetting.objects.filter(repository=repository).update(judge="scripted:/elsewhere.json")
    refresh_current_grades(repository=repository)  # as services.judges.set_judges does
    newest = {
        max(RunGrade.objects.filter(run=run).values_list("pk", flat=True)) for run in AgentRun.objects.all()
    }
    current = RunGrade.objects.current()
    assert set(current.values_list("pk", flat=True)) == newest
    # The runs never judged (their tests failed) keep their grade against the admitted revision: no judge
    # could change it.
    assert set(current.filter(primary_judge="").values_list("revision_id", flat=True)) == {swept_twice.pk}


def test_the_queue_lists_each_disagreement_once(swept_twice: RubricRevision, repository: Repository) -> None:
    queue = Queue(repository, QueueKind.JUDGES, {})
    entries = queue.page(1, 100).entries
    assert queue.count() == len(entries) == RUNS - 2  # B1 on every judged run
    assert len({(e.repetition, e.item_id) for e in entries}) == len(entries)
    assert {RunGrade.objects.get(pk=e.grade_id).revision_id for e in entries} == {swept_twice.pk}


def test_every_page_says_13_runs_and_13_graded(
    swept_twice: RubricRevision, repository: Repository, task: Task, maintainer: User, client: Client
) -> None:
    summary = repository_runs_summary(repository)
    assert summary["runs_total"] == RUNS
    assert [(row["runs"], row["graded"]) for row in summary["runs_per_task"]] == [(RUNS, RUNS)]
    assert summary["queue_counts"][QueueKind.JUDGES] == RUNS - 2
    assert repository_report(repository, {}).runs == RUNS

    client.force_login(maintainer)
    page = client.get(reverse("rubrics:repository_detail", args=[repository.pk])).content.decode()
    assert f"<td>{RUNS}</td><td>{RUNS}</td>" in page
    task_page = client.get(reverse("rubrics:task_detail", args=[repository.pk, task.pk])).content.decode()
    assert task_page.count("1 earlier grade") == RUNS
    assert f"{RUNS} runs, each with its current grade" in task_page
    report = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    assert f"{RUNS} graded runs in this report" in report


def test_the_run_page_shows_older_grades_beside_the_text_they_were_graded_against(
    swept_twice: RubricRevision, repository: Repository, maintainer: User, client: Client
) -> None:
    run = AgentRun.objects.get(repetition=0)
    client.force_login(maintainer)
    page = client.get(reverse("rubrics:run_detail", args=[repository.pk, run.pk])).content.decode()
    current, history = page.split("<h2>History</h2>")
    assert f"revision {swept_twice.number}</a>" in current and NEW_CRITERION in current
    older = RubricRevision.objects.exclude(pk=swept_twice.pk).get()
    old_criterion = older.items.get(item_id="B1").criterion
    assert f"revision {older.number}</a>" in history and old_criterion in history
    assert NEW_CRITERION not in history


def test_the_run_page_is_404_outside_the_repository(
    swept_twice: RubricRevision, other_repository: Repository, outsider: User, client: Client
) -> None:
    run = AgentRun.objects.first()
    assert run is not None
    client.force_login(outsider)
    assert client.get(reverse("rubrics:run_detail", args=[other_repository.pk, run.pk])).status_code == 404
