"""Calibration in the app (§5) and "admitted means calibrated", in this process: the scripted judge and the
real Anthropic/OpenAI SDKs against the local fake server; the worker runs the same code in
test_calibration_worker.py."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from django.utils import timezone

from grading.admission.corpus import PAYLOAD_KINDS
from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    AuditEvent,
    AuditVerb,
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    CalibrationVerdict,
    Job,
    JobStatus,
    JudgeCacheEntry,
    JudgeRole,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    Task,
    TransitionError,
)
from rubrics_app.services import jobs
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.inputs import passing_run
from rubrics_app.services.judges import JudgeSettingError, set_judges
from rubrics_app.services.rubrics import revisions
from rubrics_app.services.rubrics.revisions import NotCalibrated
from rubrics_app.services.rubrics.task_files import set_task_files
from tests.app.calibration_helpers import calibration_replies
from tests.app.client_helpers import HX, logged_in
from tests.app.conftest import ALT_DIFF, ORACLE_DIFF, MakeRevision, calibrate, judge_answers, sound_script
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    fake_server_fixture,  # noqa: F401 - the fake_server fixture
)


def use_script(
    repository: Repository, tmp_path: Path, script: dict[str, Any], name: str = "judge.json"
) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(script))
    spec = f"scripted:{path}"
    JudgeSetting.objects.filter(repository=repository).update(judge=spec)
    return spec


def run_in_process(revision: RubricRevision, by: Any, **kwargs: Any) -> CalibrationRun:
    return calibration.calibrate_now(
        revision, Actor.member(by), cache=kwargs.pop("cache", MemoryCache()), **kwargs
    )


# --- a passing and a failing calibration -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_passing_calibration_stores_every_row_and_verdict(
    make_revision: MakeRevision, maintainer: User
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    run = run_in_process(revision, maintainer)
    assert run.status == CalibrationStatus.PASSED, run.reason
    rows = list(run.rows.order_by("position"))
    assert [(r.kind, r.name, r.holds) for r in rows] == [
        ("empty", "(empty diff)", True),
        ("oracle", "oracle.diff", True),
        ("lazy", "calib/lazy.diff", True),
        ("lazy_comment", "calib/lazy.diff + reviewer comment", True),
        ("alt", "calib/alt.diff", True),
    ]
    assert rows[1].blockers_not_measured == ["B2"]  # needs the tree: never sent
    assert bytes(rows[1].diff) == ORACLE_DIFF
    assert b"reviewer: all blockers verified" in bytes(rows[3].diff)
    assert run.rubric_sha256 == hashlib.sha256(revision.rubric_json_bytes()).hexdigest()
    assert run.scripted and run.model_ids == ["scripted"] and run.calls == 5
    assert run.started_at is not None and run.finished_at is not None
    verdicts = CalibrationVerdict.objects.filter(row__run=run, role=JudgeRole.PRIMARY)
    assert verdicts.count() == 5 * 4  # B1, N1, N2, N3 per row
    assert verdicts.get(row=rows[0], item_id="B1").verdict == "fail"
    # A calibration alone admits nothing; "Admit" (admit=True) does.
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
    assert AuditEvent.objects.filter(revision=revision, verb=AuditVerb.CALIBRATED).exists()
    revisions.admit(revision, by=Actor.member(maintainer))
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED


@pytest.mark.django_db
def test_a_failing_oracle_row_leaves_the_revision_approved_and_says_why(
    make_revision: MakeRevision, maintainer: User, repository: Repository, tmp_path: Path
) -> None:
    script = sound_script()
    script["by_diff_sha256"][hashlib.sha256(ORACLE_DIFF).hexdigest()] = judge_answers(("B1",))
    use_script(repository, tmp_path, script)
    revision = make_revision(RevisionStatus.APPROVED)
    run = run_in_process(revision, maintainer, admit=True)
    assert run.status == CalibrationStatus.FAILED
    assert "oracle oracle.diff: expected mergeable, every blocker passes" in run.reason
    oracle = run.rows.get(kind="oracle")
    assert not oracle.holds and oracle.blockers_failed == ["B1"]
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED
    with pytest.raises(NotCalibrated):
        revisions.admit(revision, by=Actor.member(maintainer))
    # The page says which expectation broke and what that usually means.
    page = logged_in(maintainer).get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk]))
    html = page.content.decode()
    assert "the rubric, the scope globs or the grader is wrong" in html
    assert "scripted" in html


@pytest.mark.django_db
def test_a_bad_calibration_input_is_an_error_naming_the_file(
    make_revision: MakeRevision, maintainer: User, task: Any
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    set_task_files(
        task,
        {"oracle.diff": b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n x\n"},
        by=Actor.member(maintainer),
    )
    run = run_in_process(revision, maintainer)
    assert run.status == CalibrationStatus.ERROR
    assert run.reason.startswith("primary judge: oracle.diff:") and "/tmp" not in run.reason
    assert not run.rows.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("injection_suite", [False, True])
def test_a_calibration_judges_in_memory_and_writes_no_scratch_folder(
    make_revision: MakeRevision,
    maintainer: User,
    scratch_folders: list[str],
    injection_suite: bool,
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    run = run_in_process(revision, maintainer, injection_suite=injection_suite)
    assert run.status == CalibrationStatus.PASSED, run.reason
    assert run.rows.count() == 5 + (2 * len(PAYLOAD_KINDS) if injection_suite else 0)
    assert scratch_folders == []


# --- admitted means calibrated: the exact content, the service and the database ----------------------------


@pytest.mark.django_db
def test_admitting_needs_a_passing_run_of_the_exact_content_and_judge(
    make_revision: MakeRevision, maintainer: User, repository: Repository, task: Any, tmp_path: Path
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    with pytest.raises(NotCalibrated):
        revisions.admit(revision, by=Actor.member(maintainer))
    calibrate(revision, maintainer)
    assert passing_run(revision) is not None
    # Another oracle: what was calibrated is no longer what would be admitted.
    set_task_files(task, {"oracle.diff": ALT_DIFF}, by=Actor.member(maintainer))
    assert passing_run(revision) is None
    set_task_files(task, {"oracle.diff": ORACLE_DIFF}, by=Actor.member(maintainer))
    assert passing_run(revision) is not None
    # Another primary judge: the run was not made with it.
    use_script(repository, tmp_path, sound_script(), "other.json")
    with pytest.raises(NotCalibrated):
        revisions.admit(revision, by=Actor.member(maintainer))


def raw_admit(pk: int) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE rubrics_app_rubricrevision SET status = 'admitted' WHERE id = %s", [pk])


@pytest.mark.django_db
def test_the_database_refuses_a_raw_update_to_admitted_without_a_passing_run(
    make_revision: MakeRevision, maintainer: User, repository: Repository, tmp_path: Path
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    with pytest.raises(IntegrityError, match="passing calibration run"):
        raw_admit(revision.pk)
    # A failing run is not enough either.
    script = sound_script()
    script["default"] = judge_answers()  # the empty diff passes every blocker: the empty row fails
    spec = use_script(repository, tmp_path, script)
    failed = run_in_process(revision, maintainer)
    assert failed.status == CalibrationStatus.FAILED
    with pytest.raises(IntegrityError, match="passing calibration run"):
        raw_admit(revision.pk)
    # A passing run with another judge than the repository's primary one is not enough.
    use_script(repository, tmp_path, sound_script(), "sound.json")
    assert run_in_process(revision, maintainer).status == CalibrationStatus.PASSED
    JudgeSetting.objects.filter(repository=repository).update(judge=spec)
    with pytest.raises(IntegrityError, match="passing calibration run"):
        raw_admit(revision.pk)
    assert RubricRevision.objects.get(pk=revision.pk).status == RevisionStatus.APPROVED
    # With the primary judge's passing run, the same statement goes through.
    JudgeSetting.objects.filter(repository=repository).update(judge=f"scripted:{tmp_path / 'sound.json'}")
    raw_admit(revision.pk)
    assert RubricRevision.objects.get(pk=revision.pk).status == RevisionStatus.ADMITTED


@pytest.mark.django_db
def test_the_database_refuses_inserting_an_admitted_revision(task: Any) -> None:
    # Every revision starts as a draft (rubrics_app.freeze), so none is inserted admitted and uncalibrated.
    with pytest.raises(IntegrityError, match="created as a draft"), transaction.atomic():
        RubricRevision.objects.create(task=task, number=99, status=RevisionStatus.ADMITTED)


# --- two judges ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_second_judge_is_compared_side_by_side_and_never_admits(
    make_revision: MakeRevision, maintainer: User, repository: Repository, tmp_path: Path
) -> None:
    second = sound_script()
    # The second judge passes B1 on the lazy diffs too (persuaded): its rows would fail; it changes nothing.
    second["default"] = {**judge_answers(("B1",)), "N1": {"verdict": "fail", "reason": "N1 is not met."}}
    second["by_diff_sha256"][hashlib.sha256(b"").hexdigest()] = judge_answers(("B1", "N2"))
    (tmp_path / "second.json").write_text(json.dumps(second))
    JudgeSetting.objects.filter(repository=repository).update(
        second_judge=f"scripted:{tmp_path / 'second.json'}"
    )
    revision = make_revision(RevisionStatus.APPROVED)
    run = run_in_process(revision, maintainer)
    assert run.status == CalibrationStatus.PASSED
    assert run.second_model_ids == ["scripted"]
    for row in run.rows.all():
        roles = set(row.verdicts.values_list("role", flat=True))
        assert roles == {JudgeRole.PRIMARY, JudgeRole.SECOND}, row
    # 5 rows x 4 items. Disagreements: N1 on lazy and lazy_comment (the second's default fails it), N2 on
    # the empty diff (its own answer there). So 17 of 20 agree.
    assert run.agreement is not None
    assert (run.agreement["n"], run.agreement["raw"]) == (20, 17 / 20)
    assert run.agreement["kappa"] is not None
    page = logged_in(maintainer).get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk]))
    assert "Cohen&#x27;s κ" in page.content.decode() or "Cohen's κ" in page.content.decode()
    assert "over 20 items" in page.content.decode()
    # A run stored before the one Agreement model (pairs and agreeing) still reads.
    CalibrationRun.objects.filter(pk=run.pk).update(
        agreement={"pairs": 7, "agreeing": 7, "raw": 1.0, "kappa": None}
    )
    page = logged_in(maintainer).get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk]))
    assert (
        "over 7 items" in page.content.decode()
        and "a judge gave one verdict throughout" in page.content.decode()
    )


@pytest.mark.django_db
def test_set_judges_checks_specs_as_the_command_line_does(repository: Repository, maintainer: User) -> None:
    with pytest.raises(JudgeSettingError, match="alias") as alias:
        set_judges(repository, by=Actor.member(maintainer), judge="anthropic:sonnet")
    assert alias.value.field == "judge"
    with pytest.raises(JudgeSettingError, match="same model family") as family:
        set_judges(
            repository,
            by=Actor.member(maintainer),
            judge="anthropic:claude-sonnet-4-5-20250929",
            second_judge="anthropic:claude-opus-4-1-20250805",
        )
    assert family.value.field == "second_judge"
    with pytest.raises(JudgeSettingError, match="set by the judge runner"):
        set_judges(
            repository,
            by=Actor.member(maintainer),
            judge="openai:gpt-4o-2024-08-06",
            decoding={"messages": []},
        )
    setting = set_judges(
        repository,
        by=Actor.member(maintainer),
        judge="anthropic:claude-sonnet-4-5-20250929",
        second_judge="openai:gpt-4o-2024-08-06",
        decoding={"temperature": 0},
    )
    assert (setting.judge, setting.second_judge, setting.decoding) == (
        "anthropic:claude-sonnet-4-5-20250929",
        "openai:gpt-4o-2024-08-06",
        {"temperature": 0},
    )
    assert AuditEvent.objects.filter(
        repository=repository, verb=AuditVerb.JUDGES_SET, actor=maintainer
    ).exists()


@pytest.mark.django_db
def test_the_judge_settings_page_maintainers_edit_others_see(
    repository: Repository, maintainer: User, viewer: User, outsider: User
) -> None:
    url = reverse("rubrics:judge_settings", args=[repository.pk])
    assert logged_in(viewer).get(url).status_code == 200
    assert logged_in(outsider).get(url).status_code == 404
    data = {"judge": "anthropic:claude-sonnet-4-5-20250929", "second_judge": "", "decoding": "temperature=0"}
    assert logged_in(viewer).post(url, data).status_code == 403
    refused = logged_in(maintainer).post(url, {**data, "judge": "anthropic:claude-sonnet-latest"})
    assert refused.status_code == 400 and "alias" in refused.content.decode()
    assert logged_in(maintainer).post(url, data).status_code == 302
    setting = JudgeSetting.objects.get(repository=repository)
    assert (setting.judge, setting.decoding) == ("anthropic:claude-sonnet-4-5-20250929", {"temperature": 0})
    assert "ANTHROPIC_API_KEY" in logged_in(viewer).get(url).content.decode()  # where keys come from


@pytest.mark.django_db
def test_a_monthly_cap_stops_new_calibrations(
    make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    CalibrationRun.objects.create(
        revision=revision, rubric_sha256="x", inputs_sha256="y", judge="j", cost_usd=2.5
    )
    JudgeSetting.objects.filter(repository=repository).update(monthly_cap_usd="2.00")
    with pytest.raises(TransitionError, match=r"reached the repository's cap \(\$2.00\)"):
        calibration.start(revision, Actor.member(maintainer))


# --- the task's own files -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_task_files_are_edited_by_maintainers_and_frozen_once_admitted(
    task: Any, maintainer: User, viewer: User, repository: Repository, make_revision: MakeRevision
) -> None:
    url = reverse("rubrics:task_files", args=[repository.pk, task.pk])
    page = logged_in(viewer).get(url).content.decode()
    assert "ValueError" in page and 'class="diff-add"' in page  # the same diff view
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = logged_in(maintainer).post(url, {"oracle_grade": SimpleUploadedFile("g.json", b"[1")})
    assert (
        bad.status_code == 400
        and "oracle_grade.json: line 1 column 3: malformed JSON" in bad.content.decode()
    )
    assert logged_in(viewer).post(url, {"tests_base": SimpleUploadedFile("t.txt", b"t\n")}).status_code == 403
    ok = logged_in(maintainer).post(url, {"tests_base": SimpleUploadedFile("t.txt", b"tests/test_a.py::t\n")})
    assert ok.status_code == 302
    task.refresh_from_db()
    assert bytes(task.tests_base) == b"tests/test_a.py::t\n" and bytes(task.oracle_diff) == ORACLE_DIFF
    make_revision(RevisionStatus.ADMITTED)
    with pytest.raises(TransitionError, match="frozen"):
        set_task_files(task, {"oracle.diff": ALT_DIFF}, by=Actor.member(maintainer))


# --- the page: rows arrive live, polling stops ------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_polls_while_running_and_stops_when_finished(
    make_revision: MakeRevision, maintainer: User, repository: Repository, viewer: User
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    response = logged_in(maintainer).post(
        reverse("rubrics:revision_admit", args=[repository.pk, revision.pk])
    )
    run = CalibrationRun.objects.get(revision=revision)
    assert run.admit_when_passed and run.status == CalibrationStatus.QUEUED
    url = reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])
    assert response["Location"] == url
    running = logged_in(viewer).get(url, headers=HX)
    assert running.status_code == 200 and 'hx-trigger="every 1s"' in running.content.decode()
    calibration.run_here(run, cache=MemoryCache())
    done = logged_in(viewer).get(url, headers=HX)
    assert done.status_code == 286  # htmx stops polling
    html = done.content.decode()
    assert "hx-trigger" not in html and "calib/lazy.diff + reviewer comment" in html
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.ADMITTED
    # A cited line links into the row's diff view, where that line carries the anchor.
    row = CalibrationRow.objects.get(run=run, kind="alt")
    diff_page = logged_in(viewer).get(
        reverse("rubrics:calibration_row_diff", args=[repository.pk, run.pk, row.pk])
    )
    assert diff_page.status_code == 200 and 'id="d0-n2"' in diff_page.content.decode()


@pytest.mark.django_db
def test_cited_lines_link_to_their_anchor(
    make_revision: MakeRevision, maintainer: User, repository: Repository, tmp_path: Path
) -> None:
    script = sound_script()
    cited = {
        "verdict": "pass",
        "reason": "B1 is met by the change.",
        "locations": [{"file": "src/fraction.py", "line": 3}],
    }
    script["by_diff_sha256"][hashlib.sha256(ALT_DIFF).hexdigest()]["B1"] = cited
    use_script(repository, tmp_path, script)
    run = run_in_process(make_revision(RevisionStatus.APPROVED), maintainer)
    row = run.rows.get(kind="alt")
    html = (
        logged_in(maintainer).get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])).content
    )
    target = reverse("rubrics:calibration_row_diff", args=[repository.pk, run.pk, row.pk]) + "#d0-n3"
    assert f'href="{target}"'.encode() in html


@pytest.mark.django_db
def test_each_verdict_keeps_the_judges_finding_shown_beside_its_reason(
    make_revision: MakeRevision, maintainer: User, repository: Repository, tmp_path: Path
) -> None:
    script = sound_script()
    script["by_diff_sha256"][hashlib.sha256(ALT_DIFF).hexdigest()]["B1"] = {
        "verdict": "pass",
        "finding": "satisfied",
        "reason": "B1 <b>is met</b>: the fraction is checked.",
    }
    use_script(repository, tmp_path, script)
    run = run_in_process(make_revision(RevisionStatus.APPROVED), maintainer)
    verdicts = CalibrationVerdict.objects.filter(row__run=run)
    # The scripted judge states the finding its verdict implies unless told otherwise: one on every verdict.
    assert {(v.verdict, v.finding) for v in verdicts} == {("pass", "satisfied"), ("fail", "violated")}
    alt_b1 = verdicts.get(row__kind="alt", item_id="B1")
    assert (alt_b1.verdict, alt_b1.finding) == ("pass", "satisfied")

    html = (
        logged_in(maintainer)
        .get(reverse("rubrics:calibration_detail", args=[repository.pk, run.pk]))
        .content.decode()
    )
    assert (
        '<span class="badge verdict-pass">pass</span> '
        '<span class="finding" title="the judge\'s finding on its own reason">'
        "(satisfied)</span>: B1 &lt;b&gt;is met&lt;/b&gt;: the fraction is checked." in html
    )
    assert "<b>is met</b>" not in html
    assert (
        '<span class="badge verdict-fail">fail</span> <span class="finding"' in html
        and "(violated)</span>:" in html
    )


# --- the verdict cache, and the real SDKs against the fake server ------------------------------------------


@pytest.fixture
def provider_env(fake_server: FakeProviderServer, monkeypatch: pytest.MonkeyPatch) -> FakeProviderServer:
    fake_server.reply_builder = calibration_replies
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    return fake_server


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flushable_transactional_db")
def test_both_providers_over_http_and_the_cache_answers_a_repeat_with_no_calls(
    provider_env: FakeProviderServer, make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    provider_env.reported_model = lambda model: f"{model}-as-served"
    set_judges(
        repository,
        by=Actor.member(maintainer),
        judge="anthropic:claude-sonnet-4-5-20250929",
        second_judge="openai:gpt-4o-2024-08-06",
    )
    revision = make_revision(RevisionStatus.APPROVED)
    first = calibration.calibrate_now(revision, Actor.member(maintainer))  # the database cache of the workers
    assert first.status == CalibrationStatus.PASSED, first.reason
    assert first.model_ids == ["claude-sonnet-4-5-20250929-as-served"]
    assert first.second_model_ids == ["gpt-4o-2024-08-06-as-served"]
    calls = len(provider_env.model_calls())
    assert first.calls == calls == 10  # 5 rows x 2 judges
    paths = {r.path for r in provider_env.model_calls()}
    assert paths == {"/v1/messages", "/v1/chat/completions"}
    assert JudgeCacheEntry.objects.count() == 10
    assert first.cost_usd > 0 and first.agreement is not None and first.agreement["raw"] == 1.0
    # Both APIs' findings are stored, each the one its verdict implies.
    findings = set(CalibrationVerdict.objects.filter(row__run=first).values_list("verdict", "finding"))
    assert findings == {("pass", "satisfied"), ("fail", "violated")}
    # The same content and judges again: every verdict comes from the cache, no call is made.
    second = calibration.calibrate_now(revision, Actor.member(maintainer))
    assert second.status == CalibrationStatus.PASSED
    assert len(provider_env.model_calls()) == calls
    assert second.calls == 0 and second.cost_usd == 0
    assert all(row.cache_hit for row in second.rows.all())
    assert second.model_ids == first.model_ids
    cached = set(CalibrationVerdict.objects.filter(row__run=second).values_list("verdict", "finding"))
    assert cached == findings  # the cache keeps the findings too


@pytest.mark.django_db
def test_run_calibration_is_for_maintainers_on_approved_revisions(
    make_revision: MakeRevision, maintainer: User, viewer: User, repository: Repository
) -> None:
    draft = make_revision()
    approved = make_revision(RevisionStatus.APPROVED)
    page = logged_in(maintainer).get(reverse("rubrics:revision_detail", args=[repository.pk, approved.pk]))
    assert "Run calibration" in page.content.decode()
    start = reverse("rubrics:revision_calibration_start", args=[repository.pk, approved.pk])
    assert logged_in(viewer).post(start).status_code == 403
    response = logged_in(maintainer).post(start, headers=HX)
    run = CalibrationRun.objects.get(revision=approved)
    assert response["HX-Redirect"] == reverse("rubrics:calibration_detail", args=[repository.pk, run.pk])
    assert not run.admit_when_passed and run.status == CalibrationStatus.QUEUED
    # A second click joins the calibration under way.
    logged_in(maintainer).post(start)
    assert CalibrationRun.objects.filter(revision=approved).count() == 1
    refused = logged_in(maintainer).post(
        reverse("rubrics:revision_calibration_start", args=[repository.pk, draft.pk]), follow=True
    )
    assert "only an approved revision is calibrated" in refused.content.decode()
    assert not CalibrationRun.objects.filter(revision=draft).exists()


@pytest.mark.django_db
def test_a_calibration_whose_job_the_reaper_fails_is_failed_with_the_jobs_reason(
    make_revision: MakeRevision, maintainer: User, settings: Any
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    run, _ = calibration.new_run(revision, Actor.member(maintainer))
    assert run.job is not None
    # Claimed by a worker (twice already) that then died: the reaper has no attempt left to give it.
    settings.JOB_MAX_ATTEMPTS = 2
    Job.objects.filter(pk=run.job.pk).update(
        status=JobStatus.RUNNING, attempts=2, started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    started = {"status": CalibrationStatus.RUNNING, "started_at": timezone.now()}
    CalibrationRun.objects.filter(pk=run.pk).update(**started)
    assert jobs.reap().failed == []  # its heartbeat is fresh: the job and its run are left alone
    run.refresh_from_db()
    assert run.status == CalibrationStatus.RUNNING
    reaped = jobs.reap(now=timezone.now() + timedelta(minutes=5))
    assert reaped.failed == [run.job.pk]
    # In the reaper's own transaction: no page or command has to notice it.
    run.refresh_from_db()
    assert run.status == CalibrationStatus.ERROR and "worker lost" in run.reason
    assert Job.objects.get(pk=run.job.pk).status == JobStatus.FAILED


@pytest.mark.django_db
def test_a_calibration_whose_job_fails_on_a_bug_is_failed_with_it(
    make_revision: MakeRevision, maintainer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    run, _ = calibration.new_run(revision, Actor.member(maintainer))

    def broken(*args: Any, **kwargs: Any) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(calibration, "run_calibration", broken)
    with pytest.raises(KeyError):
        calibration.run_here(run)
    run.refresh_from_db()
    assert run.status == CalibrationStatus.ERROR and "internal error: KeyError" in run.reason
    assert run.job is not None and Job.objects.get(pk=run.job.pk).status == JobStatus.FAILED
    revision.refresh_from_db()
    assert revision.status == RevisionStatus.APPROVED


def test_admit_says_it_needs_the_oracle_before_it_is_pressed(
    make_revision: MakeRevision, maintainer: User, repository: Repository
) -> None:
    revision = make_revision(RevisionStatus.APPROVED)
    url = reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])
    admit = reverse("rubrics:revision_admit", args=[repository.pk, revision.pk])
    assert admit in logged_in(maintainer).get(url).content.decode()
    Task.objects.filter(pk=revision.task_id).update(oracle_diff=b"")
    page = logged_in(maintainer).get(url).content.decode()
    files = reverse("rubrics:task_files", args=[repository.pk, revision.task_id])
    assert 'id="admit-needs-oracle"' in page and f'<a href="{files}">add the task\'s files</a>' in page
    assert admit not in page  # no form that can only fail
