"""Sweeps on a real Celery worker process (the configured broker and database): `manage.py sweep --wait`
with the scripted judge, then with the real SDKs against the local API server for both providers, the
second judge on a sample, and the rerun that makes no call."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from rubrics_app.models import (
    ItemVerdict,
    JudgeGrade,
    JudgeSetting,
    ReportSnapshot,
    Repository,
    RubricRevision,
    RunGrade,
    Sweep,
)
from rubrics_app.services.reports import report as report_service
from rubrics_app.services.reports.report import ReportResult, repository_report
from tests.app.command_helpers import command_exit
from tests.app.sweep_helpers import import_runs
from tests.app.worker_helpers import SONNET, WAIT_SECONDS, environment, module_worker
from tests.grading.judge.fake_servers import FakeProviderServer, provider_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

GPT = "openai:gpt-4o-2024-08-06"
# The worker's limits: concurrency as the defaults, no rate limit to wait out.
WORKER_ENV = {"SWEEP_PROVIDER_LIMITS": "anthropic=4,openai=4"}


@pytest.fixture(scope="module")
def provider() -> Iterator[FakeProviderServer]:
    with provider_server() as server:
        yield server


@pytest.fixture(scope="module")
def worker(
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    provider: FakeProviderServer,
) -> Iterator[Path]:
    with (
        environment(WORKER_ENV),
        module_worker(django_db_blocker, tmp_path_factory, "sweep-worker", provider) as log,
    ):
        yield log


def ready_report(repository: Repository, log: Path) -> ReportResult:
    """The repository's report as the page reads it once a worker has stored it for the current runs (never
    computed here: a computation fails the wait)."""

    def refuse(*args: object) -> ReportResult:
        raise LookupError("not stored yet")

    deadline = time.monotonic() + WAIT_SECONDS
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report_service, "_computed", refuse)
        while True:
            cache.clear()
            try:
                return repository_report(repository, {})
            except LookupError:
                if time.monotonic() > deadline:
                    pytest.fail(f"no report stored; worker log:\n{log.read_text(errors='replace')}")
                time.sleep(0.2)


def sweep_command(*args: str) -> tuple[int, str]:
    return command_exit("sweep", *args)


def test_sweep_waits_for_the_worker_with_the_scripted_judge(
    worker: Path, admitted_revision: RubricRevision, repository: Repository, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "runs", 3)
    code, out = sweep_command("--repository", repository.name, "--task", "fix_fraction_gt1", "--wait")
    assert code == 0, f"{out}\n{worker.read_text(errors='replace')}"
    assert "3 runs, judge scripted:" in out and "(scripted judge)" in out
    assert "3 of 3 runs done, 3 graded now, 0 judge failures" in out and "every run is graded" in out
    assert RunGrade.objects.filter(source="sweep").count() == 3
    assert ItemVerdict.objects.count() == 3 * 4
    code, out = sweep_command("--repository", repository.name, "--revision", "999999")
    assert code == 2 and "--revision: example-project has no revision 999999" in out
    # The job sent the report to the worker, which stored it: the page reads it, computing nothing.
    ready = ready_report(repository, worker)
    assert ready.runs == 3 and ready.ungraded == 0
    assert ReportSnapshot.objects.filter(repository=repository).count() == 1


def test_two_providers_a_second_judge_sample_and_a_rerun_without_calls(
    worker: Path,
    provider: FakeProviderServer,
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    tmp_path: Path,
) -> None:
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET, second_judge=GPT)
    import_runs(repository, tmp_path / "runs", 6)
    before = len(provider.model_calls())
    code, out = sweep_command("--repository", repository.name, "--second-sample", "0.5", "--wait")
    assert code == 0, f"{out}\n{worker.read_text(errors='replace')}"
    calls = provider.model_calls()[before:]
    primary = JudgeGrade.objects.filter(role="primary")
    second = JudgeGrade.objects.filter(role="second")
    assert primary.count() == 6 and 0 < second.count() < 6
    assert len(calls) == 6 + second.count()
    assert sum(1 for c in calls if c.path.endswith("/chat/completions")) == second.count()
    assert set(primary.values_list("model_id", flat=True)) == {"claude-sonnet-4-5-20250929"}
    assert set(second.values_list("model_id", flat=True)) == {"gpt-4o-2024-08-06"}
    sweep = Sweep.objects.get(judge=SONNET)
    assert sweep.calls == len(calls) and sweep.cost_usd > 0 and sweep.cost_known
    assert sweep.second_sample == 0.5
    rows = (RunGrade.objects.count(), JudgeGrade.objects.count(), ItemVerdict.objects.count())

    before = len(provider.model_calls())
    code, out = sweep_command("--repository", repository.name, "--second-sample", "0.5", "--wait")
    assert code == 0, out
    assert "6 of 6 runs done, 0 graded now" in out and "0 judge calls" in out
    assert len(provider.model_calls()) == before  # nothing changed: no model call
    assert (RunGrade.objects.count(), JudgeGrade.objects.count(), ItemVerdict.objects.count()) == rows
