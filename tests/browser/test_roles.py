"""Each role in Chromium: a reviewer works through the disagreement queue with the keyboard, a viewer sees
no controls, an outsider gets 404 for everything of the repository."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from rubrics_app.models import HumanVerdict, Repository, RubricRevision
from tests.browser.conftest import Browser
from tests.browser.graded import graded_fixture  # noqa: F401 - the graded fixture
from tests.browser.pages import repository_pages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def progress(page: Any) -> str:
    return str(page.locator(".queue-bar strong").inner_text())


def pair(page: Any) -> str:
    return str(re.sub(r".*(pair \d+ of \d+).*", r"\1", page.locator(".queue-bar .muted").inner_text()))


@pytest.mark.parametrize("page_size", [100, 3], ids=["one page", "two pages"])
def test_a_reviewer_works_through_the_queue_with_the_keyboard(
    browser: Browser,
    graded: RubricRevision,
    repository: Repository,
    reviewer: User,
    settings: Any,
    page_size: int,
) -> None:
    # With 3 to a page the list shows pairs 1 to 3 and the keys run on into pair 4, on page 2.
    settings.RUNS_QUEUE_PAGE_SIZE = page_size
    page = browser.log_in("reviewer")
    page.goto(f"/repos/{repository.pk}/queue/")
    assert page.locator("p.progress strong").inner_text() == "0 of 4 reviewed"
    assert page.locator("table.list tbody tr").count() == min(4, page_size)
    if page_size == 3:
        assert "page 1 of 2" in page.locator("nav.pages").first.inner_text()
    browser.shot(page, f"queue, {page_size} to a page")
    page.get_by_role("link", name="label the next one").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/queue/\d+/\w+/"))
    assert (progress(page), pair(page)) == ("0 of 4 reviewed", "pair 1 of 4")
    browser.shot(page, "first pair")

    def key(name: str, expect_pair: str) -> None:
        with page.expect_navigation():
            page.keyboard.press(name)
        assert pair(page) == expect_pair

    key("j", "pair 2 of 4")  # next
    key("k", "pair 1 of 4")  # previous
    key("p", "pair 2 of 4")  # pass: saved, and on to the next pair
    assert progress(page) == "1 of 4 reviewed"
    key("f", "pair 3 of 4")  # fail
    assert progress(page) == "2 of 4 reviewed"
    browser.shot(page, "two pairs labelled")
    # c: the note; keys typed there are text (this "p" and "f" label nothing); Escape leaves it.
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.name") == "note"
    page.keyboard.type("pf: unsure which backend")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement === document.body")
    assert pair(page) == "pair 3 of 4" and progress(page) == "2 of 4 reviewed"
    key("u", "pair 4 of 4")  # unsure, with the note
    assert progress(page) == "3 of 4 reviewed"
    # Back to the list: the page that holds this pair.
    crumb = page.locator("nav.crumbs a", has_text="review queue").get_attribute("href")
    assert crumb is not None and crumb.endswith("page=2") == (page_size == 3)
    with page.expect_navigation():
        page.keyboard.press("f")
    # The last pair: back on the queue, which says the queue is done.
    assert page.locator(".messages").inner_text() == "4 of 4 reviewed: the end of this queue."
    assert page.locator("p.progress strong").inner_text() == "4 of 4 reviewed"
    browser.shot(page, "queue done")

    labels = list(HumanVerdict.objects.order_by("run__repetition", "item_id"))
    assert [(h.verdict, h.note, h.by) for h in labels] == [
        ("pass", "", reviewer),
        ("fail", "", reviewer),
        ("unsure", "pf: unsure which backend", reviewer),
        ("fail", "", reviewer),
    ]


def test_a_viewer_sees_no_controls(
    browser: Browser, graded: RubricRevision, repository: Repository, viewer: User
) -> None:
    page = browser.log_in("viewer")
    for name, url in repository_pages(repository, graded).items():
        response = page.goto(url)
        assert response is not None and response.status == 200, name
        main = page.locator("main")
        # Nothing that changes anything: no form that posts, no htmx post. The one download is the admitted
        # revision's rubric.json (read access, issue 35), which the viewer's download below fetches.
        assert main.locator("form[method=post], [hx-post]").count() == 0, name
        for button in main.locator("button").all():  # only the filters' buttons, which only read
            assert button.evaluate("b => b.form && b.form.method") == "get", name
        assert (
            main.get_by_role(
                "link", name=re.compile("Download(?! figure| rubric\\.json)|Edit|Approve|Admit")
            ).count()
            == 0
        ), name
        browser.shot(page, f"viewer {name}")
    page.goto(repository_pages(repository, graded)["revision"])
    download = page.request.get(
        page.locator("main a", has_text="Download rubric.json").first.get_attribute("href")
    )
    assert download.status == 200 and download.json()["task"] == graded.task.task_id
    page.goto(repository_pages(repository, graded)["queue entry"])
    assert "your role reads" in page.locator("main").inner_text()
    # The keys that label do nothing for a viewer.
    page.keyboard.press("p")
    page.wait_for_timeout(300)
    assert HumanVerdict.objects.count() == 0


def test_an_outsider_gets_404(
    browser: Browser, graded: RubricRevision, repository: Repository, outsider: User
) -> None:
    page = browser.log_in("outsider")
    assert page.locator("main").inner_text().count(repository.name) == 0  # not listed
    assert "You have no role on any repository yet" in page.locator("main").inner_text()
    for name, url in repository_pages(repository, graded).items():
        response = page.goto(url)
        assert response is not None and response.status == 404, name
        assert page.locator("main h1").inner_text() == "Not found", name
        assert repository.name not in page.locator("body").inner_text(), name
    browser.shot(page, "outsider 404")
