"""Issue 31's repros through the app: the report page's JSON computes each task once in a contrast and
corrects judge error only on the runs the judge decided, from the review queue's labels."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import (
    AgentRun,
    ItemVerdict,
    JudgeGrade,
    Repository,
    RunGrade,
    Task,
    refresh_current_grades,
)
from rubrics_app.services.report_rows import refresh_report_rows
from tests.app.report_rows import judged_details
from tests.app.runs_helpers import put_label

pytestmark = pytest.mark.django_db


def _details(outcome: str) -> dict[str, Any]:
    """metrics.json's details for a run that failed the tests (the judge not called), or that the judge
    passed or failed on its one blocker."""
    if outcome == "tests_fail":
        skipped = "not called: the tests failed"
        return {"status": "not_mergeable", "judge_skipped": skipped, "assessment": None}
    mergeable = outcome == "mergeable"
    return judged_details(mergeable, ["B1"] if mergeable else [], [] if mergeable else ["B1"], families=False)


def _grade(task: Task, arm: str, rep: int, outcome: str, human: bool | None = None) -> None:
    run = AgentRun.objects.create(
        task=task, arm=arm, model="m", repetition=rep, passed=outcome != "tests_fail",
        grade_json={"pass": outcome != "tests_fail"}, diff_sha256="0" * 64, diff_bytes=0,
    )  # fmt: skip
    details = _details(outcome)
    grade = RunGrade.objects.create(
        run=run, primary_judge="anthropic:claude-judge", status=details["status"],
        mergeable=outcome == "mergeable", merge_score=1.0 if outcome == "mergeable" else None,
        provisional=False, metrics={"details": details},
    )  # fmt: skip
    if outcome != "tests_fail":
        judge = JudgeGrade.objects.create(grade=grade, role="primary", judge="anthropic:claude-judge")
        verdict = "pass" if outcome == "mergeable" else "fail"
        ItemVerdict.objects.create(judge=judge, item_id="B1", kind="blocker", verdict=verdict, reason="r")
    if human is not None:
        label = "pass" if human else "fail"
        put_label(grade, "B1", label)


def _report(repository: Repository, viewer: User) -> dict[str, Any]:
    refresh_report_rows(RunGrade.objects.values_list("pk", flat=True))
    refresh_current_grades(runs=list(AgentRun.objects.values_list("pk", flat=True)))
    client = Client()
    client.force_login(viewer)
    response = client.get(reverse("rubrics:report_json", args=[repository.pk]))
    assert response.status_code == 200
    data: dict[str, Any] = json.loads(response.content)
    return data


def test_a_contrast_counts_each_task_once_through_the_app(repository: Repository, viewer: User) -> None:
    # Ten tasks, no arm effect; arm b ran each easy task 5 times and each hard one once, arm a the reverse.
    for t in range(10):
        task = Task.objects.create(repository=repository, task_id=f"t{t}", spec_prompt="x")
        easy = t < 5
        for arm, runs in (("a", 1 if easy else 5), ("b", 5 if easy else 1)):
            for rep in range(runs):
                _grade(task, arm, rep, "mergeable" if easy else "tests_fail")
    data = _report(repository, viewer)
    [contrast] = [c for c in data["contrasts"] if c["metric"] == "test_pass_rate"]
    assert contrast["value"] == 0.0 and contrast["method"] == "no_spread"
    assert contrast["ci"][0] < 0 < contrast["ci"][1]


def test_the_correction_gives_the_truth_through_the_app(repository: Repository, viewer: User) -> None:
    # Per task 10 runs: 5 fail the tests; of the 5 judged, 2 truly mergeable (the judge passes them) and 3
    # not (the judge passes 1). Observed 0.30, true 0.20; the queue labels every judged run.
    for t in range(10):
        task = Task.objects.create(repository=repository, task_id=f"t{t}", spec_prompt="x")
        for rep in range(10):
            if rep < 5:
                _grade(task, "a", rep, "tests_fail")
            else:
                _grade(task, "a", rep, "mergeable" if rep < 8 else "blocker", human=rep < 7)
    data = _report(repository, viewer)
    [cell] = data["cells"]
    assert cell["mergeable_rate"]["value"] == pytest.approx(0.3)
    assert data["judge_accuracy"]["labelled"] == 50
    assert cell["corrected_mergeable_rate"]["value"] == pytest.approx(0.2)


def test_the_page_shows_the_corrected_contrasts(repository: Repository, viewer: User) -> None:
    # Both arms truly 0.20, the judge erring more in arm b; each arm's own labels correct it.
    for t in range(10):
        task = Task.objects.create(repository=repository, task_id=f"t{t}", spec_prompt="x")
        for arm, called in (("a", 8), ("b", 9)):
            for rep in range(10):
                if rep < 5:
                    _grade(task, arm, rep, "tests_fail")
                else:
                    _grade(task, arm, rep, "mergeable" if rep < called else "blocker", human=rep < 7)
    data = _report(repository, viewer)
    [corrected] = data["corrected_contrasts"]
    assert corrected["value"] == pytest.approx(0.0, abs=1e-12)
    client = Client()
    client.force_login(viewer)
    html = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    table = html.split('id="report-corrected-contrasts"')[1].split("</table>")[0]
    assert "b − a (model m)" in table and "+0.0 pp" in table
