"""A GET on a URL that only answers a form's POST (a bookmark, a reload, a login that came back to it) is
a 405 page saying what the URL does, with a link to the page of its form; never a bare empty 405."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from rubrics_app.models import CalibrationRun, RunGrade
from tests.app.url_walk import app_patterns, graded_fixture, sample_kwargs  # noqa: F401 - graded

pytestmark = pytest.mark.django_db

BACK = re.compile(r'<a class="button primary" href="([^"]+)">Back to the page with the form</a>')


def logged_in(user: User) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def post_only_page(client: Client, url: str) -> tuple[str, str]:
    """What the 405 page of ``url`` says the URL does, and its link back."""
    response = client.get(url)
    assert response.status_code == 405, url
    assert response["Allow"] == "POST"
    page = html.unescape(response.content.decode())
    assert '<header class="topbar">' in page, url
    purpose = re.search(r"This address (\w.+?) when its form is sent\.", page)
    back = BACK.search(page)
    assert purpose is not None and back is not None, url
    return purpose.group(1), back.group(1)


def test_every_post_only_url_answers_a_get_with_a_page_and_a_way_back(graded: None, maintainer: User) -> None:
    run = CalibrationRun.objects.order_by("pk").first()
    assert run is not None
    client = logged_in(maintainer)
    walked: dict[str, str] = {}
    purposes: set[str] = set()
    for pattern in app_patterns():
        url = reverse(f"rubrics:{pattern.name}", kwargs=sample_kwargs(pattern))
        if client.get(url).status_code != 405:
            continue
        purpose, back = post_only_page(client, url)
        assert purpose not in purposes, f"{url} says what another URL says: {purpose}"
        purposes.add(purpose)
        # The way back is a page of the same objects, and it opens.
        assert client.get(back, follow=True).status_code == 200, (url, back)
        walked[str(pattern.name)] = back
    assert len(walked) >= 20, sorted(walked)
    grade = RunGrade.objects.order_by("pk").first()
    assert grade is not None
    repo = grade.run.task.repository_id
    assert walked["queue_label"] == reverse("rubrics:queue_entry", args=[repo, grade.pk, "B1"])
    assert walked["revision_approve"].startswith(f"/repos/{repo}/revisions/")
    assert walked["mutant_unmark"] == reverse("rubrics:calibration_detail", args=[repo, run.pk])


def test_logging_out_by_a_get_is_a_page_that_leads_back(maintainer: User) -> None:
    client = logged_in(maintainer)
    purpose, back = post_only_page(client, reverse("logout"))
    assert purpose == "logs you out"
    assert back == reverse("rubrics:repository_list")
    assert client.get(back).status_code == 200  # still logged in: the GET did nothing


def test_a_post_still_does_what_it_says(maintainer: User) -> None:
    client = logged_in(maintainer)
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("rubrics:repository_list")).status_code == 302  # to the login page
