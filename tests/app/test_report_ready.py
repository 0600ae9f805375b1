"""The report kept ready (services.reports.report): a repository's whole report stored by a worker or by
``manage.py prepare_report``, which the page then reads instead of computing; never for a key of changed
runs, labels or code; sent to a worker once an import commits."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import shlex
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.models import signals
from django.test import Client
from django.urls import reverse

from rubrics_app.models import HumanVerdict, ReportSnapshot, Repository, RevisionStatus, RunGrade
from rubrics_app.services.reports import report as report_service
from rubrics_app.services.reports.report import keep_report_ready, prepare_report
from tests.app.report_helpers import build_runs, label_runs
from tests.app.runs_helpers import write_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def graded(tmp_path: Path, repository: Repository) -> Repository:
    build_runs(tmp_path, repository)
    label_runs(repository)
    return repository


@pytest.fixture
def computations(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The filters of every report computed from here on (not read from a cache or a stored report)."""
    seen: list[dict[str, str]] = []
    compute = report_service._computed

    def counted(repository: Repository, filters: dict[str, str], state: dict[str, Any]) -> Any:
        seen.append(filters)
        return compute(repository, filters, state)

    monkeypatch.setattr(report_service, "_computed", counted)
    return seen


def report_json(user: User, repository: Repository, **filters: str) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("rubrics:report_json", args=[repository.pk]), filters)
    assert response.status_code == 200
    data: dict[str, Any] = json.loads(response.content)
    data.pop("provenance")  # when it was made: not the report
    return data


def test_the_page_reads_the_stored_report_instead_of_computing_it(
    graded: Repository, viewer: User, computations: list[dict[str, str]]
) -> None:
    expected = report_json(viewer, graded)
    assert computations == [{}]
    cache.clear()
    assert prepare_report(graded) == "stored" and len(computations) == 2
    assert (
        prepare_report(graded) == "stored already" and len(computations) == 2
    )  # stored already: not computed again
    cache.clear()  # as in another process, or after a restart
    assert report_json(viewer, graded) == expected
    assert len(computations) == 2
    client = Client()
    client.force_login(viewer)
    page = client.get(reverse("rubrics:report", args=[graded.pk]))
    assert page.status_code == 200 and b"24 graded runs in this report" in page.content
    assert len(computations) == 2
    # A filtered view is never stored: it is computed.
    report_json(viewer, graded, arm="plain")
    assert computations[2:] == [{"arm": "plain"}]


def test_a_stored_report_never_answers_for_changed_labels_runs_or_code(
    graded: Repository, viewer: User, computations: list[dict[str, str]], tmp_path: Path, monkeypatch: Any
) -> None:
    prepare_report(graded)
    stored = report_json(viewer, graded)
    assert len(computations) == 1
    # A new label: the stored report is of the labels before.
    label = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    label.verdict = "fail"  # a reviewer changes their mind
    label.save()
    cache.clear()
    relabelled = report_json(viewer, graded)
    assert len(computations) == 2
    assert relabelled != stored
    # A new run (ungraded): the page says so, from a report computed for it.
    run_dir = write_run(tmp_path / "more", "extra", task_id="t_alpha", arm="plain", repetition=9)
    call_command("import_runs", str(run_dir.parent), "--repository", graded.name, stdout=io.StringIO())
    cache.clear()
    with_run = report_json(viewer, graded)
    assert len(computations) == 3
    assert any("1 run has no grade yet" in w for w in with_run["warnings"])
    # Another version of the code that computes reports: a new key as well.
    assert prepare_report(graded) == "stored" and len(computations) == 4
    monkeypatch.setattr(report_service, "code_digest", lambda: "0" * 64)
    cache.clear()
    report_json(viewer, graded)
    assert len(computations) == 5
    # One stored report per repository: the newest.
    assert prepare_report(graded) == "stored"
    assert ReportSnapshot.objects.filter(repository=graded).count() == 1


