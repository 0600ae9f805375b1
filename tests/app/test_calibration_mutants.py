"""Mutants of the oracle in the app: the calibration option, the mutants stored beside the admission rows with
their diffs and counts, and harmless marks (maintainers only, per revision content and mutant id)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from grading.judge.cache import MemoryCache
from grading.mutants.derive import Mutant, derive_mutants
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    CalibrationMutant,
    CalibrationRun,
    CalibrationStatus,
    HarmlessMutant,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    Task,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.rubrics.task_files import set_task_files
from tests.app.calibration_helpers import multi_file_oracle
from tests.app.client_helpers import logged_in
from tests.app.conftest import ALT_DIFF, MakeRevision, judge_answers, rubric_data, run_queued_calibration


class Setup:
    def __init__(self, task: Task, repository: Repository, maintainer: User, tmp_path: Path) -> None:
        self.oracle = multi_file_oracle(tmp_path)
        set_task_files(task, {"oracle.diff": self.oracle}, by=Actor.member(maintainer))
        self.mutants = derive_mutants(self.oracle).mutants
        self.docs = self.one("revert-file", "docs/errors.md")
        self.cpu_only = self.one("one-place", "keeps the fix only in hunk 1 of 1 in src/fraction.py")
        self.gpu_only = self.one("one-place", "keeps the fix only in hunk 1 of 1 in src/gpu/fraction.py")
        # B1 fails by default (caught); the oracle, the alternative, the docs and the CPU-only fix pass.
        script: dict[str, Any] = {"default": judge_answers(("B1",)), "by_diff_sha256": {}}
        for diff in (self.oracle, ALT_DIFF, self.docs.diff, self.cpu_only.diff):
            script["by_diff_sha256"][hashlib.sha256(diff).hexdigest()] = judge_answers()
        path = tmp_path / "mutants-judge.json"
        path.write_text(json.dumps(script))
        JudgeSetting.objects.filter(repository=repository).update(judge=f"scripted:{path}")

    def one(self, kind: str, text: str) -> Mutant:
        [found] = [m for m in self.mutants if m.kind == kind and text in m.description]
        return found


@pytest.fixture
def setup(task: Task, repository: Repository, maintainer: User, tmp_path: Path) -> Setup:
    return Setup(task, repository, maintainer, tmp_path)


def page_url(run: CalibrationRun) -> str:
    return reverse("rubrics:calibration_detail", args=[run.revision.task.repository_id, run.pk])


def mark_url(mutant: CalibrationMutant, action: str = "mutant_mark_harmless") -> str:
    run = mutant.run
    return reverse(f"rubrics:{action}", args=[run.revision.task.repository_id, run.pk, mutant.pk])


def calibrate(revision: RubricRevision, by: User, mutants: bool = True) -> CalibrationRun:
    return calibration.calibrate_now(revision, Actor.member(by), mutants=mutants, cache=MemoryCache())


@pytest.mark.django_db
def test_mutants_are_judged_beside_the_rows_and_counted_on_the_run(
    setup: Setup, make_revision: MakeRevision, maintainer: User
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    plain = calibrate(revision, maintainer, mutants=False)
    assert plain.status == CalibrationStatus.PASSED, plain.reason
    assert not plain.with_mutants and plain.mutants_total is None and not plain.mutants.exists()
    run = calibrate(revision, maintainer)
    # The admission verdict is the same: every row holds, whatever the mutants.
    assert run.status == CalibrationStatus.PASSED, run.reason
    assert [(r.kind, r.holds) for r in run.rows.all()] == [(r.kind, r.holds) for r in plain.rows.all()]
    assert run.with_mutants and run.total_rows == 5
    stored = list(run.mutants.order_by("position"))
    assert [(m.mutant_id, bytes(m.diff)) for m in stored] == [(m.id, m.diff) for m in setup.mutants]
    assert len(stored) == 3
    by_id = {m.mutant_id: m for m in stored}
    assert by_id[setup.gpu_only.id].caught and by_id[setup.gpu_only.id].blockers_failed == ["B1"]
    assert by_id[setup.docs.id].mergeable is True and not by_id[setup.docs.id].caught
    assert by_id[setup.cpu_only.id].actual == "still mergeable: every measured blocker passes"
    assert [v["item_id"] for v in by_id[setup.gpu_only.id].verdicts] == ["B1", "N1", "N2", "N3"]
    assert [(v["verdict"], v["finding"]) for v in by_id[setup.gpu_only.id].verdicts][0] == (
        "fail",
        "violated",
    )
    assert (run.mutants_total, run.mutants_caught, run.mutants_harmless) == (3, 1, 0)
    # The mutants' judge calls count with the run's (the spend cap sees them).
    assert run.calls == plain.calls + 3 and sum(m.calls for m in stored) == 3


@pytest.mark.django_db
def test_mutants_are_judged_in_memory_with_no_scratch_folder(
    setup: Setup, make_revision: MakeRevision, maintainer: User, scratch_folders: list[str]
) -> None:
    run = calibrate(make_revision(RevisionStatus.APPROVED), maintainer)
    assert run.status == CalibrationStatus.PASSED, run.reason
    assert (run.mutants_total, run.mutants_caught, run.mutants_note) == (3, 1, "")
    assert scratch_folders == []


@pytest.mark.django_db
def test_the_page_shows_the_mutants_and_their_diffs(
    setup: Setup, make_revision: MakeRevision, maintainer: User, viewer: User, outsider: User
) -> None:
    run = calibrate(make_revision(RevisionStatus.APPROVED), maintainer)
    html = logged_in(viewer).get(page_url(run)).content.decode()
    assert "Mutants of the oracle" in html
    assert (
        "<strong>3</strong> mutants · <strong>1</strong> caught · <strong>0</strong> marked harmless" in html
    )
    for mutant in setup.mutants:
        assert mutant.id in html
    assert html.count("still mergeable</span>") == 2 and html.count(">caught</span>") == 1
    assert (
        '<span class="badge verdict-fail">fail</span> <span class="finding"' in html
        and "(violated)</span>:" in html
    )
    assert "Mark harmless" not in html  # a viewer sees the mutants, never the form
    assert "Mark harmless" in logged_in(maintainer).get(page_url(run)).content.decode()
    gpu_only = run.mutants.get(mutant_id=setup.gpu_only.id)
    diff_url = reverse(
        "rubrics:calibration_mutant_diff", args=[run.revision.task.repository_id, run.pk, gpu_only.pk]
    )
    assert diff_url in html
    diff_page = logged_in(viewer).get(diff_url)
    assert diff_page.status_code == 200
    text = diff_page.content.decode()
    assert 'id="diff-view"' in text and "src/gpu/fraction.py" in text and "docs/errors.md" in text
    assert (
        "src/fraction.py\n" not in text and "keeps the fix only in hunk 1 of 1 in src/gpu/fraction.py" in text
    )
    assert logged_in(outsider).get(diff_url).status_code == 404
    assert logged_in(outsider).get(page_url(run)).status_code == 404


@pytest.mark.django_db
def test_the_calibration_option_is_a_checkbox(
    setup: Setup, make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    client = logged_in(maintainer)
    detail = client.get(
        reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])
    ).content.decode()
    assert '<input type="checkbox" name="mutants">' in detail
    start = reverse("rubrics:revision_calibration_start", args=[repository.pk, revision.pk])
    assert client.post(start, {"mutants": "on"}).status_code == 302
    run = run_queued_calibration()
    assert run.with_mutants and run.mutants_total == 3 and run.status == CalibrationStatus.PASSED
    assert client.post(start).status_code == 302
    run = run_queued_calibration()
    assert not run.with_mutants and run.mutants_total is None and not run.mutants.exists()


@pytest.mark.django_db
def test_a_maintainer_marks_a_mutant_harmless_with_a_reason(
    setup: Setup, make_revision: MakeRevision, maintainer: User, reviewer: User, viewer: User, outsider: User
) -> None:
    run = calibrate(make_revision(RevisionStatus.APPROVED), maintainer)
    docs = run.mutants.get(mutant_id=setup.docs.id)
    reason = "the changelog is written at release time"
    assert logged_in(reviewer).post(mark_url(docs), {"reason": reason}).status_code == 403
    assert logged_in(viewer).post(mark_url(docs), {"reason": reason}).status_code == 403
    assert logged_in(outsider).post(mark_url(docs), {"reason": reason}).status_code == 404
    client = logged_in(maintainer)
    empty = client.post(mark_url(docs), {"reason": "   "}, follow=True)
    assert empty.status_code == 200 and "This field is required." in empty.content.decode()
    assert empty.redirect_chain[-1][0].endswith(f"#mutant-{docs.position}")
    assert not HarmlessMutant.objects.exists()
    response = client.post(mark_url(docs), {"reason": reason})
    assert response.status_code == 302 and response["Location"].endswith(f"#mutant-{docs.position}")
    mark = HarmlessMutant.objects.get()
    assert (mark.mutant_id, mark.rubric_sha256, mark.reason, mark.marked_by) == (
        docs.mutant_id, run.rubric_sha256, reason, maintainer)  # fmt: skip
    run.refresh_from_db()
    assert (run.mutants_total, run.mutants_caught, run.mutants_harmless) == (3, 1, 1)
    assert AuditEvent.objects.filter(verb=AuditVerb.MUTANT_HARMLESS, detail__mutant=docs.mutant_id).exists()
    html = client.get(page_url(run)).content.decode()
    assert reason in html and ">harmless</span>" in html
    # Twice, or a caught mutant: refused, nothing changes.
    client.post(mark_url(docs), {"reason": "again"})
    caught = run.mutants.get(mutant_id=setup.gpu_only.id)
    client.post(mark_url(caught), {"reason": "it is fine"})
    assert HarmlessMutant.objects.count() == 1
    # Taking it back: maintainers only.
    assert logged_in(reviewer).post(mark_url(docs, "mutant_unmark")).status_code == 403
    assert client.post(mark_url(docs, "mutant_unmark")).status_code == 302
    assert not HarmlessMutant.objects.exists()
    run.refresh_from_db()
    assert run.mutants_harmless == 0
    assert AuditEvent.objects.filter(verb=AuditVerb.MUTANT_UNMARKED).exists()


@pytest.mark.django_db
def test_marks_belong_to_the_revision_content(
    setup: Setup, make_revision: MakeRevision, maintainer: User, task: Task
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    first = calibrate(revision, maintainer)
    client = logged_in(maintainer)
    client.post(mark_url(first.mutants.get(mutant_id=setup.docs.id)), {"reason": "docs only"})
    # The same content calibrated again: the mark holds, counted when the run finishes.
    again = calibrate(revision, maintainer)
    assert (again.mutants_total, again.mutants_caught, again.mutants_harmless) == (3, 1, 1)
    assert "docs only" in client.get(page_url(again)).content.decode()
    # Another rubric content of the same task: nothing is marked there.
    other = make_revision(RevisionStatus.APPROVED, data=rubric_data(task=task.task_id, intent="Refuse > 1."))
    assert other.rubric_sha256() != revision.rubric_sha256()
    third = calibrate(other, maintainer)
    assert third.mutants_harmless == 0
    assert "docs only" not in client.get(page_url(third)).content.decode()
