"""A control character in a request's parameters is a 400 that names the parameter, on every database: a
NUL reaching a query is a 500 on PostgreSQL ("text fields cannot contain NUL") and a silent miss on SQLite.

The walk requests every URL of the app, with real objects of a graded repository behind its ids, with a NUL
in each query parameter any view reads and in each text part of its path. Run it on PostgreSQL too
(DATABASE_URL=postgres://...): that is where a NUL that slips through is a 500."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import HumanVerdict, Repository, RunGrade
from rubrics_app.services.reports import report as report_service
from rubrics_app.services.runs import queue as review_queue
from tests.app.url_walk import PATH_TEXTS, app_patterns, graded_fixture, sample_kwargs  # noqa: F401 - graded

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]

# Every query parameter a view of the app reads (the self-check below finds any other in the source), and
# Django's own ``next`` of the login page.
QUERY_PARAMETERS = sorted(
    {
        *report_service.FILTERS,
        *review_queue.FILTERS,
        "show",
        "kind",
        "page",
        "figure",
        "task_histogram",
        "other",
        "private",
        "comment",
        "grade",
        "flag",
        "next",
    }
)

NUL = "a\x00b"


def logged_in(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def refused(response: Any, name: str) -> bool:
    return response.status_code == 400 and f"The {name} holds a control character" in html.unescape(
        response.content.decode()
    )


def test_the_walk_knows_every_query_parameter_the_views_read() -> None:
    read: set[str] = set()
    for path in (ROOT / "rubrics_app").rglob("*.py"):
        text = path.read_text()
        read.update(re.findall(r"\bGET\.get\(\s*\"(\w+)\"", text))
        # Readers that take the query or the form: `source.get("name")`, `source_params.get(...)`.
        read.update(re.findall(r"\bsource(?:_params)?\.get\(\s*\"(\w+)\"", text))
    assert read, "the scan found nothing: the views read their parameters some other way now"
    assert read - set(QUERY_PARAMETERS) == set()


@pytest.mark.parametrize("who", ["maintainer", "viewer"])
def test_a_nul_in_any_query_parameter_of_any_url_is_a_400_naming_it(
    graded: None, who: str, request: pytest.FixtureRequest
) -> None:
    client = logged_in(request.getfixturevalue(who))
    patterns = app_patterns()
    assert len(patterns) >= 40
    failures: list[str] = []
    for pattern in patterns:
        url = reverse(f"rubrics:{pattern.name}", kwargs=sample_kwargs(pattern))
        if who == "viewer" and client.get(url).status_code != 200:
            continue  # a page a viewer cannot read: the maintainer's walk covers it
        for name in QUERY_PARAMETERS:
            response = client.get(url, {name: NUL})
            if not refused(response, f"query parameter {name!r}"):
                failures.append(f"GET {url}?{name}=NUL: {response.status_code}")
        # The parameter's name is text from the request as well.
        response = client.get(url, {"model\x00": "x"})
        if not refused(response, "query parameter 'model\\x00'"):
            failures.append(f"GET {url}?model%00=x: {response.status_code}")
    assert failures == []


def test_a_nul_in_a_text_part_of_a_path_is_a_400_naming_it(graded: None, maintainer: User) -> None:
    client = logged_in(maintainer)
    walked = 0
    for pattern in app_patterns():
        kwargs = sample_kwargs(pattern)
        for name in set(kwargs) & set(PATH_TEXTS):
            url = reverse(f"rubrics:{pattern.name}", kwargs={**kwargs, name: NUL})
            for method in (client.get, client.post):
                response = method(url)
                assert refused(response, f"URL's {name}"), (url, response.status_code)
            walked += 1
    assert walked >= 4  # item_add's kind, queue_entry's and queue_label's item_id, flag_dismiss's what


def test_a_nul_in_a_query_parameter_of_a_post_is_a_400(graded: None, maintainer: User) -> None:
    client = logged_in(maintainer)
    for pattern in app_patterns():
        url = reverse(f"rubrics:{pattern.name}", kwargs=sample_kwargs(pattern))
        response = client.post(f"{url}?model=a%00b")
        assert refused(response, "query parameter 'model'"), (url, response.status_code)


@pytest.mark.parametrize("name", review_queue.FILTERS)
def test_a_nul_in_a_posted_queue_filter_is_a_400(graded: None, reviewer: User, name: str) -> None:
    grade = RunGrade.objects.order_by("pk").first()
    assert grade is not None
    repo = grade.run.task.repository_id
    client = logged_in(reviewer)
    label = reverse("rubrics:queue_label", args=[repo, grade.pk, "N2"])
    response = client.post(label, {"verdict": "pass", name: NUL})
    assert refused(response, f"form field {name!r}"), response.status_code
    assert not HumanVerdict.objects.filter(item_id="N2").exists()
    response = client.post(reverse("rubrics:queue_undo", args=[repo]), {name: NUL})
    assert refused(response, f"form field {name!r}"), response.status_code


@pytest.mark.parametrize("character", ["\x01", "\x1b", "\x7f", "\x85"])
def test_other_control_characters_are_refused(graded: None, viewer: User, character: str) -> None:
    repo = Repository.objects.get().pk
    response = logged_in(viewer).get(reverse("rubrics:report", args=[repo]), {"model": f"m{character}"})
    assert refused(response, "query parameter 'model'")
    assert f"U+{ord(character):04X}" in response.content.decode()


@pytest.mark.parametrize("value", ["claude-opus-4", "naïve arm", "模型", "a b", "x" * 500])
def test_printable_text_is_still_a_filter(graded: None, viewer: User, value: str) -> None:
    repo = Repository.objects.get().pk
    response = logged_in(viewer).get(reverse("rubrics:report", args=[repo]), {"model": value})
    assert response.status_code == 200


def test_the_400_page_is_in_the_site_frame_with_a_way_back(graded: None, viewer: User) -> None:
    repo = Repository.objects.get().pk
    response = logged_in(viewer).get(reverse("rubrics:queue", args=[repo]), {"arm": NUL})
    page = response.content.decode()
    assert response.status_code == 400
    assert '<header class="topbar">' in page and "viewer" in page
    assert "The query parameter &#x27;arm&#x27; holds a control character (U+0000)" in page
    assert f'href="{reverse("rubrics:repository_detail", args=[repo])}"' in page
