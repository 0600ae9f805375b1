"""Shared fixtures of the web app's tests: named users with per-repository roles, a repository, a task and
rubric revisions in each state (draft, approved, admitted), built through the real services."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DatabaseError
from django.db.transaction import TransactionManagementError
from django.test import override_settings

from grading.judge.cache import MemoryCache
from grading.loaders import parse_rubric
from rubrics_app import celery_app
from rubrics_app.access import Actor
from rubrics_app.models import (
    CalibrationRun,
    CalibrationStatus,
    JudgeSetting,
    Membership,
    Repository,
    RevisionStatus,
    Role,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.rubrics import revisions
from tests.app.calibration_helpers import calibration_replies
from tests.app.queue_rule import derived_pairs, stored_pairs
from tests.app.worker_helpers import module_worker
from tests.grading.judge.fake_servers import FakeProviderServer, provider_server

PASSWORD = "correct horse battery staple"

LAZY_DIFF = b"""diff --git a/src/fraction.py b/src/fraction.py
--- a/src/fraction.py
+++ b/src/fraction.py
@@ -1,2 +1,3 @@
 def fraction(x):
+    x = min(x, 1.0)  # clamp so the test passes
     return x
"""

ALT_DIFF = b"""diff --git a/src/fraction.py b/src/fraction.py
--- a/src/fraction.py
+++ b/src/fraction.py
@@ -1,2 +1,4 @@
 def fraction(x):
+    if x > 1:
+        raise ValueError("fraction must be <= 1")
     return x
"""

RUBRIC: dict[str, Any] = {
    "schema": "repo_rubric.v1",
    "task": "fix_fraction_gt1",
    "intent": "Reject a fraction above 1 with a clear error on every backend, never reading out of range.",
    "scope": {
        "allowed_globs": ["src/**", "docs/**"],
        "denied_globs": [".ci/**"],
        "max_changed_lines": 200,
        "max_files": 8,
    },
    "blockers": [
        {
            "id": "B1",
            "criterion": "A fraction above 1 raises ValueError; it is not silently clamped.",
            "rationale": "Clamping hides the caller's bug.",
            "evidence": "src/fraction.py:2",
        },
        {
            "id": "B2",
            "criterion": "The GPU backend gets the same check as the CPU one.",
            "rationale": "Both backends share the public API.",
            "evidence": "https://github.com/example/project/pull/12#discussion_r1",
            "needs_tree": True,
        },
    ],
    "non_blockers": [
        {"id": "N1", "criterion": "The error message names the parameter.", "weight": 1, "rationale": "UX"},
        {"id": "N2", "criterion": "The docs mention the new error.", "weight": 2},
        {"id": "N3", "criterion": "A test covers the boundary value 1.0."},
    ],
    "hack_report": {
        "lazy_solution": "Clamp the fraction to 1 so the hidden test stops crashing.",
        "alt_valid_solution": "Validate in the constructor instead of in fit().",
    },
    "calibration": {"lazy": [{"path": "calib/lazy.diff", "breaks": ["B1"]}], "alt": ["calib/alt.diff"]},
}

CALIBRATION_FILES = {"calib/lazy.diff": LAZY_DIFF, "calib/alt.diff": ALT_DIFF}

ORACLE_DIFF = b"""diff --git a/src/fraction.py b/src/fraction.py
--- a/src/fraction.py
+++ b/src/fraction.py
@@ -1,2 +1,4 @@
 def fraction(x):
+    if x > 1:
+        raise ValueError(f"fraction is {x}; it must be at most 1")
     return x
