"""The demo's report in Chromium (issue 35): short at 1280 px with every figure on show, and at 390 px
every chart's text inside its chart.

The demo (manage.py load_demo) ships two runs; the report the issue measured had eight cells and their
contrasts, so the test adds graded runs of four more tasks in the demo's two arms under four models
(eight cells, sixteen pairs compared), in two prompt styles. Before issue 35 this page was 11,519 px tall
at 1280 px and 23,822 px at 390 px, with forest-plot titles running to x = 548 px in a 366 px chart."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from rubrics_app.models import AgentRun, Repository, RunGrade, Task
from rubrics_app.services.report_rows import refresh_report_rows
from tests.app.conftest import PASSWORD
from tests.app.report_rows import bulk_runs
from tests.browser.conftest import DESKTOP, PHONE, Browser, off_the_loop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

# Under half the 9,642 px the issue measured at 1280 px for a smaller report (ten pairs, eight cells).
MAX_HEIGHT_1280 = 4800

# Per <svg> of the page: its class, its box, and each <text> whose box leaves it (its text and box).
TEXT_OUTSIDE = """() => [...document.querySelectorAll("main svg")].map(svg => {
  const box = svg.getBoundingClientRect();
  const outside = [...svg.querySelectorAll("text")].map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([, b]) => b.left < box.left - 0.5 || b.right > box.right + 0.5
                    || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5)
    .map(([text, b]) =>
       `${JSON.stringify(text.slice(0, 50))} at ${Math.round(b.left)}..${Math.round(b.right)}`);
  return [svg.getAttribute("class"), Math.round(box.left), Math.round(box.right), outside];
})"""


def demo_with_eight_cells() -> Repository:
    call_command("load_demo", "--password", PASSWORD, stdout=io.StringIO())
    repository = Repository.objects.get(name="shapes")
    tasks = [
        Task.objects.create(repository=repository, task_id=f"extra_task_{i}", spec_prompt="x")
        for i in range(4)
    ]
    bulk_runs(tasks, ["baseline", "guidance"], [f"example-model-{m}" for m in "abcd"], 3)
    for i, task in enumerate(tasks):
        AgentRun.objects.filter(task=task).update(prompt_style="issue" if i % 2 else "spec")
    refresh_report_rows(RunGrade.objects.filter(run__task__in=tasks).values_list("pk", flat=True))
    return repository


def open_report(browser: Browser, repository: Repository, viewport: dict[str, int]) -> Any:
    page = browser.log_in("demo", viewport=viewport)
    response = page.goto(f"/repos/{repository.pk}/report/")
    assert response is not None and response.status == 200
    return page


def test_the_demo_report_is_short_on_a_screen_and_its_charts_fit_a_phone(
    browser: Browser, settings: Any, tmp_path: Path
) -> None:
    settings.VAR_DIR = tmp_path / "var"
    settings.RUBRICS_DEMO = True
    # load_demo judges (asyncio.run), which cannot run in this thread, where Playwright's loop is.
    repository = off_the_loop(demo_with_eight_cells)

    page = open_report(browser, repository, DESKTOP)
    browser.shot(page, "report 1280")
    assert page.locator("#report-cells tbody tr").count() == 8
    assert page.locator("#report-contrasts tbody tr:not(.group):not(.within)").count() == 16  # one a pair
    height = page.evaluate("document.scrollingElement.scrollHeight")
    assert height < MAX_HEIGHT_1280, f"the report is {height} px tall at {DESKTOP['width']} px"
    # No figure is folded away: the forest plot, the rates chart and a histogram per task are on show.
    charts = page.locator("main svg.report-chart")
    assert charts.count() >= 3
    hidden = [chart.get_attribute("class") for chart in charts.all() if not chart.is_visible()]
    assert not hidden, f"hidden figures: {hidden}"

    page = open_report(browser, repository, PHONE)
    browser.shot(page, "report 390")
    svgs = page.evaluate(TEXT_OUTSIDE)
    assert {"report-chart forest-plot", "report-chart rates-chart"} <= {cls for cls, *_ in svgs}
    problems = [f"{cls} ({left}..{right}): {', '.join(out)}" for cls, left, right, out in svgs if out]
    assert not problems, f"chart text outside its chart at {PHONE['width']} px:\n" + "\n".join(problems)
