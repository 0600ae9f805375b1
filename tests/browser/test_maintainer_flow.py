"""A maintainer's whole path through the app in Chromium, each step a function of its own: log in, import a
task with its rubric (zip upload), edit a blocker, approve every item, calibrate with the scripted judge
and watch the rows arrive, see the revision admitted, import runs, open the report and its chart, export
rubric.json and get exactly the file `grading` validates, then dispute a blocker and export only after
confirming."""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from grading.loaders import load_rubric, parse_rubric
from rubrics_app.models import (
    AgentRun,
    CalibrationRun,
    CalibrationStatus,
    GradeSource,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
)
from tests.app.conftest import CALIBRATION_FILES, ORACLE_DIFF, RUBRIC
from tests.app.runs_helpers import DISAGREEING, PASSING, grade, write_run, write_scripted, zip_dir
from tests.browser.conftest import Browser, Worker, off_the_loop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

TASK_ID = RUBRIC["task"]
EDITED_B1 = "A fraction above 1 raises ValueError naming the parameter; it is never silently clamped."
CALIBRATION_SECONDS = 60


@dataclass
class Flow:
    """What the steps share: the maintainer's page, the browser (screenshots), the repository, a scratch
    folder, and what earlier steps learned."""

    browser: Browser
    page: Any
    repository: Repository
    scratch: Path
    worker: Worker
    revision: RubricRevision | None = None

    def shot(self, step: str) -> None:
        self.browser.shot(self.page, step)

    def url(self, path: str) -> str:
        return f"/repos/{self.repository.pk}/{path}"


def task_zip() -> bytes:
    """tasks/<id>/: rubric.json, task.json, the oracle diff and the calib diffs, as a checkout holds them."""
    task_json = {"id": TASK_ID, "prompt": "Make fit() reject fraction > 1.", "gate": ["pass"]}
    files = {
        "rubric.json": json.dumps(RUBRIC, indent=2).encode(),
        "task.json": json.dumps(task_json).encode(),
        "oracle.diff": ORACLE_DIFF,
        **CALIBRATION_FILES,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"tasks/{TASK_ID}/{name}", data)
    return buffer.getvalue()


def upload(page: Any, form: str, name: str, data: bytes, button: str) -> None:
    page.set_input_files(
        f"{form} input[type=file]", {"name": name, "mimeType": "application/zip", "buffer": data}
    )
    page.locator(form).get_by_role("button", name=button).click()


# --- the steps, in order ------------------------------------------------------------------------------------


def open_repository(flow: Flow) -> None:
    page = flow.page
    page.get_by_role("link", name=flow.repository.name).click()
    page.wait_for_url(re.compile(re.escape(flow.url("")) + "$"))
    assert page.locator("h1").inner_text().endswith("· Maintainer")
    flow.shot("repository")


def import_task(flow: Flow) -> None:
    page = flow.page
    upload(page, "#upload-form", "task.zip", task_zip(), "Import as a draft")
    # One task imported: its new draft opens.
    page.wait_for_url(re.compile(r"/revisions/\d+/$"))
    assert page.locator(".messages").inner_text() == f"Imported as draft: {TASK_ID} r1."
    assert page.locator("#revision-status .badge.draft").is_visible()
    assert page.locator(".review-progress").inner_text() == "0 of 5 items approved"
    flow.revision = RubricRevision.objects.get(task__repository=flow.repository, task__task_id=TASK_ID)
    assert bytes(flow.revision.task.oracle_diff) == ORACLE_DIFF
    flow.shot("task imported as a draft")


def edit_blocker(flow: Flow) -> None:
    page = flow.page
    b1 = page.locator("article.item", has=page.locator(".item-id", has_text="B1"))
    b1.get_by_role("link", name="Edit").click()
    criterion = b1.locator("textarea[name=criterion]")
    criterion.fill(EDITED_B1)
    flow.shot("editing blocker B1")
    b1.get_by_role("button", name="Save").click()
    b1.locator(".item-criterion").wait_for()
    assert b1.locator(".item-criterion").inner_text() == EDITED_B1
    assert flow.revision is not None
    assert flow.revision.items.get(item_id="B1").criterion == EDITED_B1
    flow.shot("blocker B1 edited")


def approve_every_item(flow: Flow) -> None:
    page = flow.page
    approve = page.locator("article.item").get_by_role("button", name="Approve", exact=True)
    for approved in range(1, 6):
        approve.first.click()
        if approved < 5:
            page.locator(".review-progress", has_text=f"{approved} of 5 items approved").wait_for()
    # The last approval turns the revision approved; the status card says so in place.
    page.locator("#revision-status .badge.approved").wait_for()
    assert approve.count() == 0
    assert flow.revision is not None
    flow.revision.refresh_from_db()
    assert flow.revision.status == RevisionStatus.APPROVED
    flow.shot("every item approved")