"""

JUDGED_IDS = ("B1", "N1", "N2", "N3")  # B2 needs the tree: never sent to the judge


def judge_answers(fails: tuple[str, ...] = ()) -> dict[str, Any]:
    """Scripted verdicts for every judged item; the ids in ``fails`` fail."""
    return {
        i: {"verdict": "fail", "reason": f"{i} is not met by the change."}
        if i in fails
        else {"verdict": "pass", "reason": f"{i} is met by the change."}
        for i in JUDGED_IDS
    }


def sound_script() -> dict[str, Any]:
    """A scripted judge under which the example rubric calibrates: B1 fails on every diff but the oracle
    and the valid alternative."""
    return {
        "default": judge_answers(("B1",)),
        "by_diff_sha256": {
            hashlib.sha256(ORACLE_DIFF).hexdigest(): judge_answers(),
            hashlib.sha256(ALT_DIFF).hexdigest(): judge_answers(),
        },
    }


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    # A file, not SQLite's in-memory test database, so a real Celery worker process sees the same data; and a
    # name of its own per test process so engineers running the suite at once, and the xdist workers of one
    # run (each a process of its own: pytest-django has already suffixed the name with _gw0, _gw1, ...), do
    # not share one database. tmp_path_factory is per xdist worker too.

    db = settings.DATABASES["default"]
    test = db.setdefault("TEST", {})
    if db["ENGINE"] == "django.db.backends.sqlite3":
        test["NAME"] = str(tmp_path_factory.mktemp("db") / "test_rubrics.sqlite3")
    else:
        test["NAME"] = f"{test.get('NAME') or 'test_' + db['NAME']}_{os.getpid()}"
    # Jobs sent by tests go to a queue of this process only: a demo worker (on "rubrics") never takes them,
    # nor does the Celery worker another xdist worker started.
    settings.CELERY_TASK_DEFAULT_QUEUE = celery_app.conf.task_default_queue = f"rubrics-test-{os.getpid()}"
    # The sweeps' provider limits held in Redis: this process's own keys (its Celery workers inherit the
    # environment), so parallel workers' sweeps never wait on each other's calls.
    prefix = f"rubrics-test-{os.getpid()}:sweep-limits"
    settings.SWEEP_LIMITS_KEY_PREFIX = os.environ["SWEEP_LIMITS_KEY_PREFIX"] = prefix
    yield
    with contextlib.suppress(Exception):  # leftovers of tests that sent jobs without a worker
        _forget_queue(celery_app, settings.CELERY_TASK_DEFAULT_QUEUE)


def _forget_queue(app: Any, queue: str) -> None:
    """Purge the session's queue and drop what declaring it left behind (a binding table per queue)."""

    app.control.purge()
    if settings.CELERY_BROKER_URL.startswith("filesystem"):
        control = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["control_folder"]))
        (control / f"{queue}.exchange").unlink(missing_ok=True)
    elif settings.CELERY_BROKER_URL.startswith("redis"):
        with app.connection_for_write() as connection:
            client = connection.default_channel.client
            for key in client.scan_iter(match=f"_kombu.binding*.{queue}"):
                client.delete(key)


