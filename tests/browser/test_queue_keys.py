"""The review queue as a labelling tool, in Chromium (issue 21 §5): the keys (n the next unlabelled pair,
p / f / u a verdict, z undo), the verdict buttons on screen at 1280 x 800 however long the diff, the task ids
at 390 px, and a re-sweep after a new admission listing each pair once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    AgentRunDiff,
    HumanVerdict,
    JobStatus,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
)
from rubrics_app.services.report_rows import refresh_report_rows
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import SweepRequest
from tests.app.conftest import MakeRevision, judge_answers, rubric_data
from tests.app.sweep_helpers import import_runs
from tests.browser.conftest import PHONE, Browser, off_the_loop
from tests.browser.graded import graded_fixture  # noqa: F401 - the graded fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

LAPTOP = {"width": 1280, "height": 800}


def progress(page: Any) -> str:
    return str(page.locator(".queue-bar strong").inner_text())


def pair(page: Any) -> str:
    return str(re.sub(r".*(pair \d+ of \d+).*", r"\1", page.locator(".queue-bar .muted").inner_text()))


def press(page: Any, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def labels() -> list[tuple[int, str, str]]:
    return list(
        HumanVerdict.objects.order_by("run__repetition", "item_id").values_list(
            "run__repetition", "item_id", "verdict"
        )
    )


def test_the_keys_label_undo_and_find_the_next_unlabelled_pair(
    browser: Browser, graded: RubricRevision, repository: Repository, reviewer: User
) -> None:
    page = browser.log_in("reviewer", viewport=LAPTOP)
    page.goto(f"/repos/{repository.pk}/queue/")
    assert "n" in page.locator("#queue-next-unlabelled + kbd").inner_text()
    press(page, "n")  # the first unlabelled pair
    assert (progress(page), pair(page)) == ("0 of 4 reviewed", "pair 1 of 4")
    press(page, "f")  # fail: saved, on to pair 2, and the page says what was saved
    assert (progress(page), pair(page)) == ("1 of 4 reviewed", "pair 2 of 4")
    saved = page.locator("#queue-saved").inner_text()
    assert saved.startswith("Saved: fail on B1 on fix_fraction_gt1") and "Undo" in saved
    browser.shot(page, "saved with undo")
    press(page, "z")  # undo: the label is gone and we are back on its pair
    assert (progress(page), pair(page)) == ("0 of 4 reviewed", "pair 1 of 4")
    assert "Undone: B1 on fix_fraction_gt1" in page.locator(".messages").inner_text()
    assert page.locator("#queue-saved").count() == 0 and labels() == []
    browser.shot(page, "undone")
    press(page, "p")  # pass on pair 1
    press(page, "j")  # to pair 3, leaving pair 2 unlabelled
    assert pair(page) == "pair 3 of 4"
    press(page, "u")  # unsure on pair 3: on to pair 4
    assert pair(page) == "pair 4 of 4"
    press(page, "n")  # the next unlabelled after pair 4 goes round to pair 2
    assert (progress(page), pair(page)) == ("2 of 4 reviewed", "pair 2 of 4")
    # c: the note; keys typed there are text, Escape leaves it.
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.name") == "note"
    page.keyboard.type("nz: two keys as text")
    page.keyboard.press("Escape")
    press(page, "f")
    assert pair(page) == "pair 3 of 4" and progress(page) == "3 of 4 reviewed"
    assert labels() == [(0, "B1", "pass"), (0, "N2", "fail"), (1, "B1", "unsure")]
    assert HumanVerdict.objects.get(item_id="N2").note == "nz: two keys as text"
    # The list shows each verdict given, and the end of the list says what remains.
    page.goto(f"/repos/{repository.pk}/queue/")
    verdicts = page.locator("table.list tbody tr td:last-child").all_inner_texts()
    assert verdicts == ["pass", "fail", "unsure", "not yet"]
    end = page.locator("#queue-end").inner_text()
    assert "1 pair of this queue still unlabelled" in end and "end of this queue" not in end
    browser.shot(page, "list with verdicts")
    # The unlabelled-only list, and n from there.
    page.locator("#queue-show-unlabelled").click()
    assert page.locator("table.list tbody tr").count() == 1
    press(page, "n")
    assert "pair 1 of 1 unlabelled" in page.locator(".queue-bar .muted").inner_text()
    press(page, "p")
    assert page.locator(".messages").inner_text() == "4 of 4 reviewed: the end of this queue."
    assert "The end of this queue: every pair is labelled." in page.locator("main").inner_text()
    browser.shot(page, "queue done")


def test_the_verdict_buttons_stay_on_screen_over_a_long_diff(
    browser: Browser, graded: RubricRevision, repository: Repository, reviewer: User
) -> None:
    grade = RunGrade.objects.order_by("run__repetition").first()
    assert grade is not None
    lines = "".join(f"+    step_{n} = fraction(x) * {n}  # a long change\n" for n in range(600))
    head = "diff --git a/src/long.py b/src/long.py\n--- /dev/null\n+++ b/src/long.py\n@@ -0,0 +1,600 @@\n"
    long_diff = head + lines
    AgentRunDiff.objects.filter(run=grade.run).update(content=long_diff.encode())
    page = browser.log_in("reviewer", viewport=LAPTOP)
    page.goto(f"/repos/{repository.pk}/queue/{grade.pk}/B1/?kind=judges")
    height = page.evaluate("document.scrollingElement.scrollHeight")
    assert height > 10 * LAPTOP["height"], height  # the diff is many screens long

    def on_screen() -> list[str]:
        problems = []
        for value in ("pass", "fail", "unsure"):
            box = page.locator(f"#human-verdict button[value={value}]").bounding_box()
            assert box is not None
            if box["y"] < 0 or box["y"] + box["height"] > LAPTOP["height"] or box["x"] + box["width"] > 1280:
                problems.append(f"{value}: {box}")
        return problems

    assert on_screen() == []  # above the fold when the page opens
    browser.shot(page, "long diff, top")
    for fraction in (0.5, 1.0):  # and while the diff scrolls under them
        page.evaluate(f"window.scrollTo(0, document.scrollingElement.scrollHeight * {fraction})")
        page.wait_for_function(f"window.scrollY >= {int((height - LAPTOP['height']) * fraction) - 2}")
        assert on_screen() == [], fraction
    page.screenshot(path=str(browser.artifacts / "long-diff-bottom.png"))  # the viewport, not the page
    page.locator("#human-verdict button[value=fail]").click()
    page.locator(".queue-bar strong", has_text="1 of 4 reviewed").wait_for()
    assert labels() == [(0, "B1", "fail")]


def test_task_ids_do_not_break_letter_by_letter_on_a_phone(
    browser: Browser, graded: RubricRevision, repository: Repository, reviewer: User
) -> None:
    # Long arm and model names, as real runs have, squeeze the task column hardest.
    graded_runs = RunGrade.objects.values_list("run_id", flat=True)
    AgentRun.objects.filter(pk__in=graded_runs).update(
        arm="guidance-with-tests", model="claude-sonnet-4-5-20250929"
    )
    # A run's arm and model never change in the app (its admin is read-only): a test that changes them
    # rewrites what is derived from them, the report rows and the queue's pairs, as an import would.
    refresh_report_rows(RunGrade.objects.values_list("pk", flat=True))
    page = browser.log_in("reviewer", viewport=PHONE)
    page.goto(f"/repos/{repository.pk}/queue/")
    browser.shot(page, "phone queue list")
    ids = page.locator("table.list td.task-id code")
    assert ids.count() == 4
    for index in range(4):
        lines = ids.nth(index).evaluate("code => code.getClientRects().length")
        box = ids.nth(index).bounding_box()
        assert lines == 1 and box is not None and box["height"] < 24, (lines, box)
        assert ids.nth(index).inner_text() == "fix_fraction_gt1"
        # The run (arm / model #repetition) goes under the task id; the item and its verdict are on screen.
        row = page.locator("table.list tbody tr").nth(index)
        assert row.locator(
            ".run-line"
        ).inner_text() == "guidance-with-tests / claude-sonnet-4-5-20250929 #" + ("0" if index < 2 else "1")
        verdict = row.locator("td:last-child").bounding_box()
        assert verdict is not None and verdict["x"] + verdict["width"] <= PHONE["width"], verdict
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= inner


def _sweep(repository: Repository, maintainer: User) -> None:
    done = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(second_sample=1.0), cache=MemoryCache()
    )
    assert done.job.status == JobStatus.DONE, done.job.error


NEW_CRITERION = "fit() refuses a fraction above 1 with a ValueError naming the value."


def test_a_re_sweep_after_a_new_admission_lists_each_pair_once(
    browser: Browser,
    repository: Repository,
    make_revision: MakeRevision,
    maintainer: User,
    reviewer: User,
    tmp_path: Path,
) -> None:
    """4 runs swept against r1 by a primary judge that fails B1 and a second that passes everything, then r2
    (a new B1 text) admitted and the runs swept again: each run has two grades, and the queue lists B1 of
    each run once, against r2's text, with no provisional grade in it."""
    runs = 4
    first = off_the_loop(lambda: make_revision(RevisionStatus.ADMITTED))
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"default": judge_answers()}))
    JudgeSetting.objects.filter(repository=repository).update(second_judge=f"scripted:{second}")
    off_the_loop(lambda: import_runs(repository, tmp_path / "runs", runs))
    off_the_loop(lambda: _sweep(repository, maintainer))
    data = rubric_data(task=first.task.task_id)
    data["blockers"][0]["criterion"] = NEW_CRITERION
    off_the_loop(lambda: make_revision(RevisionStatus.ADMITTED, data=data))
    off_the_loop(lambda: _sweep(repository, maintainer))
    assert RunGrade.objects.count() == 2 * runs

    page = browser.log_in("reviewer", viewport=LAPTOP)
    page.goto(f"/repos/{repository.pk}/queue/")
    assert page.locator("p.progress strong").inner_text() == f"0 of {runs} reviewed"
    rows = page.locator("table.list tbody tr").all_inner_texts()
    assert len(rows) == runs and len(set(rows)) == runs  # each run's B1 once
    browser.shot(page, "queue after a re-sweep")
    press(page, "n")
    seen = []
    while True:
        main = page.locator("main").inner_text()
        assert NEW_CRITERION in main, main[:500]
        assert "provisional" not in main
        seen.append((pair(page), page.url.split("?")[0]))
        if page.locator("#queue-next").count() == 0:
            break
        press(page, "j")
    assert [position for position, _ in seen] == [f"pair {n} of {runs}" for n in range(1, runs + 1)]
    assert len({url for _, url in seen}) == runs
    browser.shot(page, "last pair after a re-sweep")