def calibrate_and_watch_the_rows(flow: Flow) -> None:
    page = flow.page
    page.get_by_role("button", name="Admit").click()
    page.wait_for_url(re.compile(r"/calibrations/\d+/$"))
    # No worker yet: the run waits in the queue and the page polls for rows.
    assert page.locator("#calibration-rows .badge.calibration-queued").is_visible()
    assert page.locator("#calibration-rows .badge.scripted").first.is_visible()
    assert "No row finished yet." in page.locator("#calibration-rows").inner_text()
    assert page.locator("#calibration-rows[hx-trigger='every 1s']").count() == 1
    flow.shot("calibration queued")
    # Remember this document and every swap of the rows, to tell htmx polling from a reload.
    page.evaluate(
        """() => {
        window.sameDocument = true;
        window.rowCounts = [];
        new MutationObserver(() => {
          const rows = document.querySelectorAll("#calibration-rows tr[id^=row-]").length;
          if (window.rowCounts.at(-1) !== rows) window.rowCounts.push(rows);
        }).observe(document.querySelector("main"), {childList: true, subtree: true});
    }"""
    )
    flow.worker.start()
    # Rows that hold arrive folded (details), so wait for them in the document, not on screen.
    page.locator("#calibration-rows tr.holds[id^=row-]").first.wait_for(
        state="attached", timeout=CALIBRATION_SECONDS * 1000
    )
    # The injection suite's rows follow the admission rows: wait for the run to end (polling stops).
    page.locator("#calibration-rows:not([hx-trigger])").wait_for(timeout=CALIBRATION_SECONDS * 1000)
    assert page.evaluate("window.sameDocument") is True  # the rows came by htmx, not by a reload
    counts = page.evaluate("window.rowCounts")
    assert counts and counts[-1] >= 5, counts  # rows were swapped into the page as they came
    assert page.locator("#calibration-rows table.calibration tr.holds[id^=row-]").count() >= 5
    # Every row held: they are folded behind their count, under the per-kind summary.
    assert " rows hold" in page.locator("#rows-holding > summary").inner_text()
    assert not page.locator("#rows-holding tr.holds").first.is_visible()
    # Admit runs the injection suite too (its box is ticked by default): every payload kind is listed and
    # no attack succeeded, or the revision would not be admitted.
    suite = page.locator("#injection-suite tbody tr")
    assert suite.count() >= 30
    assert "attack success" not in page.locator("#injection-suite").inner_text()
    assert page.locator("#calibration-rows[hx-trigger]").count() == 0  # finished: polling stopped
    run = CalibrationRun.objects.get(revision=flow.revision)
    assert run.status == CalibrationStatus.PASSED and run.scripted
    assert run.injection_suite and run.attacks > 0 and run.attack_successes == 0
    flow.shot("calibration passed")


def see_the_revision_admitted(flow: Flow) -> None:
    page = flow.page
    assert flow.revision is not None
    page.goto(flow.url(f"revisions/{flow.revision.pk}/"))
    page.locator("#revision-status .badge.admitted").wait_for()
    assert "Admitted" in page.locator("#revision-status").inner_text()
    assert page.get_by_role("link", name="Download rubric.json").is_visible()
    flow.revision.refresh_from_db()
    assert flow.revision.status == RevisionStatus.ADMITTED
    flow.shot("revision admitted")


def import_runs(flow: Flow) -> None:
    """Two agent runs graded by `rubric grade` (scripted judges that disagree on B1 and N2) against the
    admitted rubric.json, zipped and uploaded on the repository page."""
    assert flow.revision is not None
    task_dir = flow.scratch / "checkout" / "tasks" / TASK_ID
    task_dir.mkdir(parents=True)
    (task_dir / "rubric.json").write_bytes(flow.revision.rubric_json_bytes())
    (task_dir / "task.json").write_text(json.dumps({"id": TASK_ID, "prompt": "Fix it.", "gate": ["pass"]}))
    primary = write_scripted(flow.scratch / "primary.json", PASSING)
    second = write_scripted(flow.scratch / "second.json", DISAGREEING)
    runs = flow.scratch / "runs"

    def grade_runs() -> None:
        for repetition in (0, 1):
            grade(task_dir, write_run(runs, f"rep{repetition}", repetition=repetition), primary, second)

    off_the_loop(grade_runs)

    page = flow.page
    page.goto(flow.url(""))
    upload(page, "#runs-form", "runs.zip", zip_dir(runs, "batch/"), "Import runs")
    page.locator(".messages", has_text="Runs:").wait_for()
    assert page.get_by_role("link", name="Review queue").is_visible()
    queue = page.locator("p", has=page.get_by_role("link", name="Review queue")).inner_text()
    assert "4 judge disagreements" in queue, queue  # B1 and N2 on each run
    assert AgentRun.objects.filter(task__repository=flow.repository).count() == 2
    assert RunGrade.objects.filter(run__task__repository=flow.repository, revision=flow.revision).count() == 2
    flow.shot("runs imported")


