"""A phone-width viewport (390 x 844 CSS pixels) in Chromium: the main pages do not scroll sideways
(document.scrollingElement.scrollWidth <= innerWidth) and their controls are on screen and usable."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from rubrics_app.models import AgentRun, HumanVerdict, Repository, RubricRevision, Task
from rubrics_app.services.runs.store import revision_sha256
from tests.app.report_rows import bulk_runs
from tests.app.runs_helpers import PASSING, grade, write_run, write_scripted, write_task_dir
from tests.browser.conftest import DESKTOP, PHONE, Browser, off_the_loop
from tests.browser.graded import graded_fixture  # noqa: F401 - the graded fixture
from tests.browser.pages import repository_pages

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

# The controls each page must keep on screen at phone width (Playwright selectors).
CONTROLS = {
    "repositories": ["main a[href*='/repos/']"],
    "repository": [
        "#upload-form button[type=submit]",
        "#upload-form input[type=file]",
        "#runs-form button[type=submit]",
        "main a[href$='/report/']",
        "main a[href$='/queue/']",
    ],
    "task": ["main a[href*='/revisions/']"],
    "revision": [
        "main a.button[href$='rubric.json']",
        "#revision-status button:has-text('Edit (start a new draft)')",
        "article.item .actions summary",
    ],
    "calibration": ["#calibration-rows details > summary", "#calibration-rows a[href*='/diff/']"],
    "judges": ["main button[type=submit]"],
    "task files": ["main button[type=submit]"],
    "queue": ["main form.filters button", "main a:has-text('label the next one')"],
    "queue entry": ["#human-verdict button[value=pass]", "#human-verdict button[value=fail]", "#queue-next"],
    "report": ["main form.filters button", "#cutoffs-form button[type=submit]"],
}


def overflow(page: Any) -> tuple[int, int]:
    """(scrollWidth, innerWidth) of the page."""
    width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    return int(width), int(inner)


def off_screen(page: Any, selector: str) -> str | None:
    """Why the first control matching ``selector`` cannot be used at this width (None: it can)."""
    control = page.locator(selector).first
    if control.count() == 0:
        return "missing"
    control.scroll_into_view_if_needed()
    if not (control.is_visible() and control.is_enabled()):
        return "hidden or disabled"
    box = control.bounding_box()
    inner = page.evaluate("window.innerWidth")
    if box is None or box["x"] < 0 or box["x"] + box["width"] > inner + 0.5:
        return f"outside the {inner} px viewport: {box}"
    return None


def pages(repository: Repository, revision: RubricRevision) -> dict[str, str]:
    return {"repositories": "/", **repository_pages(repository, revision)}


def check_page(browser: Browser, page: Any, name: str, url: str) -> list[str]:
    """What is wrong with one page at phone width."""
    response = page.goto(url)
    assert response is not None and response.status == 200, name
    problems = []
    width, inner = overflow(page)
    if width > inner:
        problems.append(f"{name} ({url}) is {width} px wide in a {inner} px viewport")
    for selector in CONTROLS[name]:
        if name == "calibration" and "/diff/" in selector:
            # The rows that hold are folded behind their count: a maintainer opens them first, by touch.
            page.locator("#calibration-rows details > summary").first.click()
        why = off_screen(page, selector)
        if why:
            problems.append(f"{name}: {selector} {why}")
    browser.shot(page, f"phone {name}")
    return problems


def test_the_main_pages_fit_a_phone_and_their_controls_work(
    browser: Browser, graded: RubricRevision, repository: Repository, maintainer: User
) -> None:
    page = browser.log_in("maintainer", viewport=PHONE)
    assert overflow(page) == (PHONE["width"], PHONE["width"])  # 390 CSS px: the viewport meta tag works
    problems = []
    for name, url in pages(repository, graded).items():
        if name != "report":
            problems += check_page(browser, page, name, url)
    assert not problems, "\n".join(problems)
    # A control used by touch at this width: the verdict buttons label and move on.
    page.goto(pages(repository, graded)["queue entry"])
    page.locator("#human-verdict button[value=fail]").click()
    page.locator(".queue-bar strong", has_text="1 of 4 reviewed").wait_for()
    assert HumanVerdict.objects.get().verdict == "fail"
    browser.shot(page, "phone labelled")


def test_the_report_fits_a_phone(
    browser: Browser, graded: RubricRevision, repository: Repository, maintainer: User
) -> None:
    page = browser.log_in("maintainer", viewport=PHONE)
    problems = check_page(browser, page, "report", pages(repository, graded)["report"])
    assert not problems, "\n".join(problems)
    width, inner = overflow(page)
    assert width <= inner, f"the report is {width} px wide in {inner} px"


# The smallest text a report chart may show, at any width (issue 22 §3).
MIN_CHART_TEXT_PX = 12

# Per <text> of the report's charts: its chart's class, its text, its font size as rendered (the computed
# size times the scale from the SVG's user space to the screen, which a viewBox or a transform would
# shrink) and the height of its box on the screen.
CHART_TEXT = """() => [...document.querySelectorAll("main svg.report-chart text")].map(t => {
  const m = t.getScreenCTM();
  const scale = m ? Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) : 1;
  const size = parseFloat(getComputedStyle(t).fontSize) * scale;
  return [t.closest("svg").getAttribute("class"), t.textContent, size, t.getBoundingClientRect().height];
})"""


def import_second_arm(tmp_path: Path, repository: Repository, revision: RubricRevision) -> None:
    """Two runs of the graded task in a second arm, so the report has contrasts and draws its forest plot."""
    task_dir = write_task_dir(tmp_path / "plain-checkout")
    primary = write_scripted(tmp_path / "plain-primary.json", PASSING)
    for repetition in (0, 1):
        run_dir = write_run(tmp_path / "plain-runs", f"plain{repetition}", arm="plain", repetition=repetition)
        grade(task_dir, run_dir, primary, rubric_sha256=revision_sha256(revision))
    call_command("import_runs", str(tmp_path / "plain-runs"), "--repository", repository.name,
                 stdout=io.StringIO())  # fmt: skip


def test_the_report_charts_text_is_readable_on_a_phone_and_a_screen(
    browser: Browser, graded: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    off_the_loop(lambda: import_second_arm(tmp_path, repository, graded))
    for viewport in (PHONE, DESKTOP):
        page = browser.log_in("maintainer", viewport=viewport)
        response = page.goto(pages(repository, graded)["report"])
        assert response is not None and response.status == 200
        browser.shot(page, f"report charts {viewport['width']}")
        texts = page.evaluate(CHART_TEXT)
        charts = {chart for chart, *_ in texts}
        for drawn in ("report-chart forest-plot", "report-chart rates-chart"):
            assert drawn in charts, f"no {drawn} text at {viewport['width']} px: {sorted(charts)}"
        small = [
            f"{chart}: {text!r} at {size:.1f} px (box {height:.1f} px high)"
            for chart, text, size, height in texts
            if text.strip() and (size < MIN_CHART_TEXT_PX or height < MIN_CHART_TEXT_PX)
        ]
        assert not small, f"chart text under {MIN_CHART_TEXT_PX} px at {viewport['width']} px:\n" + "\n".join(
            small
        )


# Per report table: its id, the width of the box it scrolls in and the width it would need there.
TABLE_WIDTHS = """() => [
  ...document.querySelectorAll("main .table-scroll > table[id^='report-'], main .scroll > table"),
].map((t, i) => [t.id || `table ${i + 1}`, t.parentElement.clientWidth, t.parentElement.scrollWidth])"""


def scrolled_tables(page: Any) -> list[str]:
    return [
        f"{t}: needs {needed} px in {box} px"
        for t, box, needed in page.evaluate(TABLE_WIDTHS)
        if needed > box
    ]


def test_the_report_tables_fit_a_screen_without_scrolling(
    browser: Browser, graded: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    # Cells of one task, whose rates say why they have no interval, beside cells of six tasks with
    # intervals, under model names as long as real ones (issue 22 §3: the cells table fits 1280 px).
    def runs() -> None:
        tasks = [
            Task.objects.create(repository=repository, task_id=f"t_{i}", spec_prompt="x") for i in range(6)
        ]
        bulk_runs(tasks, ["baseline", "guidance"], ["claude-sonnet-4-5", "gpt-5-codex"], 3)
        import_second_arm(tmp_path, repository, graded)

    off_the_loop(runs)
    page = browser.log_in("maintainer", viewport=DESKTOP)
    response = page.goto(pages(repository, graded)["report"])
    assert response is not None and response.status == 200
    browser.shot(page, f"report tables {DESKTOP['width']}")
    cells = page.locator("#report-cells").inner_text()
    # Six tasks with the same rate: no spread, so the exact bound on tasks, never [66.7%, 66.7%] (issue 31);
    # each reason is said once, under the table (issue 35).
    notes = page.locator("#report-cells").locator("xpath=../following-sibling::ol[1]").inner_text().lower()
    assert "no interval: one task only" in notes and "no spread between tasks" in notes
    assert "[66.7%, 66.7%]" not in cells
    tables = [t for t, *_ in page.evaluate(TABLE_WIDTHS)]
    assert {"report-cells", "report-contrasts"} <= set(tables), tables
    problems = scrolled_tables(page)
    # The HTML file (rubric report --html) of the same report, opened as a file would be: no page around it.
    html_file = page.request.get(page.locator("#report-html-link").get_attribute("href") or "").text()
    page.goto("about:blank")
    page.set_content(html_file)
    browser.shot(page, f"report file tables {DESKTOP['width']}")
    assert len(page.evaluate(TABLE_WIDTHS)) >= 2  # contrasts and cells
    problems += [f"the HTML file's {p}" for p in scrolled_tables(page)]
    assert not problems, f"report tables scroll sideways at {DESKTOP['width']} px:\n" + "\n".join(problems)


def every_page(repository: Repository, revision: RubricRevision) -> dict[str, str]:
    """Every page the navigation reaches for a role on ``repository``: the main ones, the settings and lists
    linked from them, one run, and the API's docs page."""
    base = f"/repos/{repository.pk}"
    run = AgentRun.objects.filter(task__repository=repository).order_by("pk").first()
    assert run is not None
    return {
        **pages(repository, revision),
        "token settings": "/settings/tokens/",
        "drafting settings": f"{base}/drafting/",
        "remote settings": f"{base}/remote/",
        "adjudication": f"{base}/queue/adjudication/",
        "run": f"{base}/runs/{run.pk}/",
        "API docs": "/api/v1/docs",
    }