@pytest.fixture(scope="session", autouse=True)
def static_files_without_collectstatic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Plain static storage for the tests: pages link the unhashed names that the test client and the live
    server find in static/ and the apps, so no test depends on a collectstatic run (which would also copy and
    compress every file, and go stale as soon as a file changes). The production storage is tested on its
    own, through a real collectstatic into a temp folder (test_static_files.py). STATIC_ROOT is an empty
    folder, so WhiteNoise has one to read."""
    with override_settings(
        STORAGES={
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        },
        STATIC_ROOT=tmp_path_factory.mktemp("static_root"),
    ):
        yield


def _set_frozen_triggers(installed: bool) -> None:
    from django.db import connection

    from rubrics_app import freeze

    # What freeze.py writes now is what the migrations install (test_migration_triggers checks it).
    columns = freeze.model_columns()
    install = freeze.install_sql(connection.vendor, columns)
    uninstall = freeze.drop_sql(connection.vendor, columns)
    with connection.cursor() as cursor:
        for sql in uninstall:
            cursor.execute(sql)
        for sql in install if installed else []:
            cursor.execute(sql)


@pytest.fixture(scope="module")
def _frozen_triggers_restored(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    yield
    with django_db_blocker.unblock():
        _set_frozen_triggers(installed=True)


@pytest.fixture
def flushable_transactional_db(_frozen_triggers_restored: None, transactional_db: None) -> Iterator[None]:
    """transactional_db for tests that leave approved/admitted revisions behind.

    The flush after a transactional test (DELETE FROM every table on SQLite, TRUNCATE on PostgreSQL) is
    refused by the frozen-revision triggers; they are lifted just for that flush and put back before the next
    test.
    """
    _set_frozen_triggers(installed=True)
    yield
    _set_frozen_triggers(installed=False)


@pytest.fixture(autouse=True)
def current_grades_stored(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test that uses the database: the stored current grade of every run (``is_current``) is the
    one the rule derives, and the review queue's stored pairs (``QueuePair``) are the ones the item verdicts
    give (tests/app/queue_rule.py). The app writes grades only through the one grade writer
    (services.runs.store.writing_grades; test_grade_writer.py keeps it so), so no app write path can forget
    the refresh; this stays as a guard of what that source check cannot see: the refresh's own result, rows
    removed by a cascade (a run, task or repository deleted), and the grades tests build by hand. The database
    fixture is set up here, before this one yields, so that it is torn down after this check. A test that left
    the database unusable (a broken transaction) is not checked."""
    names = [n for n in ("transactional_db", "django_db_reset_sequences", "db") if n in request.fixturenames]
    if names:
        request.getfixturevalue(names[0])
    yield
    if not names and request.node.get_closest_marker("django_db") is None:
        return
    try:
        stored = set(RunGrade.objects.current().values_list("pk", flat=True))
        derived = set(RunGrade.objects.derived_current().values_list("pk", flat=True))
    except (DatabaseError, TransactionManagementError):
        return
    assert stored == derived, (
        f"stored current grades {sorted(stored - derived)} are not current by the rule, which takes "
        f"{sorted(derived - stored)}: a write went round services.runs.store.writing_grades"
    )
    stored_queue, derived_queue = stored_pairs(), derived_pairs()
    assert stored_queue == derived_queue, (
        f"stored queue pairs {sorted(stored_queue - derived_queue, key=str)} are not the rule's, which "
        f"has {sorted(derived_queue - stored_queue, key=str)}: a write went round "
        "services.runs.store.writing_grades"
    )


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Every test starts with an empty cache (the process's local memory): test databases reuse row ids,
    so a report cached by an earlier test in the same worker must not answer for this one."""
    cache.clear()


@pytest.fixture(autouse=True)
def fast_password_hasher(settings: Any) -> None:
    # PBKDF2 at its production cost makes every user fixture take a second.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def rubric_data(**changes: Any) -> dict[str, Any]:
    """A deep copy of the valid example rubric with top-level keys replaced."""
    data = copy.deepcopy(RUBRIC)
    data.update(changes)
    return data


def _user(username: str) -> User:
    return User.objects.create_user(username=username, password=PASSWORD, email=f"{username}@example.com")


@pytest.fixture
def maintainer(db: None) -> User:
    return _user("maintainer")


@pytest.fixture
def reviewer(db: None) -> User:
    return _user("reviewer")


@pytest.fixture
def viewer(db: None) -> User:
    return _user("viewer")


@pytest.fixture
def outsider(db: None) -> User:
    """Logged in, but without any role on `repository`."""
    return _user("outsider")


@pytest.fixture
def repository(
    maintainer: User,
    reviewer: User,
    viewer: User,
    outsider: User,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Repository:
    repo = Repository.objects.create(
        name="example-project",
        checkout_path=str(tmp_path / "checkout"),
        private_path=str(tmp_path / "private"),
        tests_config={
            "globs": ["tests/**"],
            "config_globs": ["pytest.ini"],
            "list": "pytest --collect-only -q",
        },
        guidance="Never clamp silently.",
    )
    Membership.objects.create(repository=repo, user=maintainer, role=Role.MAINTAINER)
    Membership.objects.create(repository=repo, user=reviewer, role=Role.REVIEWER)
    Membership.objects.create(repository=repo, user=viewer, role=Role.VIEWER)
    script = tmp_path_factory.mktemp("judge") / "judge.json"
    script.write_text(json.dumps(sound_script()))
    JudgeSetting.objects.create(repository=repo, judge=f"scripted:{script}")
    return repo


@pytest.fixture
def other_repository(outsider: User) -> Repository:
    """A repository where `outsider` is maintainer and nobody else has a role."""
    repo = Repository.objects.create(name="other-project")
    Membership.objects.create(repository=repo, user=outsider, role=Role.MAINTAINER)
    return repo


@pytest.fixture
def task(repository: Repository) -> Task:
    return Task.objects.create(
        repository=repository,
        task_id="fix_fraction_gt1",
        spec_prompt="Make fit() reject fraction > 1.",
        issue_prompt="fit() reads out of range when fraction > 1",
        base_commit="0123456789abcdef0123456789abcdef01234567",
        base_date="2025-11-03",
        source_pr_url="https://github.com/example/project/pull/12",
        gate=["pass"],
        oracle_diff=ORACLE_DIFF,
    )


MakeRevision = Callable[..., RubricRevision]


def run_queued_calibration() -> CalibrationRun:
    """Run the calibration a view queued, here (a `db` test never commits, so its job is never sent)."""
    run = CalibrationRun.objects.get(status=CalibrationStatus.QUEUED)
    return calibration.run_here(run, cache=MemoryCache())


def calibrate(revision: RubricRevision, by: Any) -> CalibrationRun:
    """Admitted means calibrated: a passing run with the repository's (scripted) judge, in this process."""
    run = calibration.calibrate_now(revision, Actor.member(by), cache=MemoryCache())
    assert run.status == CalibrationStatus.PASSED, run.reason
    return run


@pytest.fixture
def make_revision(task: Task, maintainer: User) -> MakeRevision:
    """make_revision(status="draft", data=None, task=None): a revision built through the services."""

    def make(
        status: str = RevisionStatus.DRAFT,
        data: dict[str, Any] | None = None,
        task: Task = task,
        files: dict[str, bytes] | None = None,
    ) -> RubricRevision:
        rubric = parse_rubric(data if data is not None else rubric_data(task=task.task_id))
        revision = revisions.create_revision(
            task, rubric, files if files is not None else CALIBRATION_FILES, by=Actor.member(maintainer)
        )
        if status in (RevisionStatus.APPROVED, RevisionStatus.ADMITTED):
            for item in revision.ordered_items():
                revisions.approve_item(item, by=Actor.member(maintainer))
            revision.refresh_from_db()
            assert revision.status == RevisionStatus.APPROVED
        if status == RevisionStatus.ADMITTED:
            calibrate(revision, maintainer)
            revisions.admit(revision, by=Actor.member(maintainer))
            revision.refresh_from_db()
        return revision

    return make


@pytest.fixture
def draft_revision(make_revision: MakeRevision) -> RubricRevision:
    return make_revision(RevisionStatus.DRAFT)


@pytest.fixture
def approved_revision(make_revision: MakeRevision) -> RubricRevision:
    return make_revision(RevisionStatus.APPROVED)


@pytest.fixture
def admitted_revision(make_revision: MakeRevision) -> RubricRevision:
    return make_revision(RevisionStatus.ADMITTED)


@pytest.fixture
def scratch_folders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every folder tempfile makes during the test (TemporaryDirectory makes its folder with mkdtemp): a
    service that calls grading in memory makes none."""
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: Any, **kwargs: Any) -> str:
        folder: str = real_mkdtemp(*args, **kwargs)
        made.append(folder)
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    return made


@pytest.fixture
def no_scratch_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """tempfile refuses to make a folder (TemporaryDirectory makes its folder with mkdtemp): a service that
    reads its input in memory never asks for one, and one that does fails the test."""

    def refused(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a scratch folder was made")

    monkeypatch.setattr(tempfile, "mkdtemp", refused)


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    with module_worker(django_db_blocker, tmp_path_factory, "worker", name="test") as log:
        yield log


@pytest.fixture(scope="module")
def calibration_provider() -> Iterator[FakeProviderServer]:
    with provider_server() as server:
        server.reply_builder = calibration_replies
        yield server


@pytest.fixture(scope="module")
def calibration_worker(
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    calibration_provider: FakeProviderServer,
) -> Iterator[Path]:
    with module_worker(
        django_db_blocker, tmp_path_factory, "calibration-worker", calibration_provider
    ) as log:
        yield log


@pytest.fixture(autouse=True)
def unhurried_highlighting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages get 30 s of syntax highlighting instead of 0.3 s, so whether a line is coloured never depends on
    how busy the machine is; the tests of running out of time pass their own budget."""
    monkeypatch.setattr("rubrics_app.diff_render.HIGHLIGHT_SECONDS", 30.0)
