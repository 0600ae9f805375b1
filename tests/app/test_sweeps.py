"""Sweeps in this process (services/sweeps/run.py): what is graded against which revision, stored under the
grade keys once, the second judge on a sample, the spend cap, and the model API failing for a while.

The real worker, a killed worker, Redis restarted and the database connection dropped are in
test_sweep_worker.py and test_sweep_faults.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from grading.judge.cache import MemoryCache
from grading.judge.limits import ProviderLimit, SharedProviderLimit, parse_provider_limits
from rubrics_app.access import Actor
from rubrics_app.models import (
    GradeSource,
    ItemVerdict,
    Job,
    JobStatus,
    JudgeGrade,
    JudgeSetting,
    Repository,
    RubricRevision,
    RunGrade,
    Sweep,
    Task,
)
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.judges import provider_limit
from rubrics_app.services.sweeps.run import SweepError, SweepRequest
from tests.app.conftest import LAZY_DIFF, judge_answers
from tests.app.runs_helpers import sha256_of
from tests.app.sweep_helpers import import_runs
from tests.grading.judge.fake_servers import (
    FakeProviderServer,
    expired,
    point_sdks_at,
    provider_server,
    slow,
    storm,
    valid,
)

pytestmark = pytest.mark.django_db

SONNET = "anthropic:claude-sonnet-4-5-20250929"
GPT = "openai:gpt-4o-2024-08-06"


def job_of(sweep: Sweep) -> Job:
    return Job.objects.get(pk=sweep.job_id)


def use_judges(repository: Repository, judge: str, second: str = "", cap: str | None = None) -> None:
    JudgeSetting.objects.filter(repository=repository).update(
        judge=judge, second_judge=second, monthly_cap_usd=cap
    )


def passing_script(tmp_path: Path, *, fail_lazy: bool = False) -> str:
    """Every item passes; with ``fail_lazy`` B1 fails on the clamping diff."""
    path = tmp_path / "passing.json"
    lazy = {sha256_of(LAZY_DIFF): judge_answers(("B1",))} if fail_lazy else {}
    path.write_text(json.dumps({"default": judge_answers(), "by_diff_sha256": lazy}))
    return f"scripted:{path}"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[FakeProviderServer]:
    # Concurrency as configured, no rate limit: the tests do not wait out a minute's allowance.
    settings.SWEEP_PROVIDER_LIMITS = parse_provider_limits("anthropic=4,openai=4")
    with provider_server() as server:
        point_sdks_at(server, monkeypatch)
        yield server


def test_a_sweep_grades_every_run_against_the_admitted_revision_once(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "runs", 4, lazy=(2,), failing_tests=(3,))
    use_judges(repository, passing_script(tmp_path, fail_lazy=True))

    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    job = job_of(sweep)
    assert job.status == JobStatus.DONE, job.error
    assert job.result is not None and (job.result["graded"], job.result["total"]) == (4, 4)
    assert (sweep.done_runs, sweep.graded_runs, sweep.judge_failures) == (4, 4, 0)
    grades = {g.run.repetition: g for g in RunGrade.objects.select_related("run")}
    assert {g.source for g in grades.values()} == {GradeSource.SWEEP}
    assert {g.revision_id for g in grades.values()} == {admitted_revision.pk}
    assert {g.rubric_sha256 for g in grades.values()} == {admitted_revision.rubric_sha256()}
    assert not any(g.provisional for g in grades.values())
    assert [grades[n].status for n in range(4)] == [
        "mergeable",
        "mergeable",
        "not_mergeable",
        "not_mergeable",
    ]
    assert grades[2].reasons == ["blocker B1 fails"]
    # pass false: the judge is never called, so the grade names no judge (no verdict could change it).
    assert grades[3].primary_judge == "" and not grades[3].judges.exists()
    primary = JudgeGrade.objects.get(grade=grades[0])
    assert primary.scripted and primary.role == "primary"
    assert sorted(primary.verdicts.values_list("item_id", flat=True)) == ["B1", "N1", "N2", "N3"]
    rows = (RunGrade.objects.count(), JudgeGrade.objects.count(), ItemVerdict.objects.count())

    again = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    assert job_of(again).status == JobStatus.DONE
    assert job_of(again).result == {**job_of(again).result, "graded": 0, "already_graded": 4}  # type: ignore[dict-item]
    assert (again.calls, again.graded_runs, again.done_runs) == (0, 0, 4)
    assert (RunGrade.objects.count(), JudgeGrade.objects.count(), ItemVerdict.objects.count()) == rows


def test_a_chosen_approved_revision_marks_every_result_provisional(
    approved_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path, task: Task
) -> None:
    import_runs(repository, tmp_path / "runs", 2)
    with pytest.raises(SweepError, match="no admitted revision"):
        sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest())
    sweep = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(revision=approved_revision), cache=MemoryCache()
    )
    assert job_of(sweep).status == JobStatus.DONE, job_of(sweep).error
    assert sweep.provisional and sweep.task == task
    grades = list(RunGrade.objects.all())
    assert len(grades) == 2 and all(g.provisional and g.revision == approved_revision for g in grades)
    assert all(g.metrics["provisional"] is True for g in grades)


def test_a_sweep_narrows_to_an_arm_and_a_model(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "a", 2, arm="plain", model="model-a")
    import_runs(repository, tmp_path / "b", 2, arm="guidance", model="model-b")
    sweep = sweeps.sweep_now(
        repository,
        Actor.member(maintainer),
        SweepRequest(arm="guidance", model="model-b"),
        cache=MemoryCache(),
    )
    assert sweep.total_runs == 2 and job_of(sweep).status == JobStatus.DONE
    assert set(RunGrade.objects.values_list("run__arm", "run__model")) == {("guidance", "model-b")}
    with pytest.raises(SweepError, match="no run to grade"):
        sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest(arm="nobody"))


def test_only_maintainers_send_a_sweep(
    admitted_revision: RubricRevision, repository: Repository, reviewer: User, viewer: User, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "runs", 1)
    for user in (reviewer, viewer):
        with pytest.raises(PermissionDenied):
            sweeps.new_sweep(repository, Actor.member(user), SweepRequest())
    assert not Sweep.objects.exists() and not Job.objects.filter(kind="sweep").exists()


def test_the_second_judge_grades_a_sample_fixed_by_the_diff(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    second = tmp_path / "second.json"
    second.write_text(json.dumps({"default": judge_answers(("N2",))}))
    use_judges(repository, passing_script(tmp_path), f"scripted:{second}")
    import_runs(repository, tmp_path / "runs", 12)
    sweep = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(second_sample=0.5), cache=MemoryCache()
    )
    assert job_of(sweep).status == JobStatus.DONE
    seconds = JudgeGrade.objects.filter(role="second")
    assert 0 < seconds.count() < 12  # a sample: some runs, not all
    skipped = [g for g in RunGrade.objects.all() if not g.judges.filter(role="second").exists()]
    assert skipped and all(
        g.metrics["details"]["second_judge_skipped"] == "not in the second judge's sample (0.5 of runs)"
        for g in skipped
    )
    chosen = set(seconds.values_list("grade__run__repetition", flat=True))
    RunGrade.objects.all().delete()
    again = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(second_sample=0.5), cache=MemoryCache()
    )
    assert job_of(again).status == JobStatus.DONE
    assert (
        set(JudgeGrade.objects.filter(role="second").values_list("grade__run__repetition", flat=True))
        == chosen
    )


@pytest.mark.django_db(transaction=True)
def test_the_spend_cap_stops_a_sweep_before_it_is_exceeded(
    flushable_transactional_db: None,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
    provider: FakeProviderServer,
) -> None:
    import_runs(repository, tmp_path / "runs", 8)
    # A call costs about $0.0035 here and is estimated at about $0.02 (output tokens above all): a few fit.
    use_judges(repository, SONNET, cap="0.04")
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer))
    job = job_of(sweep)
    assert job.status == JobStatus.FAILED
    assert "stopped before the repository's monthly spend cap ($0.04) would be exceeded" in job.error
    assert f"{sweep.done_runs} of 8 runs are graded and kept" in job.error
    assert 1 <= sweep.graded_runs < 8 and sweep.cost_usd <= 0.04, job.error
    # Every call made is paid for and counted; no grade is half stored.
    assert len(provider.model_calls()) == sweep.calls == sweep.graded_runs
    assert ItemVerdict.objects.count() == 4 * sweep.graded_runs
    # The cap counts sweeps as well as calibrations: a new sweep is refused once too little is left.
    with pytest.raises(SweepError, match="reached the repository's cap"):
        use_judges(repository, SONNET, cap=f"{sweep.cost_usd:.2f}")
        sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest())


@pytest.mark.django_db(transaction=True)
def test_an_api_failing_for_a_while_records_every_verdict_once_or_a_judge_failure_with_its_reason(
    flushable_transactional_db: None,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
    provider: FakeProviderServer,
    settings: Any,
) -> None:
    import_runs(repository, tmp_path / "runs", 4)
    use_judges(repository, SONNET, GPT)
    settings.SWEEP_JUDGE_MAX_RETRIES = 2
    settings.SWEEP_JUDGE_TIMEOUT_SECONDS = 0.5
    # A short storm (429, 529, 500): the SDKs' retries ride it out.
    provider.script(storm(429, 1), storm(529, 1), storm(500, 1))
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer))
    assert job_of(sweep).status == JobStatus.DONE, job_of(sweep).error
    assert sweep.judge_failures == 0 and RunGrade.objects.count() == 4
    assert JudgeGrade.objects.count() == 8 and ItemVerdict.objects.count() == 32
    assert len(provider.model_calls()) == 8 + 3

    # A longer outage, then timeouts: more failures than retries. Those runs are judge failures with the
    # reason, never verdicts; nothing else of them is stored.
    RunGrade.objects.all().delete()
    provider.script(storm(500, 3 * 3), [slow(2.0) for _ in range(3 * 3)])
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    assert job_of(sweep).status == JobStatus.DONE, job_of(sweep).error
    failed = list(RunGrade.objects.filter(judge_failure=True))
    assert failed and sweep.judge_failures == len(failed) and RunGrade.objects.count() == 4
    for grade in failed:
        primary = grade.judges.get(role="primary")
        assert primary.failure.startswith("no usable reply: call 1: backend error:")
        assert "500" in primary.failure or "timed out" in primary.failure.lower(), primary.failure
        assert not primary.verdicts.exists()
    # Once the API is back, sweeping again grades the failed runs, replacing their grades: one per run.
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    assert job_of(sweep).status == JobStatus.DONE and sweep.graded_runs == len(failed)
    assert RunGrade.objects.count() == 4 and not RunGrade.objects.filter(judge_failure=True).exists()
    assert ItemVerdict.objects.filter(judge__role="primary").count() == 16


def test_a_sweep_grades_in_memory_and_writes_no_scratch_folder(
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
    scratch_folders: list[str],
) -> None:
    import_runs(repository, tmp_path / "runs", 2, lazy=(1,))
    use_judges(repository, passing_script(tmp_path, fail_lazy=True))
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())

    assert job_of(sweep).status == JobStatus.DONE, job_of(sweep).error
    assert [g.status for g in RunGrade.objects.order_by("run__repetition")] == ["mergeable", "not_mergeable"]
    assert scratch_folders == []


def test_provider_limits_are_shared_through_redis_when_a_url_is_set(settings: Any) -> None:
    settings.SWEEP_LIMITS_REDIS_URL = "redis://127.0.0.1:6379/15"
    settings.SWEEP_LIMITS_KEY_PREFIX = "test-limits:sweeps"
    shared = provider_limit("anthropic")
    assert isinstance(shared, SharedProviderLimit) and shared.key == "test-limits:sweeps:anthropic"
    assert shared.spec == settings.SWEEP_PROVIDER_LIMITS["anthropic"]
    settings.SWEEP_LIMITS_REDIS_URL = ""  # the embedded broker: this process's own limit
    assert isinstance(provider_limit("anthropic"), ProviderLimit)


@pytest.mark.django_db(transaction=True)
def test_a_batch_sweep_sends_its_calls_as_batches_and_leaves_unanswered_runs_for_the_next(
    flushable_transactional_db: None,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
    provider: FakeProviderServer,
    settings: Any,
) -> None:
    import_runs(repository, tmp_path / "runs", 4)
    use_judges(repository, SONNET, GPT)
    settings.SWEEP_BATCH_SIZE = 4
    settings.SWEEP_BATCH_POLL_SECONDS = 0.01
    # The first run's primary call expires in its batch, and so does every retry of it.
    provider.script(expired(), valid(), valid(), valid(), *[expired() for _ in range(6)])
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), SweepRequest(batch=True))
    assert job_of(sweep).status == JobStatus.DONE, job_of(sweep).error
    assert sweep.batch and provider.model_calls() == []  # nothing went one call at a time
    posts = [r.path for r in provider.requests if r.method == "POST"]
    assert "/v1/messages/batches" in posts and "/v1/batches" in posts
    assert sweep.judge_failures == 1 and RunGrade.objects.count() == 4
    [failed] = RunGrade.objects.filter(judge_failure=True)
    assert "expired" in failed.judges.get(role="primary").failure
    assert sweep.cost_usd > 0
    # The next sweep grades the run its batch did not answer, and only that one.
    provider.queue.clear()
    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), SweepRequest(batch=True))
    assert job_of(sweep).status == JobStatus.DONE and sweep.graded_runs == 1
    assert not RunGrade.objects.filter(judge_failure=True).exists()


def test_the_repositorys_batch_choice_is_the_sweeps_default_and_needs_a_batch_api(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "runs", 1)
    use_judges(repository, SONNET, GPT)
    JudgeSetting.objects.filter(repository=repository).update(sweep_batch=True)
    assert sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest()).batch
    assert not sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest(batch=False)).batch
    use_judges(repository, passing_script(tmp_path))
    with pytest.raises(SweepError, match="batch mode is available for anthropic and openai"):
        sweeps.new_sweep(repository, Actor.member(maintainer), SweepRequest())
