"""The demo (manage.py load_demo) goes round the whole loop: two judges, every approved revision admissible
with the injection suite, and a sweep that fills the review queue (issue 21 §6)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from grading import MemoryCache, load_scripted
from rubrics_app.access import Actor
from rubrics_app.management.commands.load_demo import DEMO_REPETITIONS
from rubrics_app.models import (
    CalibrationStatus,
    GradeSource,
    Job,
    JobKind,
    JudgeSetting,
    QueueKind,
    Repository,
    ReviewState,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.rubrics import revisions
from rubrics_app.services.runs.queue import Queue
from rubrics_app.services.sweeps import run as sweeps
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings: Any, tmp_path: Path) -> Repository:
    settings.VAR_DIR = tmp_path / "var"
    call_command("load_demo", stdout=io.StringIO())
    return Repository.objects.get(name="shapes")


def test_the_demo_sets_two_scripted_judges(demo: Repository, tmp_path: Path) -> None:
    judges = JudgeSetting.objects.get(repository=demo)
    demo_dir = (tmp_path / "var" / "demo").resolve()
    assert judges.judge == f"scripted:{demo_dir / 'judge_scripted.json'}"
    assert judges.second_judge == f"scripted:{demo_dir / 'second_judge_scripted.json'}"
    primary, _ = load_scripted(demo_dir / "judge_scripted.json")
    second, _ = load_scripted(demo_dir / "second_judge_scripted.json")
    # The second judge disagrees on B1 and N1, and only there.
    assert primary.default["B1"].verdict != second.default["B1"].verdict
    assert primary.default["N1"].verdict != second.default["N1"].verdict
    assert primary.default["B2"].verdict == second.default["B2"].verdict
    # Its admission calibration ran in the command: the job ended, saying the revision was admitted.
    (job,) = Job.objects.filter(kind=JobKind.CALIBRATE_REVISION)
    assert job.result is not None
    assert (job.status, job.result["status"], job.result["admitted"]) == ("done", "passed", True)


def test_a_sweep_fills_the_queue_with_the_judges_disagreements(demo: Repository) -> None:
    # The example task's edited draft, approved and admitted: its runs are graded anew by both judges.
    task = Task.objects.get(repository=demo, task_id="fix_clockwise_polygon_area")
    draft = task.revisions.get(status=RevisionStatus.DRAFT)
    as_demo = Actor.command_line()
    for item in draft.ordered_items():
        if item.review_state != ReviewState.APPROVED:
            revisions.approve_item(item, by=as_demo)
    run = calibration.calibrate_now(draft, as_demo, admit=True, cache=MemoryCache())
    assert run.status == CalibrationStatus.PASSED, run.reason
    sweep = sweeps.sweep_now(demo, as_demo, cache=MemoryCache())
    assert sweep.job is not None and sweep.job.result is not None, sweep.job.error
    assert sweep.job.result["graded"] == 2 * DEMO_REPETITIONS
    # The queue holds the sweep's grades, each disagreeing on B1 and N1 (the second judge's script).
    entries = Queue(demo, QueueKind.JUDGES, {}).page(1, 1000).entries
    swept = RunGrade.objects.filter(pk__in=[e.grade_id for e in entries])
    assert {grade.source for grade in swept} == {GradeSource.SWEEP}
    assert {grade.revision_id for grade in swept} == {draft.pk}
    assert Counter((e.arm, e.item_id) for e in entries) == {
        ("baseline", "B1"): DEMO_REPETITIONS,
        ("baseline", "N1"): DEMO_REPETITIONS,
        ("guidance", "B1"): DEMO_REPETITIONS,
        ("guidance", "N1"): DEMO_REPETITIONS,
    }


def test_every_approved_demo_revision_is_admitted_with_the_suite(demo: Repository) -> None:
    approved = RubricRevision.objects.filter(task__repository=demo, status=RevisionStatus.APPROVED)
    assert approved.exists()
    for revision in approved:
        run = calibration.calibrate_now(
            revision, Actor.command_line(), admit=True, injection_suite=True, cache=MemoryCache()
        )
        assert run.status == CalibrationStatus.PASSED, run.reason
        # The scripted judge knows the suite's rows: no benign drift, no attack success.
        assert run.benign > 0 and run.attacks > 0
        drifted = [(r.name, r.actual) for r in run.rows.all() if r.kind == "benign" and not r.holds]
        assert (run.benign_drifts, run.attack_successes, run.attacks_not_measured) == (0, 0, 0), drifted
        revision.refresh_from_db()
        assert revision.status == RevisionStatus.ADMITTED


def test_the_bounding_box_oracle_is_a_real_fix(demo: Repository, tmp_path: Path) -> None:
    task = Task.objects.get(repository=demo, task_id="add_bounding_box")
    checkout = GitRepo(tmp_path / "var/demo/shapes")
    patch = tmp_path / "oracle.diff"
    patch.write_bytes(task.task_file("oracle.diff"))
    checkout.git("apply", str(patch))
    # The checkout's own tests pass with it, the new one included.
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=checkout.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "10 passed" in tests.stdout


# --- the login page ---------------------------------------------------------------------------------------


def test_the_login_page_names_the_demo_users_while_the_demo_runs(
    demo: Repository, settings: Any, client: Client
) -> None:
    settings.RUBRICS_DEMO = True
    page = client.get("/accounts/login/").content.decode()
    assert 'id="demo-logins"' in page
    for text in (
        "<code>demo</code> (maintainer)",
        "<code>demo-reviewer</code> (reviewer)",
        "<code>demo</code>.",
    ):
        assert text in page


def test_the_login_page_names_no_one_without_the_demo_setting(demo: Repository, client: Client) -> None:
    # The users exist (load_demo ran), but this server is not the demo: no names, no password.
    page = client.get("/accounts/login/").content.decode()
    assert "demo-logins" not in page and "demo-reviewer" not in page


def test_the_login_page_names_no_one_when_the_demo_users_do_not_exist(settings: Any, client: Client) -> None:
    settings.RUBRICS_DEMO = True
    page = client.get("/accounts/login/").content.decode()
    assert "demo-logins" not in page


@pytest.fixture
def reviewer_of_demo(demo: Repository) -> Any:
    from django.contrib.auth.models import User

    return User.objects.get(username="demo-reviewer")


def test_labelling_the_disagreements_and_auditing_20_runs_gives_a_corrected_rate(
    demo: Repository, reviewer_of_demo: Any
) -> None:
    """Issue 32's "done when": a reviewer labels the disagreements and audits 20 runs, and the report shows
    a corrected rate with its interval; export_labels prints every label. In the demo as load_demo ships it:
    its runs are enough for an audit of 20."""
    import math
    import random

    from django.core.cache import cache

    from rubrics_app.models import HumanVerdict, ItemVerdict
    from rubrics_app.services.reports.report import repository_report
    from rubrics_app.services.runs import audit_sample
    from rubrics_app.services.runs import queue as review_queue

    cache.clear()
    as_reviewer = Actor.member(reviewer_of_demo)

    def label_like_the_primary(kind: str) -> int:
        queue = Queue(demo, kind, {}, unlabelled_only=True, user_id=reviewer_of_demo.pk)
        entries = queue.page(1, 10_000).entries
        for entry in entries:
            grade = RunGrade.objects.get(pk=entry.grade_id)
            primary = ItemVerdict.objects.get(
                judge__grade=grade, judge__role="primary", item_id=entry.item_id
            )
            review_queue.label(grade, entry.item_id, primary.verdict, "", kind, as_reviewer)
        assert queue.reviewed_count() == queue.total()
        return len(entries)

    disagreements = label_like_the_primary(QueueKind.JUDGES)
    before = repository_report(demo, {}).report
    strata = len(audit_sample.judged_runs(demo))
    audit_sample.draw(demo, math.ceil(20 / strata), as_reviewer, rng=random.Random(32))
    assert audit_sample.summary(demo).drawn >= 20
    audited = label_like_the_primary(QueueKind.AUDIT)
    after = repository_report(demo, {}).report
    assert before.judge_accuracy.labelled < 20 <= after.judge_accuracy.labelled, (disagreements, audited)
    corrected = [cell.corrected_mergeable_rate for cell in after.cells if cell.corrected_mergeable_rate]
    assert all(rate.value is not None for rate in corrected)
    assert not any(cell.corrected_mergeable_rate for cell in before.cells)
    out = io.StringIO()
    call_command("export_labels", "--repository", demo.name, stdout=out)
    assert len(out.getvalue().splitlines()) == HumanVerdict.objects.count() == disagreements + audited


def test_the_demo_opens_with_its_runs_graded_against_the_admitted_revision(demo: Repository) -> None:
    """Issue 35: the shipped runs' grades are current (the admitted r1), not "a rubric not in the app ·
    provisional" until a sweep; the task page names each judge and the export to draft from."""
    from django.contrib.auth.models import User
    from django.urls import reverse

    task = Task.objects.get(repository=demo, task_id="fix_clockwise_polygon_area")
    admitted = task.revisions.get(status=RevisionStatus.ADMITTED)
    grades = RunGrade.objects.filter(run__task=task)
    assert grades.count() == 2 * DEMO_REPETITIONS
    assert {(g.revision_id, g.is_current, g.provisional) for g in grades} == {(admitted.pk, True, False)}
    client = Client()
    client.force_login(User.objects.get(username="demo"))
    page = client.get(reverse("rubrics:task_detail", args=[demo.pk, task.pk])).content.decode()
    runs = page[page.index('id="agent-runs"') : page.index("Judge disagreements on this task")]
    assert "a rubric not in the app" not in runs and "provisional" not in runs
    assert runs.count(f'<td class="graded">r{admitted.number} ') == 2 * DEMO_REPETITIONS
    # The judge by its name; its spec, a file path, on hover only.
    judge = JudgeSetting.objects.get(repository=demo).judge
    assert runs.count(f'<span class="muted judge" title="{judge}">scripted</span>') == 2 * DEMO_REPETITIONS
    assert runs.count(judge) == 2 * DEMO_REPETITIONS
    assert (
        '<p id="demo-export">In the demo, upload the example PR export '
        "<code>examples/pr_fix_clockwise_polygon_area.json</code>" in page
    )
