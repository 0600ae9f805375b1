"""A label given after the session ended, in Chromium (issue 32 §5, issue 35): the session cookie is deleted,
the reviewer presses `p` on a pair, the login page says the session ended and what the form was for, and
after the login the label waits on its confirm page until the reviewer sends it; then it is saved and the
queue moves on as a label always does."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from rubrics_app.models import HumanVerdict, Repository, RubricRevision
from tests.app.conftest import PASSWORD
from tests.browser.conftest import Browser
from tests.browser.graded import graded_fixture  # noqa: F401 - the graded fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]


def press(page: Any, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def labels() -> list[tuple[str, str, str]]:
    return list(HumanVerdict.objects.values_list("item_id", "verdict", "note"))


def test_a_label_pressed_after_the_session_ended_is_sent_once_confirmed(
    browser: Browser, graded: RubricRevision, repository: Repository, reviewer: User
) -> None:
    page = browser.log_in("reviewer")
    page.goto(f"/repos/{repository.pk}/queue/")
    press(page, "n")  # the first unlabelled pair
    pair_url = page.url
    assert page.locator(".queue-bar strong").inner_text() == "0 of 4 reviewed"
    page.fill("#human-verdict textarea", "checked <by hand>")
    page.keyboard.press("Escape")

    # The session ends: the browser no longer has its cookie (the CSRF cookie stays, as it would).
    context = page.context
    cookies = context.cookies()
    assert any(c["name"] == settings.SESSION_COOKIE_NAME for c in cookies)
    context.clear_cookies()
    context.add_cookies([c for c in cookies if c["name"] != settings.SESSION_COOKIE_NAME])

    press(page, "p")
    assert "/accounts/login/" in page.url
    said = page.locator("#session-ended").inner_text()
    assert "Your session ended" in said and "records a reviewer's verdict on a pair" in said
    browser.shot(page, "login says the session ended")
    assert labels() == []

    page.fill("#id_username", "reviewer")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("main button[type=submit]")
    assert page.url.endswith("/accounts/resume/")
    shown = page.locator("#resume-post table").inner_text()
    assert re.search(r"verdict\s+pass", shown) and "checked <by hand>" in shown
    browser.shot(page, "the label waits to be confirmed")
    assert labels() == []  # waiting: nothing is sent without the click

    with page.expect_navigation():
        page.click("#resume-send")
    assert labels() == [("B1", "pass", "checked <by hand>")]
    # The label's own answer: the next pair, the count moved on, and what was saved.
    assert page.url != pair_url and "/queue/" in page.url
    assert page.locator(".queue-bar strong").inner_text() == "1 of 4 reviewed"
    assert page.locator("#queue-saved").inner_text().startswith("Saved: pass on B1")
    browser.shot(page, "saved after the login")
