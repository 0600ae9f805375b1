"""The review queue as a labelling tool (issue 21 §5): the next unlabelled pair, undo of one's own last label,
the "saved" notice, the verdict buttons above the diff, the verdict in the list, the unlabelled-only list
and the end of the list. Every one of them works with plain links and forms; queue.js only adds keys."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.access import Actor
from rubrics_app.models import HumanVerdict, Repository, RubricRevision, RunGrade
from rubrics_app.services.runs import queue as review_queue
from tests.app.client_helpers import logged_in
from tests.app.runs_helpers import graded_pairs, import_graded, put_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(tmp_path: Path, repository: Repository, admitted_revision: RubricRevision) -> RubricRevision:
    """Two runs whose judges disagree on B1 and N2: four pairs, in the order rep0 B1, rep0 N2, rep1 B1,
    rep1 N2."""
    import_graded(tmp_path, repository, admitted_revision)
    return admitted_revision


def entry(repository: Repository, pair: tuple[RunGrade, str], query: str = "kind=judges") -> str:
    path = reverse("rubrics:queue_entry", args=[repository.pk, pair[0].pk, pair[1]])
    return f"{path}?{query}" if query else path


def label_url(repository: Repository, pair: tuple[RunGrade, str]) -> str:
    return reverse("rubrics:queue_label", args=[repository.pk, pair[0].pk, pair[1]])


def undo(client: Client, repository: Repository, pair: tuple[RunGrade, str], **extra: str) -> Any:
    data = {"undo_grade": str(pair[0].pk), "undo_item": pair[1], "kind": "judges", **extra}
    return client.post(reverse("rubrics:queue_undo", args=[repository.pk]), data)


def link(html: str, element_id: str) -> str | None:
    found = re.search(rf'id="{element_id}" href="([^"]+)"', html)
    return None if found is None else found.group(1).replace("&amp;", "&")


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


# --- the next unlabelled pair (n) ---------------------------------------------------------------------


def test_n_leads_to_the_next_unlabelled_pair_past_labelled_ones(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, b, c, d = graded_pairs()
    client = logged_in(reviewer)
    for pair in (b, c):  # labelled by someone: "next" walks onto them, "next unlabelled" skips them
        put_label(pair[0], pair[1], "pass")
    html = page(client, entry(repository, a))
    assert link(html, "queue-next") == entry(repository, b)
    assert link(html, "queue-next-unlabelled") == entry(repository, d)
    assert "next unlabelled <kbd>n</kbd>" in html
    # From the last pair it goes round to the first unlabelled one before it, never to itself.
    assert link(page(client, entry(repository, d)), "queue-next-unlabelled") == entry(repository, a)
    # The list's link (n there too) opens the first unlabelled pair.
    html = page(client, reverse("rubrics:queue", args=[repository.pk]))
    assert link(html, "queue-next-unlabelled") == entry(repository, a)
    # Every pair labelled: no such link anywhere.
    for pair in (a, d):
        put_label(pair[0], pair[1], "fail")
    assert link(page(client, entry(repository, a)), "queue-next-unlabelled") is None
    assert link(page(client, reverse("rubrics:queue", args=[repository.pk])), "queue-next-unlabelled") is None


# --- saved, and undo (z) ---------------------------------------------------------------------------------


def test_a_label_is_shown_saved_with_an_undo_that_removes_it(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, b, *_ = graded_pairs()
    client = logged_in(reviewer)
    response = client.post(label_url(repository, a), {"verdict": "fail", "kind": "judges"}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == entry(repository, b)
    task_id = a[0].run.task.task_id
    assert f'Saved: <span class="badge verdict-fail">fail</span> on <code>B1 on {task_id} (' in html
    assert 'id="queue-undo"' in html and 'data-key="z">Undo <kbd>z</kbd>' in html
    # The list says it too, with the same Undo.
    assert 'id="queue-undo"' in page(client, reverse("rubrics:queue", args=[repository.pk]))
    # Undo: the label is gone and the reviewer is back on that pair.
    response = undo(client, repository, a)
    assert response.status_code == 302 and response["Location"] == entry(repository, a)
    assert not HumanVerdict.objects.exists()
    html = page(client, entry(repository, a))
    assert f"Undone: B1 on {task_id}" in html and "is unlabelled again" in html
    assert 'id="queue-undo"' not in html  # nothing more to undo
    # A second undo of the same label does nothing.
    undo(client, repository, a)
    assert not HumanVerdict.objects.exists()


def test_each_reviewer_keeps_their_own_label_and_undo_puts_back_their_own(
    reviewer: User, maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, *_ = graded_pairs()
    logged_in(maintainer).post(
        label_url(repository, a), {"verdict": "pass", "note": "fine", "kind": "judges"}
    )
    theirs = HumanVerdict.objects.get()
    client = logged_in(reviewer)
    client.post(label_url(repository, a), {"verdict": "fail", "kind": "judges"})
    # The reviewer's label is their own: the maintainer's stands beside it, unchanged.
    assert sorted(HumanVerdict.objects.values_list("by__username", "verdict")) == [
        ("maintainer", "pass"),
        ("reviewer", "fail"),
    ]
    first = HumanVerdict.objects.get(by=reviewer)
    client.post(label_url(repository, a), {"verdict": "unsure", "kind": "judges"})
    assert HumanVerdict.objects.get(by=reviewer).verdict == "unsure"
    assert ", replacing your label it had" in page(client, entry(repository, a))
    undo(client, repository, a)
    back = HumanVerdict.objects.get(by=reviewer)
    assert (back.verdict, back.at) == ("fail", first.at)
    assert HumanVerdict.objects.get(by=maintainer) == theirs
    assert (theirs.verdict, theirs.note) == ("pass", "fine")


def test_only_ones_own_most_recent_label_is_undone(
    reviewer: User, maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, b, c, _ = graded_pairs()
    first_browser, second_browser = logged_in(reviewer), logged_in(reviewer)
    first_browser.post(label_url(repository, a), {"verdict": "fail", "kind": "judges"})
    # The same reviewer labels another pair elsewhere: the first browser's undo is no longer their latest.
    second_browser.post(label_url(repository, b), {"verdict": "pass", "kind": "judges"})
    assert 'id="queue-undo"' not in page(first_browser, entry(repository, a))
    response = undo(first_browser, repository, a)
    assert HumanVerdict.objects.count() == 2
    assert "you have labelled since" in page(first_browser, response["Location"])
    # Someone else labels the pair again: its label is theirs, not undone by the reviewer.
    logged_in(maintainer).post(label_url(repository, b), {"verdict": "unsure", "kind": "judges"})
    undo(second_browser, repository, b)
    assert HumanVerdict.objects.get(run=b[0].run, item_id=b[1]).verdict == "unsure"
    # A form naming another pair than the last label undoes nothing.
    second_browser.post(label_url(repository, c), {"verdict": "pass", "kind": "judges"})
    undo(second_browser, repository, a)
    assert HumanVerdict.objects.filter(run=c[0].run, item_id=c[1]).exists()
    assert HumanVerdict.objects.count() == 3


def test_undo_is_for_labellers_of_the_repository(
    reviewer: User, viewer: User, outsider: User, repository: Repository, graded: RubricRevision
) -> None:
    a, *_ = graded_pairs()
    logged_in(reviewer).post(label_url(repository, a), {"verdict": "fail", "kind": "judges"})
    assert undo(logged_in(viewer), repository, a).status_code == 403
    assert undo(logged_in(outsider), repository, a).status_code == 404
    assert logged_in(reviewer).get(reverse("rubrics:queue_undo", args=[repository.pk])).status_code == 405
    assert HumanVerdict.objects.count() == 1


def test_the_service_undoes_only_the_labellers_own_label(
    reviewer: User, maintainer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, *_ = graded_pairs()
    labelled = review_queue.label(a[0], a[1], "fail", "", "judges", Actor.member(reviewer))
    with pytest.raises(review_queue.NothingToUndo):
        review_queue.undo_label(a[0], labelled.undo, Actor.member(maintainer))  # not the maintainer's
    assert HumanVerdict.objects.count() == 1
    assert review_queue.undo_label(a[0], labelled.undo, Actor.member(reviewer)) is None
    assert not HumanVerdict.objects.exists()
    # What the session keeps reads back as it was; anything else reads as nothing.
    kept = review_queue.LabelUndo.from_session(labelled.undo.to_session())
    assert kept == labelled.undo
    assert review_queue.LabelUndo.from_session({"grade_id": "x"}) is None
    assert review_queue.LabelUndo.from_session("junk") is None


# --- the buttons above the diff ---------------------------------------------------------------------------


def test_the_verdict_buttons_come_before_the_diff_in_a_sticky_bar(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    html = page(logged_in(reviewer), entry(repository, graded_pairs()[0]))
    bar = html.index('class="label-bar"')
    assert (
        bar < html.index('id="human-verdict"') < html.index('value="pass"') < html.index("<h2>The diff</h2>")
    )
    css = Path(__file__).resolve().parents[2] / "static" / "rubrics" / "app.css"
    assert re.search(r"\.label-bar \{ position: sticky; top: 0;", css.read_text())


# --- the verdict in the list, and the unlabelled-only list -----------------------------------------------


def test_the_list_shows_each_verdict_given(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, b, c, _ = graded_pairs()
    client = logged_in(reviewer)
    for pair, verdict in ((a, "pass"), (b, "fail"), (c, "unsure")):
        client.post(label_url(repository, pair), {"verdict": verdict, "kind": "judges"})
    html = page(client, reverse("rubrics:queue", args=[repository.pk]))
    cells = re.findall(r'<span class="badge verdict-(\w+)">(\w+)</span></td>', html)
    assert cells == [("pass", "pass"), ("fail", "fail"), ("unsure", "unsure")]
    assert html.count('<span class="muted">not yet</span>') == 1
    assert ">reviewed<" not in html


def test_the_unlabelled_only_list(reviewer: User, repository: Repository, graded: RubricRevision) -> None:
    a, b, c, d = graded_pairs()
    client = logged_in(reviewer)
    url = reverse("rubrics:queue", args=[repository.pk])
    put_label(a[0], a[1], "pass")
    # Every pair by default, for every role.
    html = page(client, url)
    assert len(re.findall(r"<code>(B1|N2)</code></a>", html)) == 4
    assert link(html, "queue-show-unlabelled") == f"{url}?kind=judges&show=unlabelled"
    assert "unlabelled only (3)" in html
    html = page(client, f"{url}?kind=judges&show=unlabelled")
    assert len(re.findall(r"<code>(B1|N2)</code></a>", html)) == 3
    assert "1 of 4 reviewed" in html  # the progress counts the whole queue
    assert 'name="show" value="unlabelled"' in html  # the filter form keeps it
    assert f"{b[0].pk}/N2/?kind=judges&amp;show=unlabelled" in html  # and so do the pairs' links
    # On a pair of that list: positions among the unlabelled; labelling moves on to the next unlabelled.
    html = page(client, entry(repository, b, "kind=judges&show=unlabelled"))
    assert "pair 1 of 3 unlabelled" in html and 'name="show" value="unlabelled"' in html
    put_label(c[0], c[1], "pass")
    response = client.post(
        label_url(repository, b), {"verdict": "fail", "kind": "judges", "show": "unlabelled"}
    )
    assert response["Location"] == entry(repository, d, "kind=judges&show=unlabelled")
    client.post(label_url(repository, d), {"verdict": "fail", "kind": "judges", "show": "unlabelled"})
    html = page(client, f"{url}?kind=judges&show=unlabelled")
    assert "The end of this queue: every pair is labelled." in html and "Nothing unlabelled to show" in html


# --- the end of the list -----------------------------------------------------------------------------------


def test_the_end_of_the_list_says_how_many_remain_and_links_the_first(
    reviewer: User, repository: Repository, graded: RubricRevision
) -> None:
    a, b, c, d = graded_pairs()
    client = logged_in(reviewer)
    url = reverse("rubrics:queue", args=[repository.pk])
    put_label(d[0], d[1], "pass")
    for html in (page(client, url), page(client, entry(repository, d))):
        assert "The end of this list, with <strong>3 pairs</strong> of this queue still unlabelled" in html
        assert "the end of this queue" not in html.lower()
        assert link(html, "queue-first-unlabelled") == entry(repository, a)
    # Not on a pair with a next one.
    assert 'id="queue-end"' not in page(client, entry(repository, c))
    for pair in (a, b, c):
        put_label(pair[0], pair[1], "pass")
    for html in (page(client, url), page(client, entry(repository, d))):
        assert "The end of this queue: every pair is labelled." in html
        assert link(html, "queue-first-unlabelled") is None


def test_the_end_of_a_list_of_pages_is_on_its_last_page(
    reviewer: User, repository: Repository, graded: RubricRevision, settings: Any
) -> None:
    settings.RUNS_QUEUE_PAGE_SIZE = 3
    client = logged_in(reviewer)
    url = reverse("rubrics:queue", args=[repository.pk])
    assert 'id="queue-end"' not in page(client, url)
    assert "with <strong>4 pairs</strong>" in page(client, f"{url}?page=2")