def sweep_the_runs(flow: Flow) -> None:
    """The repository's Sweep button grades the imported runs in the app with the repository's (scripted)
    judge, on the worker; the sweep page polls its progress until the job ends."""
    page = flow.page
    page.goto(flow.url(""))
    page.locator("form.sweep-form").get_by_role("button", name="Sweep").click()
    page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    page.locator("#sweep-progress .badge.job-done").wait_for(timeout=CALIBRATION_SECONDS * 1000)
    progress = page.locator("#sweep-progress").inner_text()
    assert "2 of 2" in progress and "Every run is graded" in progress, progress
    assert page.locator("#sweep-progress .badge.scripted").is_visible()
    assert page.locator("#sweep-progress[hx-trigger]").count() == 0  # finished: polling stopped
    swept = RunGrade.objects.filter(run__task__repository=flow.repository, source=GradeSource.SWEEP)
    assert swept.count() == 2 and {g.revision_id for g in swept} == {flow.revision.pk}  # type: ignore[union-attr]
    flow.shot("sweep done")
    page.goto(flow.url(""))


def open_the_report(flow: Flow) -> None:
    page = flow.page
    page.get_by_role("link", name="Report").click()
    page.wait_for_url(re.compile(r"/report/$"))
    cells = page.locator("#report-cells tbody tr")
    assert cells.count() == 1
    assert cells.first.locator("td").nth(2).inner_text() == "2"  # runs in the cell
    chart = page.locator("figure.report-figure svg.report-chart")
    assert chart.is_visible()
    assert chart.locator("circle").count() >= 1  # the mergeable rate is drawn
    box = chart.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    assert page.locator("#report-judges .badge", has_text="scripted").count() >= 1
    flow.shot("report and chart")


def export_rubric_json(flow: Flow) -> None:
    page = flow.page
    assert flow.revision is not None
    page.goto(flow.url(f"revisions/{flow.revision.pk}/"))
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download rubric.json").click()
    download = download_info.value
    assert download.suggested_filename == "rubric.json"
    exported = flow.scratch / "export" / "rubric.json"
    exported.parent.mkdir()
    download.save_as(str(exported))
    for rel, data in CALIBRATION_FILES.items():
        (exported.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        (exported.parent / rel).write_bytes(data)
    # Exactly the file grading writes for the validated rubric with the edited blocker.
    edited = json.loads(json.dumps(RUBRIC))
    edited["blockers"][0]["criterion"] = EDITED_B1
    validated = load_rubric(exported)
    assert exported.read_bytes() == validated.dumps().encode() == parse_rubric(edited).dumps().encode()
    flow.shot("rubric.json exported")


def dispute_then_export(flow: Flow) -> None:
    """A maintainer disputes blocker B1 of the admitted revision; the revision page then says so, and a
    download asks for a confirmation naming B1 before anything leaves."""
    page = flow.page
    assert flow.revision is not None
    revision_url = flow.url(f"revisions/{flow.revision.pk}/")
    page.goto(revision_url)
    page.locator("p", has_text="Dispute a blocker:").get_by_role("link", name="B1", exact=True).click()
    page.get_by_label("Why the blocker is wrong").fill("Clamping is what the upstream docs promise.")
    page.get_by_role("button", name="Mark disputed").click()
    page.locator(".messages", has_text="B1 is disputed").wait_for()
    assert f"revision {flow.revision.number} needs re-review" in page.locator(".messages").inner_text()
    page.goto(revision_url)
    assert page.locator(".badge.needs-re-review").first.is_visible()
    assert "Disputed: B1." in page.locator(".export-disputed").inner_text()
    flow.shot("blocker B1 disputed")
    # The download does not go through silently: a page names the disputed blocker and wants a tick.
    page.get_by_role("link", name="Download rubric.json").click()
    page.locator("#export-disputed").wait_for()
    assert "B1 is disputed" in page.locator("#export-disputed").inner_text()
    assert "Nothing has been exported yet." in page.locator("#export-disputed").inner_text()
    flow.shot("export asks for a confirmation")
    confirm = page.locator("#export-confirm")
    confirm.get_by_role("button").click()  # not ticked: the browser keeps the form (required checkbox)
    assert page.locator("#export-disputed").is_visible()
    confirm.get_by_role("checkbox").check()
    with page.expect_download() as download_info:
        confirm.get_by_role("button").click()
    download = download_info.value
    assert download.suggested_filename == "rubric.json"
    exported = flow.scratch / "disputed-export.json"
    download.save_as(str(exported))
    assert exported.read_bytes() == flow.revision.rubric_json_bytes()


def test_a_maintainer_imports_calibrates_admits_and_reports(
    browser: Browser, worker: Worker, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    flow = Flow(browser, browser.log_in("maintainer"), repository, tmp_path, worker)
    flow.shot("logged in")
    open_repository(flow)
    import_task(flow)
    edit_blocker(flow)
    approve_every_item(flow)
    calibrate_and_watch_the_rows(flow)
    see_the_revision_admitted(flow)
    import_runs(flow)
    sweep_the_runs(flow)
    open_the_report(flow)
    export_rubric_json(flow)
    dispute_then_export(flow)
