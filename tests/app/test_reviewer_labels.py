"""Each reviewer's own label (issue 32 §2): a repository asks for N labels per pair; a pair leaves a
reviewer's list once they labelled it and the whole queue once N did. Two reviewers who disagree send the
pair to the maintainers' adjudication list; the queue, the adjudication list and the report show the
agreement between reviewers; the adjudicated verdict is the one the report counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from grading import reviewer_agreement
from rubrics_app.models import HumanVerdict, Membership, QueueKind, Repository, Role, RubricRevision, RunGrade
from rubrics_app.services.reports.report import label_target
from rubrics_app.services.runs import queue as review_queue
from tests.app.client_helpers import logged_in
from tests.app.runs_helpers import graded_pairs, import_graded

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_reviewer(repository: Repository) -> User:
    user = User.objects.create_user(username="second-reviewer", password="x")
    Membership.objects.create(repository=repository, user=user, role=Role.REVIEWER)
    return user


@pytest.fixture
def graded(tmp_path: Path, repository: Repository, admitted_revision: RubricRevision) -> RubricRevision:
    """Two runs whose judges disagree on B1 and N2: four pairs."""
    import_graded(tmp_path, repository, admitted_revision)
    return admitted_revision


def label(
    client: Client, repository: Repository, pair: tuple[RunGrade, str], verdict: str, **extra: str
) -> int:
    url = reverse("rubrics:queue_label", args=[repository.pk, pair[0].pk, pair[1]])
    response = client.post(url, {"verdict": verdict, "kind": "judges", **extra})
    return int(response.status_code)


def test_krippendorffs_alpha_by_hand() -> None:
    # Coincidences: pass-pass 2, fail-fail 2, pass-fail 1 and fail-pass 1; n = 6, each value 3 times:
    # alpha = 1 - (n - 1) * observed / expected = 1 - 5 * 2 / (3 * 3 * 2).
    found = reviewer_agreement([["pass", "pass"], ["fail", "fail"], ["pass", "fail"], ["pass"]])
    assert found.alpha == pytest.approx(1 - 10 / 18)
    assert (found.pairs, found.disagreeing) == (3, 1)
    assert reviewer_agreement([["pass", "pass"], ["pass", "pass"]]).alpha is None  # no variation
    perfect = reviewer_agreement([["pass", "pass"], ["fail", "fail"], ["pass", "pass", "pass"]])
    assert perfect.alpha == pytest.approx(1.0)
    assert perfect.low is not None and perfect.high is not None and perfect.low <= 1.0 <= perfect.high + 1e-9


def test_n_labels_per_pair(
    reviewer: User, second_reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    repository.labels_per_pair = 2
    repository.save()
    for pair in graded_pairs():
        assert label(logged_in(reviewer), repository, pair, "pass") == 302
    mine = review_queue.Queue(repository, QueueKind.JUDGES, {}, unlabelled_only=True, user_id=reviewer.pk)
    theirs = review_queue.Queue(
        repository, QueueKind.JUDGES, {}, unlabelled_only=True, user_id=second_reviewer.pk
    )
    # Out of the reviewer's own list, still in the other's; not reviewed until two labelled it.
    assert (mine.count(), theirs.count(), theirs.reviewed_count()) == (0, 4, 0)
    assert label(logged_in(second_reviewer), repository, graded_pairs()[0], "pass") == 302
    assert theirs.count() == 3 and theirs.reviewed_count() == 1
    assert HumanVerdict.objects.count() == 5


def test_disagreeing_reviewers_go_to_adjudication_and_the_ruling_counts(
    reviewer: User,
    second_reviewer: User,
    maintainer: User,
    repository: Repository,
    graded: RubricRevision,
) -> None:
    a, b, c, d = graded_pairs()
    for pair in (a, b, c, d):
        label(logged_in(reviewer), repository, pair, "pass")
    for pair, verdict in ((a, "fail"), (b, "pass"), (c, "pass"), (d, "fail")):
        label(logged_in(second_reviewer), repository, pair, verdict, note=f"second says {verdict}")
    # Both reviewers' labels are kept; a and d are contested and count for nothing yet.
    assert HumanVerdict.objects.count() == 8
    contested = review_queue.adjudication_list(repository)
    assert [(p.grade_id, p.item_id) for p in contested] == [(a[0].pk, a[1]), (d[0].pk, d[1])]
    assert sorted(contested[0].labels) == [
        ("reviewer", "pass", ""),
        ("second-reviewer", "fail", "second says fail"),
    ]
    settled = {(g, i): v for g, i, v in review_queue.human_verdicts_by_grade(repository)}
    assert settled == {(b[0].pk, "N2"): "pass", (c[0].pk, "B1"): "pass"}
    # Agreement between the reviewers: 4 pairs, 2 disagreeing, alpha as counted by hand (pass 6, fail 2).
    agreement = review_queue.human_agreement(repository)
    assert (agreement.pairs, agreement.disagreeing) == (4, 2)
    assert agreement.alpha == pytest.approx(1 - 7 * 4 / (6 * 2 * 2))
    page = (
        logged_in(reviewer).get(reverse("rubrics:queue_adjudication", args=[repository.pk])).content.decode()
    )
    assert "second says fail" in page and 'id="adjudication-list"' in page
    queue_page = logged_in(reviewer).get(reverse("rubrics:queue", args=[repository.pk])).content.decode()
    assert "Agreement between reviewers: Krippendorff" in queue_page and "2 pairs to adjudicate" in queue_page
    # The run whose blocker (B1) the reviewers disagree on has no human verdict yet: one labelled run.
    before = label_target(repository)
    assert before is not None and before.labelled == 1
    # A reviewer cannot adjudicate; a maintainer can, and the ruling is the pair's verdict.
    assert label(logged_in(reviewer), repository, a, "fail", adjudicate="1") == 403
    assert label(logged_in(maintainer), repository, a, "fail", adjudicate="1") == 302
    assert label(logged_in(maintainer), repository, d, "pass", adjudicate="1") == 302
    settled = {(g, i): v for g, i, v in review_queue.human_verdicts_by_grade(repository)}
    assert (settled[(a[0].pk, "B1")], settled[(d[0].pk, "N2")]) == ("fail", "pass")
    assert review_queue.adjudication_list(repository) == []
    # Every label is still there, the rulings beside them; the report now counts both runs.
    assert HumanVerdict.objects.count() == 10 and HumanVerdict.objects.filter(adjudicated=True).count() == 2
    after = label_target(repository)
    assert after is not None and after.labelled == 2
    report = logged_in(reviewer).get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    assert 'id="human-agreement"' in report


def test_the_list_shows_both_judges_and_filters_by_pattern_and_human_label(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, *_ = graded_pairs()
    label(logged_in(reviewer), repository, a, "unsure")

    def listed(**filters: str) -> list[tuple[str, str, str, str]]:
        queue = review_queue.Queue(repository, QueueKind.JUDGES, filters, user_id=reviewer.pk)
        return [(e.item_id, e.primary, e.second, e.verdict) for e in queue.page(1, 100).entries]

    # The judges disagree both ways: B1 the primary passes and the second fails, N2 the other way round.
    assert listed() == [
        ("B1", "pass", "fail", "unsure"),
        ("N2", "fail", "pass", ""),
        ("B1", "pass", "fail", ""),
        ("N2", "fail", "pass", ""),
    ]
    assert [e[0] for e in listed(pattern="pass/fail")] == ["B1", "B1"]
    assert [e[0] for e in listed(pattern="fail/pass")] == ["N2", "N2"] and listed(pattern="pass/pass") == []
    assert [e[3] for e in listed(human="unsure")] == ["unsure"]
    assert len(listed(human="none")) == 3 and listed(human="fail") == []
    page = logged_in(reviewer).get(
        reverse("rubrics:queue", args=[repository.pk]),
        {"kind": "judges", "pattern": "pass/fail", "human": "none"},
    )
    html = page.content.decode()
    assert html.count('class="badge judge verdict-fail">fail') == 1  # B1 of the second run only
    assert '<option value="pass/fail" selected>' in html and '<option value="none" selected>' in html


def test_a_reviewer_flags_a_blocker_and_a_maintainer_turns_it_into_a_dispute(
    reviewer: User, maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    from rubrics_app.models import Dispute, ItemFlag

    a, b, *_ = graded_pairs()
    as_reviewer = logged_in(reviewer)
    entry = reverse("rubrics:queue_entry", args=[repository.pk, a[0].pk, "B1"]) + "?kind=judges"
    assert 'id="flag-blocker"' in as_reviewer.get(entry).content.decode()
    flag_url = reverse("rubrics:queue_flag", args=[repository.pk, a[0].pk, "B1"])
    response = as_reviewer.post(
        flag_url, {"reason": "B1 asks for the <b>wrong</b> message", "kind": "judges"}
    )
    assert response.status_code == 302 and response["Location"] == entry
    flag = ItemFlag.objects.get()
    assert (flag.item.item_id, flag.grade, flag.by, flag.dispute) == ("B1", a[0], reviewer, None)
    # A non-blocker is never flagged; a flag without a reason is refused.
    as_reviewer.post(reverse("rubrics:queue_flag", args=[repository.pk, b[0].pk, "N2"]), {"reason": "x"})
    as_reviewer.post(flag_url, {"reason": ""})
    assert ItemFlag.objects.count() == 1 and not Dispute.objects.exists()
    # The maintainers see it on the revision, escaped, and turn it into a dispute with its reason.
    as_maintainer = logged_in(maintainer)
    page = as_maintainer.get(
        reverse("rubrics:revision_detail", args=[repository.pk, graded.pk])
    ).content.decode()
    assert "B1 asks for the &lt;b&gt;wrong&lt;/b&gt; message" in page
    found = re.search(r'href="([^"]+\?flag=\d+[^"]*)">turn into a dispute', page)
    assert found is not None
    link = found.group(1).replace("&amp;", "&")
    form = as_maintainer.get(link).content.decode()
    assert "B1 asks for the" in form and f'name="flag" value="{flag.pk}"' in form  # the reason, pre-filled
    as_maintainer.post(link, {"reason": "B1 asks for the wrong message", "flag": flag.pk, "grade": a[0].pk})
    dispute = Dispute.objects.get()
    flag.refresh_from_db()
    assert (flag.dispute, dispute.grade, dispute.item.item_id) == (dispute, a[0], "B1")
    after = as_maintainer.get(
        reverse("rubrics:revision_detail", args=[repository.pk, graded.pk])
    ).content.decode()
    assert 'id="revision-flags"' not in after
