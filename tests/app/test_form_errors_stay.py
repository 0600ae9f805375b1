"""A form with errors never leaves the browser on a POST-only URL (issue 21 §4): a plain post (no htmx)
that fails is sent back to the page the form is on, which answers GET with the form, its values and its
errors; reloading that page is an ordinary visit, never a 405."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import resolve, reverse

from rubrics_app.models import AgentRun, ItemComment, Repository, RubricItem, RubricRevision, Task
from tests.app.conftest import PASSWORD

# (the action's URL name, its args from the fixtures, the data sent, the page it belongs to, the error shown)
Case = tuple[str, Callable[[Repository, Task, RubricRevision], list[int]], dict[str, Any], str, str]

CASES: dict[str, Case] = {
    "draft from PR": (
        "draft_start",
        lambda repo, task, rev: [repo.pk, task.pk],
        {"pr_number": "7"},
        "task_detail",
        "has no drafting settings",
    ),
    "rubric upload": (
        "rubric_upload",
        lambda repo, task, rev: [repo.pk],
        {},
        "repository_detail",
        "This field is required.",
    ),
    "runs upload": (
        "runs_upload",
        lambda repo, task, rev: [repo.pk],
        {},
        "repository_detail",
        "This field is required.",
    ),
    "SWE-bench upload": (
        "runs_upload_swe_bench",
        lambda repo, task, rev: [repo.pk],
        {"arm": "swe-agent", "repetition": str(2**31)},
        "repository_detail",
        "less than or equal to 2147483647",
    ),
    "training cutoffs": (
        "report_cutoffs",
        lambda repo, task, rev: [repo.pk],
        {"cutoffs": '{"model-a": "May 2025"}'},
        "report",
        "is not a date (YYYY-MM-DD)",
    ),
    "add a blocker": (
        "item_add",
        lambda repo, task, rev: [repo.pk, rev.pk, "blocker"],  # type: ignore[list-item]
        {"item_id": "B9", "criterion": "   ", "evidence": "tests", "seen_status": "draft"},
        "revision_detail",
        "Say what the change must do",
    ),
}


@pytest.fixture
def client(maintainer: User) -> Client:
    client = Client()
    assert client.login(username=maintainer.username, password=PASSWORD)
    return client


@pytest.mark.parametrize("case", list(CASES))
def test_a_failed_post_lands_on_the_page_that_answers_get(
    case: str, client: Client, repository: Repository, task: Task, draft_revision: RubricRevision
) -> None:
    action, args, data, page_name, error = CASES[case]
    url = reverse(f"rubrics:{action}", args=args(repository, task, draft_revision))
    assert client.get(url).status_code == 405  # the action's URL: POST only

    response = client.post(url, data)
    assert response.status_code == 302
    landed = response["Location"]
    assert urlsplit(landed).path != url
    assert resolve(urlsplit(landed).path).url_name == page_name

    page = client.get(landed)  # what the browser loads, and a reload asks for again
    assert page.status_code == 200
    assert error in page.content.decode()
    # A reload is a new visit: the page again, without the old error.
    again = client.get(landed)
    assert again.status_code == 200 and error not in again.content.decode()
    assert not AgentRun.objects.exists()


def test_the_values_sent_come_back_in_the_form(
    client: Client, repository: Repository, draft_revision: RubricRevision
) -> None:
    url = reverse("rubrics:item_add", args=[repository.pk, draft_revision.pk, "non_blocker"])
    data = {"item_id": "N9", "criterion": "Keep the changelog <tidy>.", "weight": "heavy"}
    page = client.get(client.post(url, data)["Location"]).content.decode()
    assert '<details class="add-item" id="add-non_blocker" open>' in page
    assert "Enter a number." in page and 'value="N9"' in page
    assert "Keep the changelog &lt;tidy&gt;." in page  # escaped, as every value on a page
    assert not RubricItem.objects.filter(revision=draft_revision, item_id="N9").exists()


def test_a_blank_comment_comes_back_beside_its_item(
    client: Client, repository: Repository, draft_revision: RubricRevision
) -> None:
    item = draft_revision.items.get(item_id="B1")
    response = client.post(reverse("rubrics:item_comment", args=[repository.pk, item.pk]), {"text": "  "})
    assert response.status_code == 302
    landed = response["Location"]
    assert landed.endswith(f"#item-{item.pk}")
    assert resolve(urlsplit(landed).path).url_name == "revision_detail"
    page = client.get(landed).content.decode()
    row = page.split(f'id="item-{item.pk}"', 1)[1].split("</article>", 1)[0]
    assert '<details class="inline-details" open>' in row and "This field is required." in row
    assert not ItemComment.objects.exists()


def test_a_kept_form_shows_only_on_its_own_page(
    client: Client, repository: Repository, task: Task, draft_revision: RubricRevision
) -> None:
    client.post(reverse("rubrics:report_cutoffs", args=[repository.pk]), {"cutoffs": "{"})
    # Another page first: it neither shows nor takes the report's error.
    other = client.get(reverse("rubrics:task_detail", args=[repository.pk, task.pk])).content.decode()
    assert "malformed JSON" not in other
    report = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    assert "malformed JSON" in report
