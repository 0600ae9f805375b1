"""Headless Chromium (Debian's `chromium`, driven by Playwright for Python) against the app on a live server
with a real Celery worker.

RUBRICS_BROWSER_TESTS says what happens when the browser is missing: `required` (CI) fails the tests, `skip`
skips them with that reason, unset runs them where Chromium is found and skips them, saying so, where it is
not. Playwright never downloads a browser here: it is pointed at the system's Chromium.

Each test gets a fresh browser profile (user-data-dir) per user it logs in as, and keeps a screenshot of each
step under var/browser-artifacts/<test>/ (ignored by git with the rest of var/).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

# The web app's fixtures (users with roles, the repository with its scripted judge, revisions built through
# the services) and the session's database settings (a file for SQLite, so the worker sees the same data).
from tests.app.conftest import (  # noqa: F401 - fixtures
    PASSWORD,
    MakeRevision,
    _frozen_triggers_restored,
    django_db_modify_db_settings,
    fast_password_hasher,
    flushable_transactional_db,
    maintainer,
    make_revision,
    outsider,
    repository,
    reviewer,
    static_files_without_collectstatic,
    task,
    viewer,
)
from tests.app.worker_helpers import ROOT, celery_worker, database_url
from tests.grading.judge.fake_servers import provider_server

MODE_VARIABLE = "RUBRICS_BROWSER_TESTS"
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "var" / "browser-artifacts"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
TIMEOUT_MS = 15_000


def find_chromium() -> str | None:
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def _unavailable(reason: str) -> None:
    """Skip with the reason; in CI (RUBRICS_BROWSER_TESTS=required) fail with it instead."""
    if os.environ.get(MODE_VARIABLE) == "required":
        pytest.fail(f"{MODE_VARIABLE}=required but {reason}", pytrace=False)
    pytest.skip(reason)


def why_not_run() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    mode = os.environ.get(MODE_VARIABLE, "")
    if mode == "skip":
        return f"{MODE_VARIABLE}=skip: .ci/run runs the browser tests in its other suite pass"
    if find_chromium() is None:
        return (
            "Chromium is not installed (looked for /usr/bin/chromium, chromium and chromium-browser on PATH):"
            " install Debian's package with `apt-get install chromium`; Playwright never downloads a browser"
        )
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed: `bash scripts/setup.sh --dev` installs it"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Skipped at collection, before a database or a live server is set up for them.
    mode = os.environ.get(MODE_VARIABLE, "")
    if mode not in ("", "required", "skip"):
        raise pytest.UsageError(f"{MODE_VARIABLE} is 'required', 'skip' or unset, not {mode!r}")
    reason = why_not_run()
    if reason is None or mode == "required":
        return  # a missing browser fails in chromium_path
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def chromium_path() -> str:
    reason = why_not_run()
    if reason is not None:
        _unavailable(reason)
    path = find_chromium()
    assert path is not None
    return path


# Per module: the tests after these (tests/grading/) run asyncio loops of their own in this thread.
@pytest.fixture(scope="module")
def playwright_driver(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop in this thread; the tests' own ORM calls are synchronous
    # and run between its calls, never inside the loop.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as driver:
            try:
                yield driver
            finally:
                # While the loop runs, Django keeps this thread's connections apart from the ones it made
                # before (asgiref's Local is per context then): close those here, or they outlive the test
                # database (PostgreSQL refuses to drop a database still in use).
                connections.close_all()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@dataclass
class Browser:
    """Opens one browser profile per user; every page it opens saves its steps' screenshots."""

    driver: Any
    chromium: str
    base_url: str
    profiles: Path
    artifacts: Path
    contexts: list[Any] = field(default_factory=list)
    shots: int = 0

    def open(self, name: str, viewport: dict[str, int] = DESKTOP) -> Any:
        profile = self.profiles / f"profile-{len(self.contexts)}-{name}"
        context = self.driver.chromium.launch_persistent_context(
            str(profile),
            executable_path=self.chromium,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=viewport,
            base_url=self.base_url,
            accept_downloads=True,
        )
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        return context.pages[0] if context.pages else context.new_page()

    def log_in(self, name: str, viewport: dict[str, int] = DESKTOP) -> Any:
        """A fresh profile logged in as ``name`` through the login page; returns its page."""
        page = self.open(name, viewport)
        page.goto("/")
        assert "/accounts/login/" in page.url  # every page asks for a login first
        page.fill("#id_username", name)
        page.fill("#id_password", PASSWORD)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/$"))
        assert page.locator("header .who").inner_text() == name
        return page

    def shot(self, page: Any, step: str) -> None:
        self.shots += 1
        name = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
        page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{name}.png"), full_page=True)

    def close(self) -> None:
        for context in self.contexts:
            with contextlib.suppress(Exception):
                context.close()


@pytest.fixture
def browser(
    playwright_driver: Any,
    chromium_path: str,
    live_server: Any,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Browser]:
    artifacts = ARTIFACTS / re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    opened = Browser(
        driver=playwright_driver,
        chromium=chromium_path,
        base_url=live_server.url,
        profiles=tmp_path_factory.mktemp("chromium-profiles"),
        artifacts=artifacts,
    )
    try:
        yield opened
    finally:
        opened.close()


class Worker:
    """A real Celery worker on the session's queue, started when the test says so (the calibration page is
    open before the worker takes the job, so the rows are seen arriving) and kept for the module."""

    def __init__(self, log: Path, url: str) -> None:
        self.log, self.url = log, url
        self._stack = contextlib.ExitStack()
        self.running = False

    def start(self) -> None:
        if not self.running:
            # The worker's environment names a provider; the scripted judge never calls it.
            provider = self._stack.enter_context(provider_server())
            self._stack.enter_context(celery_worker(self.log, provider, self.url))
            self.running = True

    def stop(self) -> None:
        self._stack.close()
        self.running = False


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    with django_db_blocker.unblock():
        url = database_url()
    started = Worker(tmp_path_factory.mktemp("browser-worker") / "worker.log", url)
    try:
        yield started
    finally:
        started.stop()


def off_the_loop[T](function: Callable[[], T]) -> T:
    """Run ``function`` in a thread of its own: what runs asyncio.run (the judge runner behind `rubric grade`
    and calibration) cannot run in this thread, where Playwright's loop is. Its database connection is
    closed when it is done."""

    def run() -> T:
        try:
            return function()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()
