"""RunGrade.objects.current() as one grouping over the runs' grades, not a subquery per grade: the same
grades as the rule says (checked against the rule written out in Python, on runs graded every way), and a
query plan with no correlated subquery, so its cost does not multiply with the number of grades (at 100,000
runs the correlated form took seconds on PostgreSQL: benchmarks/report_at_scale.py)."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest
from django.db import connection

from rubrics_app.models import (
    AgentRun,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    Task,
)
from tests.app.conftest import MakeRevision

pytestmark = pytest.mark.django_db

OTHER_JUDGE = "anthropic:an-older-judge"


def _rule(grades: list[RunGrade]) -> set[int]:
    """The current grade of each run, as the model's docstring states the rule."""
    judges = dict(JudgeSetting.objects.values_list("repository_id", "judge"))
    by_run: dict[int, list[RunGrade]] = defaultdict(list)
    for grade in grades:
        by_run[grade.run_id].append(grade)
    picked = set()
    for run_grades in by_run.values():
        keyed = [
            g
            for g in run_grades
            if g.revision is not None
            and g.revision.status == RevisionStatus.ADMITTED
            and g.revision.task_id == g.run.task_id
            and (g.primary_judge == "" or g.primary_judge == judges.get(g.run.task.repository_id))
        ]
        picked.add(max(g.pk for g in (keyed or run_grades)))
    return picked


@pytest.fixture
def graded_every_way(
    make_revision: MakeRevision, task: Task, repository: Repository, other_repository: Repository
) -> list[RunGrade]:
    """Runs in two repositories (one without judges), each with 1 to 4 grades drawn at random: against the
    task's retired or admitted revision, another task's admitted one, a draft, or none; by the primary
    judge, no judge, or another judge; older or newer than one another."""
    retired = make_revision(RevisionStatus.ADMITTED)
    admitted = make_revision(RevisionStatus.ADMITTED)
    draft = make_revision(RevisionStatus.DRAFT)
    retired.refresh_from_db()
    assert retired.status == RevisionStatus.RETIRED
    primary = JudgeSetting.objects.get(repository=repository).judge
    elsewhere = Task.objects.create(repository=other_repository, task_id="elsewhere")
    revisions: list[RubricRevision | None] = [retired, admitted, draft, None]
    rng = random.Random(23)
    for n, run_task in enumerate([task] * 30 + [elsewhere] * 10):
        run = AgentRun.objects.create(
            task=run_task, arm="a", model="m", repetition=n, passed=True, diff_sha256="0" * 64, diff_bytes=0
        )
        for k in range(rng.randint(1, 4)):
            RunGrade.objects.create(
                run=run,
                rubric_sha256=f"{k}",
                revision=rng.choice(revisions),
                primary_judge=rng.choice([primary, "", OTHER_JUDGE]),
                status="mergeable",
            )
    return list(RunGrade.objects.select_related("revision", "run__task"))


def test_it_picks_what_the_rule_says(graded_every_way: list[RunGrade], repository: Repository) -> None:
    expected = _rule(graded_every_way)
    assert set(RunGrade.objects.current().values_list("pk", flat=True)) == expected
    assert AgentRun.objects.count() == len(expected)  # one per run
    # The rule looks at every grade of a run, whatever the queryset narrowed before asking.
    in_repository = RunGrade.objects.filter(run__task__repository=repository)
    assert set(in_repository.current().values_list("pk", flat=True)) == expected & set(
        in_repository.values_list("pk", flat=True)
    )
    unjudged = RunGrade.objects.filter(primary_judge="")
    assert set(unjudged.current().values_list("pk", flat=True)) == expected & set(
        unjudged.values_list("pk", flat=True)
    )
    assert (
        set(RunGrade.objects.history().values_list("pk", flat=True))
        == {g.pk for g in graded_every_way} - expected
    )
    # Both sides of the rule are exercised here: some runs' current grade is not their newest.
    newest = {
        max(g.pk for g in graded_every_way if g.run_id == run) for run in {g.run_id for g in graded_every_way}
    }
    assert expected != newest
    assert expected & newest


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plan")
def test_its_plan_has_no_subquery_per_grade(graded_every_way: list[RunGrade], repository: Repository) -> None:
    query = RunGrade.objects.filter(run__task__repository=repository).current().values("pk")
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert "CORRELATED" not in plan, plan
