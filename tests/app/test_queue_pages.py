"""The review queue at scale: the list in pages, the counts over the whole queue, the one-per-screen flow
across page boundaries, and a number of queries that does not grow with the queue."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rubrics_app.models import ItemVerdict, Repository
from rubrics_app.services.report_rows import refresh_report_rows
from tests.app.client_helpers import logged_in
from tests.app.report_rows import bulk_runs, bulk_tasks
from tests.app.runs_helpers import put_label

pytestmark = pytest.mark.django_db

ENTRY = re.compile(r'href="/repos/\d+/queue/(\d+)/(\w+)/\?[^"]*"><code>')


def expected_order(repository: Repository, **filters: str) -> list[tuple[int, str]]:
    """The disagreeing pairs, sorted as the queue promises (task, arm, model, repetition, item), computed
    here from every verdict read back in one go."""
    verdicts: dict[tuple[Any, ...], dict[str, str]] = {}
    rows = ItemVerdict.objects.filter(judge__grade__run__task__repository=repository).values_list(
        "judge__grade__run__task__task_id",
        "judge__grade__run__arm",
        "judge__grade__run__model",
        "judge__grade__run__repetition",
        "judge__grade_id",
        "item_id",
        "judge__role",
        "verdict",
    )
    for *key, role, verdict in rows:
        if filters.get("arm") in (None, key[1]):
            verdicts.setdefault(tuple(key), {})[role] = verdict
    disagree = [key for key, by in verdicts.items() if "second" in by and by["second"] != by["primary"]]
    return [(key[4], key[5]) for key in sorted(disagree)]


def listed(html: str) -> list[tuple[int, str]]:
    return [(int(grade), item) for grade, item in ENTRY.findall(html)]


@pytest.fixture
def queued(repository: Repository, settings: Any) -> Repository:
    """3 tasks x 2 arms x 1 model x 5 repetitions = 30 runs; 12 disagreeing pairs, 5 to a page."""
    settings.RUNS_QUEUE_PAGE_SIZE = 5
    assert bulk_runs(bulk_tasks(repository, 3), ["a", "b"], ["claude-x"], 5) == 30
    return repository


def test_the_list_shows_one_page_and_counts_the_whole_queue(queued: Repository, reviewer: User) -> None:
    client = logged_in(reviewer)
    url = reverse("rubrics:queue", args=[queued.pk])
    order = expected_order(queued)
    assert len(order) == 12
    # Two pairs of the last page are labelled: the progress on the first page counts them.
    for grade_id, item_id in order[-2:]:
        put_label(grade_id, item_id, "pass")
    pages = [client.get(url, {"kind": "judges", "page": n}).content.decode() for n in (1, 2, 3)]
    assert [listed(html) for html in pages] == [order[0:5], order[5:10], order[10:12]]
    for html in pages:
        assert "2 of 12 reviewed" in html
    assert "pairs 1 to 5 of 12 · page 1 of 3" in pages[0]
    assert "pairs 11 to 12 of 12 · page 3 of 3" in pages[2]
    assert f'href="/repos/{queued.pk}/queue/?kind=judges&amp;page=2" rel="next"' in pages[0]
    assert 'rel="prev"' not in pages[0] and 'rel="next"' not in pages[2]
    assert pages[2].count('class="badge verdict-pass">pass') == 2  # the verdict given, not just "reviewed"
    assert pages[0].count('class="badge verdict-') == 0
    # Past the end is the last page; not a number is the first.
    assert listed(client.get(url, {"page": "99"}).content.decode()) == order[10:12]
    assert listed(client.get(url, {"page": "x"}).content.decode()) == order[0:5]
    assert listed(client.get(url, {"page": "-1"}).content.decode()) == order[0:5]


def test_the_page_links_keep_the_filters(queued: Repository, reviewer: User) -> None:
    client = logged_in(reviewer)
    html = client.get(reverse("rubrics:queue", args=[queued.pk]), {"arm": "b"}).content.decode()
    order = expected_order(queued, arm="b")
    assert len(order) == 6 and listed(html) == order[:5]
    assert "0 of 6 reviewed" in html
    assert f'href="/repos/{queued.pk}/queue/?kind=judges&amp;arm=b&amp;page=2" rel="next"' in html
    html = client.get(reverse("rubrics:queue", args=[queued.pk]), {"arm": "b", "page": "2"}).content.decode()
    assert listed(html) == order[5:]


def test_next_and_previous_run_across_page_boundaries(queued: Repository, reviewer: User) -> None:
    client = logged_in(reviewer)
    order = expected_order(queued)
    first = reverse("rubrics:queue_entry", args=[queued.pk, *order[0]])
    html = client.get(first, {"kind": "judges"}).content.decode()
    visited = []
    # Follow "next" from the first pair to the end: every pair once, in the list's order, page after page.
    while True:
        position = int(re.search(r"pair (\d+) of 12", html).group(1))  # type: ignore[union-attr]
        visited.append(position)
        page = (position - 1) // 5 + 1
        back = f"/repos/{queued.pk}/queue/?kind=judges" + (f"&amp;page={page}" if page > 1 else "")
        assert f'href="{back}">review queue</a>' in html
        following = re.search(r'id="queue-next" href="([^"]+)"', html)
        if following is None:
            break
        html = client.get(following.group(1).replace("&amp;", "&")).content.decode()
    assert visited == list(range(1, 13))
    # And "previous" from the sixth (the first of page 2) is the fifth (the last of page 1).
    sixth = reverse("rubrics:queue_entry", args=[queued.pk, *order[5]])
    html = client.get(sixth, {"kind": "judges"}).content.decode()
    previous = reverse("rubrics:queue_entry", args=[queued.pk, *order[4]])
    assert f'id="queue-previous" href="{previous}?kind=judges"' in html
    # Labelling the last pair of page 1 moves on to the first of page 2.
    fifth = reverse("rubrics:queue_label", args=[queued.pk, *order[4]])
    response = client.post(fifth, {"verdict": "fail", "kind": "judges"})
    assert response["Location"] == f"{sixth}?kind=judges"
    html = client.get(sixth, {"kind": "judges"}).content.decode()
    assert "1 of 12 reviewed" in html and "pair 6 of 12" in html


def test_a_pair_outside_the_filtered_queue_leads_to_its_first(queued: Repository, reviewer: User) -> None:
    order_a = expected_order(queued, arm="a")
    order_b = expected_order(queued, arm="b")
    html = (
        logged_in(reviewer)
        .get(reverse("rubrics:queue_entry", args=[queued.pk, *order_a[0]]), {"arm": "b"})
        .content.decode()
    )
    assert "pair " not in html.split("</div>")[0]  # no position: not in this queue
    first_b = reverse("rubrics:queue_entry", args=[queued.pk, *order_b[0]])
    assert f'id="queue-next" href="{first_b}?kind=judges&amp;arm=b"' in html


def test_a_pair_both_judges_regraded_differently_is_one_entry(queued: Repository, reviewer: User) -> None:
    grade_id, item_id = expected_order(queued)[0]
    for verdict in ItemVerdict.objects.filter(judge__grade_id=grade_id, item_id=item_id):
        verdict.previous_verdict = "fail" if verdict.verdict == "pass" else "pass"
        verdict.save()
    refresh_report_rows([grade_id])  # as every writer of verdicts does: the queue's pairs follow them
    html = logged_in(reviewer).get(reverse("rubrics:queue", args=[queued.pk]), {"kind": "regrade"})
    assert listed(html.content.decode()) == [(grade_id, item_id)]
    assert "0 of 1 reviewed" in html.content.decode()


def _queries(client: Client, url: str, data: dict[str, Any] | None = None, post: bool = False) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.post(url, data) if post else client.get(url, data)
    assert response.status_code in (200, 302), (url, response.status_code)
    return len(queries)


def _page_queries(client: Client, repository: Repository) -> list[int]:
    """Queries of a middle list page, of each kind, of a pair's screen, and of labelling it."""
    order = expected_order(repository)
    middle = order[len(order) // 2]
    url = reverse("rubrics:queue", args=[repository.pk])
    entry = reverse("rubrics:queue_entry", args=[repository.pk, *middle])
    label = reverse("rubrics:queue_label", args=[repository.pk, *middle])
    return [
        _queries(client, url, {"kind": "judges", "page": 2}),
        _queries(client, url, {"kind": "agreed", "page": 2}),
        _queries(client, url, {"kind": "regrade"}),
        _queries(client, url, {"kind": "judges", "page": 2, "model": "claude-x"}),
        _queries(client, entry, {"kind": "judges"}),
        _queries(client, label, {"verdict": "pass", "kind": "judges"}, post=True),
    ]


def test_a_page_costs_as_many_queries_at_two_queue_sizes(
    repository: Repository,
    other_repository: Repository,
    reviewer: User,
    outsider: User,
    settings: Any,
) -> None:
    settings.RUNS_QUEUE_PAGE_SIZE = 10
    settings.RUNS_AGREED_SAMPLE_PERCENT = 100
    assert bulk_runs(bulk_tasks(repository, 2), ["a", "b"], ["claude-x"], 5) == 20  # 8 pairs disagree
    assert bulk_runs(bulk_tasks(other_repository, 40), ["a", "b"], ["claude-x", "gpt-y"], 5) == 800  # 320
    assert len(expected_order(other_repository)) == 320
    small = _page_queries(logged_in(reviewer), repository)
    large = _page_queries(logged_in(outsider), other_repository)  # maintainer of the other repository
    assert small == large, (small, large)