def test_a_report_whose_runs_changed_while_it_was_computed_is_not_kept(
    graded: Repository, viewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_report(graded)
    [older] = ReportSnapshot.objects.filter(repository=graded)
    label = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    label.verdict = "fail"
    label.save()
    compute = report_service._computed

    def relabelled_meanwhile(repository: Repository, filters: dict[str, str], state: dict[str, Any]) -> Any:
        result = compute(repository, filters, state)
        label.verdict = "pass"  # a reviewer changes their mind back while the worker computes
        label.save()
        return result

    monkeypatch.setattr(report_service, "_computed", relabelled_meanwhile)
    assert prepare_report(graded) == "changed meanwhile"
    # Its key is no longer current: not stored; the one of the labels as they are now stays.
    assert list(ReportSnapshot.objects.filter(repository=graded)) == [older]
    monkeypatch.setattr(report_service, "_computed", compute)
    cache.clear()
    assert report_service._stored(report_service._current(graded, {})[0]) is not None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a second reader at once is PostgreSQL's")
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_no_reader_ever_sees_two_stored_reports(graded: Repository) -> None:
    """Storing the newer report and deleting the older is one commit: a reader on another connection, at
    the moment the older is deleted, still sees the older one alone (never both, never none)."""
    prepare_report(graded)
    label = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    label.verdict = "fail"
    label.save()
    seen: list[int] = []

    def count_elsewhere() -> None:
        try:
            seen.append(ReportSnapshot.objects.filter(repository=graded).count())
        finally:
            connection.close()

    def on_delete(**kwargs: Any) -> None:
        reader = threading.Thread(target=count_elsewhere)
        reader.start()
        reader.join(30)

    signals.pre_delete.connect(on_delete, sender=ReportSnapshot)
    try:
        assert prepare_report(graded) == "stored"
    finally:
        signals.pre_delete.disconnect(on_delete, sender=ReportSnapshot)
    assert seen == [1]
    assert ReportSnapshot.objects.filter(repository=graded).count() == 1


def test_the_code_digest_covers_the_grading_package_and_the_report_services() -> None:
    root = Path(__file__).resolve().parents[2]
    covered = {
        path.relative_to(root).as_posix()
        for code in report_service._REPORT_CODE
        for path in (code.rglob("*.py") if code.is_dir() else [code])
    }
    assert "grading/__init__.py" in covered
    app = {"rubrics_app/services/reports/report.py", "rubrics_app/services/reports/sums.py"}
    assert app | {"rubrics_app/services/report_rows.py"} <= covered
    assert len(report_service.code_digest()) == 64


def test_a_damaged_stored_report_is_computed_again(
    graded: Repository, viewer: User, computations: list[dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    prepare_report(graded)
    expected = report_json(viewer, graded)
    ReportSnapshot.objects.filter(repository=graded).update(report_json=b"not a report")
    cache.clear()
    with caplog.at_level(logging.ERROR, logger="rubrics_app.services.reports.report"):
        assert report_json(viewer, graded) == expected
    assert len(computations) == 2
    assert "could not be read" in caplog.text


def test_the_stored_report_reads_back_equal_to_the_one_computed(graded: Repository) -> None:
    key, state = report_service._current(graded, {})
    computed = report_service._computed(graded, {}, state)
    assert computed.grade_of_run and computed.report.disagreements  # the data set has both
    prepare_report(graded)
    assert report_service._stored(key) == computed


def test_a_pickle_in_the_stored_report_row_is_never_run(
    graded: Repository,
    viewer: User,
    computations: list[dict[str, str]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Whoever can write the row (a pickled row of before migration 0141 is one) gets data read, never code
    run: the row does not validate, so the page computes the report."""
    prepare_report(graded)
    expected = report_json(viewer, graded)
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {shlex.quote(str(marker))}",))

    forged = zlib.compress(pickle.dumps(Payload(), protocol=pickle.HIGHEST_PROTOCOL), 1)
    ReportSnapshot.objects.filter(repository=graded).update(report_json=forged)
    cache.clear()
    client = Client()
    client.force_login(viewer)
    with caplog.at_level(logging.ERROR, logger="rubrics_app.services.reports.report"):
        page = client.get(reverse("rubrics:report", args=[graded.pk]))
    assert page.status_code == 200 and b"24 graded runs in this report" in page.content
    assert not marker.exists()
    assert "could not be read" in caplog.text
    assert len(computations) == 2  # computed on the page instead
    assert report_json(viewer, graded) == expected


@pytest.mark.parametrize("stored", [b"[]", b'{"report": {}, "runs": 1, "ungraded": 0}', b'{"runs": "x"}'])
def test_a_stored_report_that_does_not_validate_is_computed_again(
    graded: Repository, viewer: User, computations: list[dict[str, str]], stored: bytes
) -> None:
    prepare_report(graded)
    expected = report_json(viewer, graded)
    ReportSnapshot.objects.filter(repository=graded).update(report_json=zlib.compress(stored))
    cache.clear()
    assert report_json(viewer, graded) == expected
    assert len(computations) == 2


def test_the_task_prepares_the_report_and_skips_a_repository_gone(
    graded: Repository, computations: list[dict[str, str]]
) -> None:
    keep_report_ready(graded.pk)  # as a worker runs it
    assert ReportSnapshot.objects.filter(repository=graded).count() == 1 and len(computations) == 1
    keep_report_ready(999_999)
    assert len(computations) == 1


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The repositories keep_report_ready was sent for (to the broker: the worker is tested apart)."""
    sends: list[int] = []
    monkeypatch.setattr(keep_report_ready, "delay", sends.append)
    return sends


def test_an_import_sends_the_report_to_a_worker_once_it_is_committed(
    tmp_path: Path,
    repository: Repository,
    task: Any,
    sent: list[int],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    runs = tmp_path / "runs"
    write_run(runs, "one", task_id="fix_fraction_gt1", arm="plain", repetition=0)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("import_runs", str(runs), "--repository", repository.name, stdout=io.StringIO())
    assert sent == [repository.pk]
    with django_capture_on_commit_callbacks(execute=True):  # the same runs again: nothing new, nothing sent
        call_command("import_runs", str(runs), "--repository", repository.name, stdout=io.StringIO())
    assert sent == [repository.pk]
    (runs / "bad").mkdir()
    (runs / "bad" / "run.json").write_text("{")
    write_run(runs, "two", task_id="fix_fraction_gt1", arm="plain", repetition=1)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(CommandError):
        call_command("import_runs", str(runs), "--repository", repository.name, stdout=io.StringIO())
    assert sent == [repository.pk]  # nothing imported: nothing sent


def test_an_admission_sends_the_report_to_a_worker(
    make_revision: Callable[[str], Any],
    repository: Repository,
    sent: list[int],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    """Which grades are current follows the admitted revisions: admitting one changes the report."""
    with django_capture_on_commit_callbacks(execute=True):
        make_revision(RevisionStatus.APPROVED)
    assert sent == []
    with django_capture_on_commit_callbacks(execute=True):
        make_revision(RevisionStatus.ADMITTED)
    assert sent == [repository.pk]


def test_an_import_succeeds_when_the_broker_is_down(
    tmp_path: Path,
    repository: Repository,
    task: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    def refused(repository_pk: int) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(keep_report_ready, "delay", refused)
    runs = tmp_path / "runs"
    write_run(runs, "one", task_id="fix_fraction_gt1", arm="plain", repetition=0)
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        call_command("import_runs", str(runs), "--repository", repository.name, stdout=io.StringIO())
    assert repository.tasks.get().agent_runs.count() == 1
    assert f"could not send keep_report_ready for repository {repository.pk}" in caplog.text


def test_prepare_report_command(graded: Repository, computations: list[dict[str, str]]) -> None:
    out = io.StringIO()
    call_command("prepare_report", "--repository", graded.name, stdout=out)
    assert out.getvalue().startswith(f"{graded.name}: report computed and stored in ")
    out = io.StringIO()
    call_command("prepare_report", stdout=out)
    assert f"{graded.name}: report already stored" in out.getvalue()
    assert len(computations) == 1
    with pytest.raises(CommandError) as raised:
        call_command("prepare_report", "--repository", "nope", stdout=io.StringIO())
    assert raised.value.returncode == 2 and "no repository named 'nope'" in str(raised.value)


def test_a_label_an_undo_and_a_cutoff_send_the_report_so_the_page_never_computes_it(
    graded: Repository,
    reviewer: User,
    maintainer: User,
    viewer: User,
    sent: list[int],
    computations: list[dict[str, str]],
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    """A label changes the report's key without a job that changes runs: it sends the report to a worker,
    which stores it, and the next reader reads it instead of computing it."""
    prepare_report(graded)
    before = report_json(viewer, graded)
    human = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    grade_pk = RunGrade.objects.get(run=human.run_id, is_current=True).pk  # the queue's pair of that label
    labelling = Client()
    labelling.force_login(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        response = labelling.post(
            reverse("rubrics:queue_label", args=[graded.pk, grade_pk, "B1"]),
            {"verdict": "fail", "note": "", "kind": "judges"},
        )
    assert response.status_code == 302 and sent == [graded.pk]
    computed = len(computations)
    keep_report_ready(graded.pk)  # the worker
    assert len(computations) == computed + 1
    cache.clear()  # another web process
    relabelled = report_json(viewer, graded)
    assert len(computations) == computed + 1  # read, not computed
    assert relabelled != before
    with django_capture_on_commit_callbacks(execute=True):
        labelling.post(
            reverse("rubrics:queue_undo", args=[graded.pk]),
            {"undo_grade": str(grade_pk), "undo_item": "B1", "kind": "judges"},
        )
    assert HumanVerdict.objects.get(pk=human.pk).verdict == "pass"
    assert sent == [graded.pk, graded.pk]
    editing = Client()
    editing.force_login(maintainer)
    url = reverse("rubrics:report_cutoffs", args=[graded.pk])
    with django_capture_on_commit_callbacks(execute=True):
        editing.post(url, {"cutoffs": "{"})  # not saved: nothing changed, nothing sent
    assert sent == [graded.pk, graded.pk]
    with django_capture_on_commit_callbacks(execute=True):
        editing.post(url, {"cutoffs": json.dumps({"model-a": "2025-05-01"})})
    assert sent == [graded.pk, graded.pk, graded.pk]


def report_page(user: User, repository: Repository) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("rubrics:report", args=[repository.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_after_a_label_the_page_shows_the_stored_report_as_being_updated_until_the_worker_stores_it(
    graded: Repository, viewer: User, sent: list[int], computations: list[dict[str, str]]
) -> None:
    """A reader who comes before the worker has stored the report of a label gets the report stored before
    it, marked as being updated, not one the page computes; once the worker has stored it, the new one."""
    prepare_report(graded)
    before = report_page(viewer, graded)
    assert "being updated" not in before and len(computations) == 1
    label = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    label.verdict = "fail"  # the label's own job is on its way to a worker
    label.save()
    cache.clear()  # another web process
    updating = report_page(viewer, graded)
    assert len(computations) == 1  # not computed on the page
    assert 'id="report-updating"' in updating and "being updated" in updating
    assert sent == [graded.pk]  # the page sends the job too, once per key and process
    report_page(viewer, graded)
    assert sent == [graded.pk] and len(computations) == 1
    keep_report_ready(graded.pk)  # the worker
    assert len(computations) == 2
    cache.clear()
    after = report_page(viewer, graded)
    assert "being updated" not in after and len(computations) == 2
    # The downloads never answer with an earlier key's report: they compute the current one.
    assert report_json(viewer, graded) != {}


def test_the_page_computes_the_report_when_no_worker_can_store_it(
    graded: Repository, viewer: User, monkeypatch: pytest.MonkeyPatch, computations: list[dict[str, str]]
) -> None:
    """Broker down (the job cannot be sent), or sent long ago and never done (no worker): the page computes
    the current report instead of showing an earlier one as being updated for ever."""
    prepare_report(graded)
    label = HumanVerdict.objects.filter(run__task__repository=graded, item_id="B1", verdict="pass")[0]
    label.verdict = "fail"
    label.save()

    def refused(repository_pk: int) -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(keep_report_ready, "delay", refused)
    cache.clear()
    page = report_page(viewer, graded)
    assert "being updated" not in page and len(computations) == 2
    # Sent, but no worker stored it within UPDATING_SECONDS.
    sends: list[int] = []
    monkeypatch.setattr(keep_report_ready, "delay", sends.append)
    other = HumanVerdict.objects.filter(run__task__repository=graded).exclude(pk=label.pk)[0]
    other.verdict = "fail" if other.verdict == "pass" else "pass"
    other.save()
    cache.clear()
    assert "being updated" in report_page(viewer, graded) and sends == [graded.pk]
    key = report_service._current(graded, {})[0]
    cache.set(f"{key}:sent", time.time() - report_service.UPDATING_SECONDS - 1)  # sent long ago
    page = report_page(viewer, graded)
    assert "being updated" not in page and len(computations) == 3


def test_a_process_holds_its_reports_as_they_are_not_pickled_copies(
    graded: Repository, computations: list[dict[str, str]]
) -> None:
    """Pickling a report of 100,000 runs into the local-memory cache cost more than reading it from the
    stored row: a process holds its reports itself, the cache only a token per key, so a cleared cache is
    still a report this process no longer has."""
    first = report_service.repository_report(graded, {})
    assert report_service.repository_report(graded, {}) is first and len(computations) == 1
    assert not isinstance(cache.get(report_service._current(graded, {})[0]), report_service.ReportResult)
    cache.clear()
    again = report_service.repository_report(graded, {})
    assert again is not first and again == first and len(computations) == 2
