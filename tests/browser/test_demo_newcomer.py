"""The demo as a newcomer opens it (issue 35): after load_demo, log in, open the example task, and find the
shipped runs' current grades (against the admitted r1, by the scripted judge) with no sweep; on a phone each
row shows arm, model, repetition and mergeable without scrolling sideways."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from rubrics_app.management.commands.load_demo import DEMO_REPETITIONS
from rubrics_app.models import JudgeSetting, RevisionStatus, Sweep, Task
from tests.app.conftest import PASSWORD
from tests.browser.conftest import DESKTOP, PHONE, Browser, off_the_loop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

RUN_ROWS = "table#task-runs tbody tr"


def test_a_newcomer_finds_current_grades_on_the_demo_task_page(
    browser: Browser, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    settings.RUBRICS_DEMO = True
    # load_demo judges (asyncio.run), which cannot run in this thread, where Playwright's loop is.
    off_the_loop(lambda: call_command("load_demo", "--password", PASSWORD, stdout=io.StringIO()))
    task = Task.objects.get(task_id="fix_clockwise_polygon_area")
    admitted = task.revisions.get(status=RevisionStatus.ADMITTED)
    judge = JudgeSetting.objects.get(repository=task.repository).judge

    for viewport in (DESKTOP, PHONE):
        page = browser.log_in("demo", viewport)
        page.locator("main a", has_text=task.repository.name).first.click()
        page.locator("main a", has_text=task.task_id).first.click()
        page.wait_for_url(re.compile(rf"/tasks/{task.pk}/$"))
        rows = page.locator(RUN_ROWS)
        assert rows.count() == 2 * DEMO_REPETITIONS
        browser.shot(page, f"the demo's task page at {viewport['width']} px")
        inner = page.evaluate("window.innerWidth")
        for index in range(rows.count()):
            cells = rows.nth(index).locator("td")
            arm, model, repetition, mergeable, _, graded = (cells.nth(i) for i in range(6))
            # Current: against the admitted revision, not provisional, judged by the scripted judge, whose
            # full spec (a file path) is on hover only.
            assert graded.inner_text().split() == [f"r{admitted.number}", "scripted"]
            assert graded.locator(".judge").get_attribute("title") == judge
            assert mergeable.inner_text() in ("true", "false")
            # Every one of these is on screen as the page opens, without scrolling the table sideways.
            for cell in (arm, model, repetition, mergeable):
                box = cell.bounding_box()
                assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= inner, (viewport, box)
            row_box = rows.nth(index).bounding_box()
            assert row_box is not None and row_box["height"] < 80, row_box  # one line or two, not 215 px
    assert not Sweep.objects.exists()