@dataclass
class Watched:
    """What went wrong while a page loaded: uncaught errors, console errors and 5xx answers (the page or
    anything it loaded)."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        page.on(
            "console",
            lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
        )
        page.on("response", lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 500 else None)


# The pages that may show a scripted judge's full spec (its file path): the judge settings, where it is set,
# and a run's page, where the task page's runs table sends whoever wants it (issue 35). Elsewhere a judge is
# named by its model id or "scripted", with the spec on hover.
JUDGE_SPEC_SHOWN = {"judges", "run"}


# The words (letters and underscores, four or more) of a page's tables of long texts that are drawn on two
# lines: a word broken inside itself, not at a hyphen or a space.
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll("main table.stack td")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/[A-Za-z_]{4,}/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const rects = [...range.getClientRects()].filter(r => r.width > 0);
        const tops = new Set(rects.map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("role", ["maintainer", "viewer"])
def test_every_page_at_phone_width_loads_cleanly_and_fits(
    browser: Browser, graded: RubricRevision, repository: Repository, role: str
) -> None:
    page = browser.log_in(role, viewport=PHONE)
    watched = Watched()
    watched.watch(page)
    problems = []
    for name, url in every_page(repository, graded).items():
        watched.errors.clear()
        response = page.goto(url, wait_until="networkidle")
        assert response is not None, name
        if name == "API docs":
            # Swagger UI renders the schema under the site's CSP (its scripts are files, never inline):
            # the operations are listed, not "Unable to render this definition".
            page.locator(".swagger-ui .opblock").first.wait_for()
        if response.status != 200:
            problems.append(f"{name} ({url}): {response.status}")
        problems += [f"{name} ({url}): {error}" for error in watched.errors]
        width, inner = overflow(page)
        if width > inner:
            problems.append(f"{name} ({url}) is {width} px wide in a {inner} px viewport")
        # The Swagger page has no <main>: it is the API's, not one of the app's pages.
        text = page.locator("main").inner_text() if name != "API docs" else ""
        if name not in JUDGE_SPEC_SHOWN and "scripted:/" in text:
            problems.append(f"{name} ({url}) shows a scripted judge's file path")
        if role != "maintainer" and repository.checkout_path in text:
            problems.append(f"{name} ({url}) shows the server's checkout path to a {role}")
        if name == "run":
            # The items beside the judges' reasons: one block per row, so no word is cut in two.
            assert page.locator("main table.stack td").count() > 0
            broken = page.evaluate(BROKEN_WORDS)
            if broken:
                problems.append(f"run ({url}): words broken inside themselves: {broken[:8]}")
        browser.shot(page, f"{role} {name}")
    assert not problems, "\n".join(problems)
