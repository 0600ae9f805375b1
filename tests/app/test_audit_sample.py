"""The audit sample (issue 32 §1): judged runs drawn uniformly at random within each arm × model stratum,
each draw recording its inclusion probability; the Audit queue asks for every blocker the judge decided on
the drawn runs, and once each has a label the run counts for the corrected rate, as the queue page says."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import AuditDraw, HumanVerdict, ItemVerdict, QueueKind, ReportRow, Repository
from rubrics_app.services.reports.report import label_target
from rubrics_app.services.runs import audit_sample
from rubrics_app.services.runs import queue as review_queue
from tests.app.report_helpers import build_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(tmp_path: Path, repository: Repository) -> Repository:
    build_runs(tmp_path, repository)
    return repository


def judged_per_stratum(repository: Repository) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for arm, model in (
        ReportRow.objects.filter(repository=repository, current=True, human_checks=True)
        .exclude(human_items="null")
        .values_list("arm", "model")
    ):
        counts[(arm, model)] = counts.get((arm, model), 0) + 1
    return counts


def test_a_draw_is_uniform_within_each_stratum_and_records_its_probability(
    graded: Repository, reviewer: User
) -> None:
    strata = judged_per_stratum(graded)
    assert len(strata) == 2 and set(strata.values()) == {12, 9}  # arm 'plain' has 3 runs failing tests
    drawn = audit_sample.draw(graded, 3, Actor.member(reviewer), rng=random.Random(7))
    assert (drawn.runs, drawn.strata) == (6, 2)
    for (arm, model), judged in strata.items():
        draws = AuditDraw.objects.filter(repository=graded, arm=arm, model=model)
        assert draws.count() == 3
        assert [d.inclusion_probability for d in draws] == pytest.approx([3 / judged] * 3)
    # Every draw is of a judged run of its stratum; drawing again adds other runs and raises the share.
    audit_sample.draw(graded, 100, Actor.member(reviewer), rng=random.Random(8))
    assert AuditDraw.objects.count() == sum(strata.values())
    assert {d.inclusion_probability for d in AuditDraw.objects.all()} == {1.0}
    with pytest.raises(ValueError):
        audit_sample.draw(graded, 0, Actor.member(reviewer))


def test_the_draw_is_random_over_many_draws(graded: Repository, reviewer: User) -> None:
    # Each of the 9 runs of the smaller stratum is drawn (1 of 9) about as often as the others.
    rng = random.Random(11)
    (arm, model), judged = min(judged_per_stratum(graded).items(), key=lambda kv: kv[1])
    seen: dict[int, int] = {}
    for _ in range(180):
        AuditDraw.objects.all().delete()
        audit_sample.draw(graded, 1, Actor.member(reviewer), rng=rng)
        (run_id,) = AuditDraw.objects.filter(arm=arm, model=model).values_list("run_id", flat=True)
        seen[run_id] = seen.get(run_id, 0) + 1
    assert len(seen) == judged and max(seen.values()) < 3 * 180 / judged


def test_audited_runs_count_once_every_judged_blocker_is_labelled(graded: Repository, reviewer: User) -> None:
    audit_sample.draw(graded, 2, Actor.member(reviewer), rng=random.Random(3))
    drawn_runs = set(AuditDraw.objects.values_list("run_id", flat=True))
    queue = review_queue.Queue(graded, QueueKind.AUDIT, {}, user_id=reviewer.pk)
    entries = queue.page(1, 100).entries
    # Every blocker the primary judge decided on the drawn runs, and nothing else.
    expected = {
        (v.judge.grade_id, v.item_id)
        for v in ItemVerdict.objects.filter(
            judge__role="primary",
            kind="blocker",
            judge__grade__is_current=True,
            judge__grade__run_id__in=drawn_runs,
        ).select_related("judge")
    }
    assert {e.key for e in entries} == expected and len(entries) == len(expected) > 0
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("rubrics:queue", args=[graded.pk]), {"kind": "audit"}).content.decode()
    assert "0 runs count for the corrected rate now" in page
    assert "4 of 21 judged runs drawn" in page
    for entry in entries:
        url = reverse("rubrics:queue_label", args=[graded.pk, entry.grade_id, entry.item_id])
        assert client.post(url, {"verdict": "pass", "kind": "audit"}).status_code == 302
    target = label_target(graded)
    assert target is not None and target.labelled == len(drawn_runs)
    # Each label carries its run's inclusion probability.
    probabilities = dict(AuditDraw.objects.values_list("run_id", "inclusion_probability"))
    for label in HumanVerdict.objects.all():
        assert label.queue == "audit" and label.inclusion_probability == probabilities[label.run_id]
    page = client.get(reverse("rubrics:queue", args=[graded.pk]), {"kind": "audit"}).content.decode()
    assert re.search(r"4 runs count for the corrected rate now", page)
    assert queue.reviewed_count() == queue.total()


def test_the_report_weighs_audited_runs_by_their_current_draw(graded: Repository, reviewer: User) -> None:
    # Issue 31 §3: an audited run weighs 1 / its stratum's drawn share; a later draw in the stratum raises
    # the share of the runs drawn before, and their labels' with it.
    from rubrics_app.services.reports.report import repository_report

    audit_sample.draw(graded, 2, Actor.member(reviewer), rng=random.Random(3))
    client = Client()
    client.force_login(reviewer)
    for entry in review_queue.Queue(graded, QueueKind.AUDIT, {}, user_id=reviewer.pk).page(1, 100).entries:
        url = reverse("rubrics:queue_label", args=[graded.pk, entry.grade_id, entry.item_id])
        assert client.post(url, {"verdict": "pass", "kind": "audit"}).status_code == 302
    labelled_runs = set(HumanVerdict.objects.values_list("run_id", flat=True))
    before = dict(HumanVerdict.objects.values_list("run_id", "inclusion_probability"))
    first = repository_report(graded, {}).report.judge_accuracy
    audit_sample.draw(graded, 1, Actor.member(reviewer), rng=random.Random(4))
    drawn = dict(AuditDraw.objects.values_list("run_id", "inclusion_probability"))
    for run_id, probability in HumanVerdict.objects.values_list("run_id", "inclusion_probability"):
        assert probability == drawn[run_id] > before[run_id]
    accuracy = repository_report(graded, {}).report.judge_accuracy
    assert accuracy.weighting == first.weighting == "inclusion_probability"
    assert accuracy.labelled == len(labelled_runs) == 4
    weights = [1 / drawn[run_id] for run_id in labelled_runs]  # strata of 12 and 9 runs: unequal weights
    assert accuracy.effective_labelled == pytest.approx(sum(weights) ** 2 / sum(w * w for w in weights))
    assert accuracy.effective_labelled is not None and accuracy.effective_labelled < 4
    assert not [w for w in repository_report(graded, {}).report.warnings if "uniform sampling" in w]
