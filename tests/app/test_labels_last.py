"""Labels last (issue 32 §3): a label belongs to the run, the item's criterion wording and the reviewer, not
to a grade. A new revision that changes one non-blocker, admitted and swept again, leaves every other
item's labels standing (the queue still reviewed, the report still counting them); the changed item's label
is shown as for an earlier wording and the pair is asked again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import (
    HumanVerdict,
    JudgeSetting,
    QueueKind,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
)
from rubrics_app.services.runs import queue as review_queue
from tests.app.conftest import MakeRevision, judge_answers, rubric_data
from tests.app.sweep_helpers import import_runs, sweep

pytestmark = pytest.mark.django_db

RUNS = 5
NEW_N3 = "A test covers the boundary values 1.0 and 1.0000001."


def judged_grades() -> list[RunGrade]:
    return list(RunGrade.objects.current().exclude(primary_judge="").select_related("run").order_by("run_id"))


@pytest.fixture
def labelled_then_readmitted(
    admitted_revision: RubricRevision,
    make_revision: MakeRevision,
    repository: Repository,
    maintainer: User,
    reviewer: User,
    tmp_path: Path,
) -> RubricRevision:
    """Runs swept against r1 (the judges disagree on B1), a reviewer's labels on B1, N1 and N3 of every
    judged run, then r2 (N3 reworded, nothing else changed) admitted and swept again."""
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"default": judge_answers()}))
    JudgeSetting.objects.filter(repository=repository).update(second_judge=f"scripted:{second}")
    import_runs(repository, tmp_path / "runs", RUNS, failing_tests=(3,))
    sweep(repository, maintainer)
    as_reviewer = Actor.member(reviewer)
    for grade in judged_grades():
        review_queue.label(grade, "B1", "fail", "", QueueKind.JUDGES, as_reviewer)
        review_queue.label(grade, "N1", "pass", "", QueueKind.AGREED, as_reviewer)
        review_queue.label(grade, "N3", "pass", "", QueueKind.AGREED, as_reviewer)
    before = review_queue.Queue(repository, QueueKind.JUDGES, {})
    assert before.reviewed_count() == before.total() == RUNS - 1
    data = rubric_data(task=admitted_revision.task.task_id)
    data["non_blockers"][2]["criterion"] = NEW_N3
    newer = make_revision(RevisionStatus.ADMITTED, data=data)
    sweep(repository, maintainer)
    assert RunGrade.objects.count() == 2 * RUNS
    return newer


def test_readmission_keeps_the_labels_of_unchanged_items(
    labelled_then_readmitted: RubricRevision, repository: Repository, reviewer: User
) -> None:
    grades = judged_grades()
    assert {g.revision_id for g in grades} == {labelled_then_readmitted.pk}
    queue = review_queue.Queue(repository, QueueKind.JUDGES, {})
    # The queue of the new grades: the same B1 disagreements, still reviewed.
    assert queue.total() == RUNS - 1
    assert queue.reviewed_count() == RUNS - 1
    assert queue.first_unreviewed() is None
    for grade in grades:
        assert [h.verdict for h in review_queue.standing_labels(grade, "B1")] == ["fail"]
        assert [h.verdict for h in review_queue.standing_labels(grade, "N1")] == ["pass"]
        # N3 was reworded: its label is for the earlier wording, kept but not counted.
        assert not review_queue.standing_labels(grade, "N3").exists()
        assert [h.verdict for h in review_queue.earlier_labels(grade, "N3")] == ["pass"]
    # The report's labels are the new grades': B1 and N1 of every judged run, N3 of none.
    settled = review_queue.human_verdicts_by_grade(repository)
    assert {(grade_id, item) for grade_id, item, _ in settled} == {
        (g.pk, item) for g in grades for item in ("B1", "N1")
    }
    assert HumanVerdict.objects.count() == 3 * (RUNS - 1)  # nothing deleted


def test_the_pair_page_shows_the_earlier_wordings_label_and_asks_again(
    labelled_then_readmitted: RubricRevision, repository: Repository, reviewer: User
) -> None:
    grade = judged_grades()[0]
    client = Client()
    client.force_login(reviewer)
    page = client.get(
        reverse("rubrics:queue_entry", args=[repository.pk, grade.pk, "N3"]) + "?kind=agreed"
    ).content.decode()
    assert "For an earlier wording: pass by reviewer" in page
    assert NEW_N3 in page
    # Labelling it again records a label for the new wording beside the old one.
    client.post(
        reverse("rubrics:queue_label", args=[repository.pk, grade.pk, "N3"]),
        {"verdict": "fail", "kind": "agreed"},
    )
    assert [h.verdict for h in review_queue.standing_labels(grade, "N3")] == ["fail"]
    assert HumanVerdict.objects.filter(run=grade.run, item_id="N3").count() == 2
    b1 = client.get(reverse("rubrics:queue_entry", args=[repository.pk, grade.pk, "B1"]) + "?kind=judges")
    assert "For an earlier wording" not in b1.content.decode()
