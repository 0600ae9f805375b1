"""The demo's "Draft from PR" in Chromium (issue 21 §6): the login page names the demo users, the demo
maintainer uploads the shipped PR export on the example task, a real worker runs the scripted drafter, and
the draft revision it made opens, labelled as scripted."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from rubrics_app.models import RubricDraft, Task
from tests.app.conftest import PASSWORD
from tests.browser.conftest import DESKTOP, Browser, Worker, off_the_loop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

EXPORT = Path(django_settings.BASE_DIR) / "examples" / "pr_fix_clockwise_polygon_area.json"
DRAFT_SECONDS = 60


def test_the_demo_drafts_from_the_shipped_pr_export(
    browser: Browser, worker: Worker, settings: Any, tmp_path: Path
) -> None:
    worker.start()  # first: it takes the broker's folders from VAR_DIR, which the demo's files then leave
    settings.VAR_DIR = tmp_path / "var"
    settings.RUBRICS_DEMO = True
    # load_demo judges (asyncio.run), which cannot run in this thread, where Playwright's loop is.
    off_the_loop(lambda: call_command("load_demo", "--password", PASSWORD, stdout=io.StringIO()))
    task = Task.objects.get(task_id="fix_clockwise_polygon_area")

    page = browser.open("demo", DESKTOP)
    page.goto("/accounts/login/")
    demo_logins = page.locator("#demo-logins").inner_text()
    assert "demo (maintainer)" in demo_logins and "demo-reviewer (reviewer)" in demo_logins
    browser.shot(page, "login page names the demo users")
    page.fill("#id_username", "demo")
    page.fill("#id_password", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r"/$"))

    page.goto(f"/repos/{task.repository.pk}/tasks/{task.pk}/")
    form = page.locator("#draft-from-pr")
    # The demo's drafter is the scripted one, and says so; the form names the file to upload.
    assert "The scripted drafter, a stand-in for demos and tests" in form.inner_text()
    assert "upload the example PR export examples/pr_fix_clockwise_polygon_area.json" in form.inner_text()
    page.set_input_files("#draft-from-pr input[type=file]", str(EXPORT))
    form.get_by_role("button", name="Draft from PR").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    browser.shot(page, "drafting job queued")

    deadline = time.monotonic() + DRAFT_SECONDS
    while not page.locator(".badge.job-done").count():
        assert not page.locator(".badge.job-failed").count(), page.locator("main").inner_text()
        assert time.monotonic() < deadline, f"the drafting job did not end: {_job_state(task)}"
        page.wait_for_timeout(500)
        page.reload()
    browser.shot(page, "drafting job done")
    record = RubricDraft.objects.get(task=task)
    assert record.revision is not None, record.error
    page.get_by_role("link", name=f"revision {record.revision.number}").click()
    page.wait_for_url(re.compile(rf"/revisions/{record.revision.pk}/$"))
    assert page.locator(".badge.scripted").count()
    assert page.locator(".badge.draft").count()
    status = " ".join(page.locator("#revision-status").inner_text().split())
    drafted = "Drafted by the scripted drafter from pr_fix_clockwise_polygon_area.json, asked for by demo,"
    assert drafted in status
    browser.shot(page, "the scripted draft")


def _job_state(task: Task) -> str:
    record = RubricDraft.objects.select_related("job").filter(task=task).first()
    if record is None or record.job is None:
        return "no drafting job"
    return f"job {record.job.pk} {record.job.status} {record.job.error} step {record.step}"
