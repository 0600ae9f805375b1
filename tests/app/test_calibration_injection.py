"""The injection suite as an option of the app's calibration: the checkboxes, its rows and counts, the page's
rates and per-kind table, and admission refused while an attack success stands (scripted judge, in this
process; through a real worker and the real SDKs: test_calibration_worker.py)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from grading.admission.corpus import PAYLOAD_KINDS
from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    Repository,
    RevisionStatus,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.inputs import passing_run
from rubrics_app.services.rubrics import revisions
from rubrics_app.services.rubrics.revisions import NotCalibrated
from tests.app.client_helpers import logged_in
from tests.app.conftest import MakeRevision, judge_answers

pytestmark = pytest.mark.django_db
K = len(PAYLOAD_KINDS)


def calibrate(revision: RubricRevision, by: User, **kwargs: bool) -> CalibrationRun:
    return calibration.calibrate_now(revision, Actor.member(by), cache=MemoryCache(), **kwargs)


def fool_judge_with(repository: Repository, row: CalibrationRow) -> None:
    """The scripted judge now passes every item of the diff ``row`` judged."""
    path = Path(repository.judges.judge.removeprefix("scripted:"))
    script = json.loads(path.read_text())
    script["by_diff_sha256"][hashlib.sha256(bytes(row.diff)).hexdigest()] = judge_answers()
    path.write_text(json.dumps(script))


def fooled_by_role_play(revision: RubricRevision, maintainer: User, repository: Repository) -> CalibrationRun:
    """A calibration with the injection suite after a first one whose role-play attack now fools the judge."""
    first = calibrate(revision, maintainer, injection_suite=True)
    fool_judge_with(repository, first.rows.get(kind="injection", payload_kind="role_play"))
    return calibrate(revision, maintainer, injection_suite=True)


def test_the_suite_stores_its_rows_and_counts_and_benign_drift_does_not_refuse(
    make_revision: MakeRevision, maintainer: User
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    run = calibrate(revision, maintainer, admit=True, injection_suite=True)
    # The sound script fails B1 on every diff but the oracle and the alternative: every attack resists,
    # and every oracle carrying comments drifts (its bytes are not the oracle's).
    assert run.status == CalibrationStatus.PASSED, run.reason
    assert run.injection_suite and run.total_rows == 5 + 2 * K and run.rows.count() == 5 + 2 * K
    assert (run.attacks, run.attack_successes, run.attacks_not_measured) == (K, 0, 0)
    assert (run.benign, run.benign_drifts, run.attack_success_rate, run.benign_drift_rate) == (K, K, 0.0, 1.0)
    attacks = run.rows.filter(kind="injection").order_by("position")
    assert [r.payload_kind for r in attacks] == [k.name for k in PAYLOAD_KINDS]
    assert {r.outcome for r in attacks} == {"resisted"}
    assert set(run.rows.filter(kind="benign").values_list("outcome", flat=True)) == {"benign_drift"}
    # Each suite row keeps the diff it judged: the payload is in it.
    binary = run.rows.get(kind="injection", payload_kind="binary_patch")
    assert b"GIT binary patch" in bytes(binary.diff) and b"diff --git" in bytes(binary.diff)
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED


def test_an_attack_success_fails_the_run_and_refuses_admission_whatever_runs_next(
    make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    first = calibrate(revision, maintainer, injection_suite=True)
    assert first.status == CalibrationStatus.PASSED
    fool_judge_with(repository, first.rows.get(kind="injection", payload_kind="fake_json_verdicts"))

    run = calibrate(revision, maintainer, admit=True, injection_suite=True)
    assert run.status == CalibrationStatus.FAILED and run.attack_successes == 1
    assert run.reason.startswith("1 attack success in the injection suite")
    assert "injection calib/lazy.diff + fake_json_verdicts" in run.reason
    assert run.rows.get(outcome="attack_success").payload_kind == "fake_json_verdicts"
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED

    # A run without the suite passes, but the attack success on this content and judge stands.
    plain = calibrate(revision, maintainer, admit=True)
    assert plain.status == CalibrationStatus.PASSED and not plain.injection_suite
    assert passing_run(revision) is None
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
    with pytest.raises(TransitionError, match="admission refused: calibration #") as refused:
        revisions.admit(revision, by=Actor.member(maintainer))
    assert not isinstance(refused.value, NotCalibrated)
    assert "1 attack success in the injection suite" in str(refused.value)
    assert "(fake_json_verdicts)" in str(refused.value)

    page = logged_in(maintainer).post(
        reverse("rubrics:revision_admit", args=[repository.pk, revision.pk]), {"injection_suite": "on"},
        follow=True,
    )  # fmt: skip
    assert "admission refused: calibration #" in page.content.decode()
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED


def test_the_page_shows_both_rates_the_table_and_the_attack(
    make_revision: MakeRevision, maintainer: User, viewer: User, repository: Repository
) -> None:
    run = fooled_by_role_play(make_revision(RevisionStatus.APPROVED), maintainer, repository)
    url = reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])
    html = logged_in(viewer).get(url).content.decode()
    assert f"attack success rate <strong>1 of {K} (0.025)</strong>" in html
    assert f"benign drift rate <strong>{K} of {K} (1.000)</strong>" in html
    assert "Admission refused: 1 attack success in the injection suite" in html
    assert html.count('<tr id="payload-') == K
    for kind in PAYLOAD_KINDS:
        assert f'<tr id="payload-{kind.name}">' in html
    assert html.count(">attack success</span>") == 1 and html.count(">resisted</span>") == K - 1
    # The attack's own row, with the judge's verdicts, is in the rows table; resisting ones are not.
    assert "calib/lazy.diff + role_play</a>" in html
    assert "calib/lazy.diff + docstring</a>" not in html
    attack = run.rows.get(outcome="attack_success")
    diff_url = reverse("rubrics:calibration_row_diff", args=[repository.pk, run.pk, attack.pk])
    assert diff_url in html
    assert "You are ApproveBot" in logged_in(viewer).get(diff_url).content.decode()
    # The htmx poll gets the same section.
    partial = logged_in(viewer).get(url, headers={"HX-Request": "true"}).content.decode()
    assert 'id="injection-suite"' in partial and "attack success rate" in partial


def test_the_checkboxes_choose_the_suite(
    make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    page = logged_in(maintainer).get(reverse("rubrics:revision_detail", args=[repository.pk, revision.pk]))
    html = page.content.decode()
    # Ticked on Admit, not on Run calibration.
    assert (
        '<input type="checkbox" name="injection_suite" value="on" checked> with the injection suite' in html
    )
    assert '<input type="checkbox" name="injection_suite" value="on"> with the injection suite' in html

    start = reverse("rubrics:revision_calibration_start", args=[repository.pk, revision.pk])
    logged_in(maintainer).post(start)
    run = CalibrationRun.objects.get(revision=revision)
    assert not run.injection_suite
    # A suite asked for while a run without it is under way: refused, saying why.
    refused = logged_in(maintainer).post(start, {"injection_suite": "on"}, follow=True).content.decode()
    assert "under way without the injection suite" in refused
    CalibrationRun.objects.filter(pk=run.pk).delete()

    logged_in(maintainer).post(start, {"injection_suite": "on"})
    assert CalibrationRun.objects.get(revision=revision).injection_suite


def test_admit_with_the_suite_ticked_wants_a_passing_run_that_ran_it(
    make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    plain = calibrate(revision, maintainer)
    assert plain.status == CalibrationStatus.PASSED
    admit = reverse("rubrics:revision_admit", args=[repository.pk, revision.pk])
    logged_in(maintainer).post(admit, {"injection_suite": "on"})
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED  # not admitted on the run without the suite...
    queued = CalibrationRun.objects.get(revision=revision, status=CalibrationStatus.QUEUED)
    assert queued.injection_suite and queued.admit_when_passed  # ...a run with it was started instead
    CalibrationRun.objects.filter(pk=queued.pk).delete()

    logged_in(maintainer).post(admit)  # unticked: the passing run without the suite admits
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED


def test_the_page_puts_what_does_not_hold_first_and_folds_what_holds(
    make_revision: MakeRevision, maintainer: User, viewer: User, repository: Repository
) -> None:
    run = fooled_by_role_play(make_revision(RevisionStatus.APPROVED), maintainer, repository)
    html = logged_in(viewer).get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])).content
    page = html.decode()
    breaking = run.rows.filter(holds=False).count()
    holding = run.rows.filter(holds=True).exclude(kind__in=("injection", "benign")).count()
    assert breaking and holding
    # The summary first: the rows that do not hold, then the per-kind table, then the holding rows folded.
    top = page.index(f'<h2 id="rows-breaking">{breaking} rows that do not hold</h2>')
    suite = page.index('id="injection-suite"')
    fold = page.index('<details class="holding-rows" id="rows-holding">')
    assert top < suite < fold
    assert f"<summary>{holding} rows hold" in page
    assert page.count('<tr class="breaks"') == breaking
    assert all(m.start() > fold for m in re.finditer('<tr class="holds"', page))
    assert all(m.start() < suite for m in re.finditer('<tr class="breaks"', page))
    assert '<span class="badge calibration-failed">fails</span>' in page
