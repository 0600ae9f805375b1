"""`manage.py sweep --batch` and `--interactive` against the local API stand-in (its batch endpoints): the
judge calls go through the providers' batch APIs and nothing goes call by call, the grades are stored,
the cost is the batch price of what the stand-in billed; `--interactive` overrides a repository whose
default is batch, and the Judges page's "batch (cheaper, slower)" choice is the command's default.

The job runs in this process, as CELERY_TASK_ALWAYS_EAGER would run it; the real worker is in
test_sweep_worker.py."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from grading.judge.cost import PriceTable
from grading.judge.limits import parse_provider_limits
from grading.judge.models import Usage
from rubrics_app import celery_app
from rubrics_app.models import (
    ItemVerdict,
    JudgeGrade,
    JudgeSetting,
    Repository,
    RubricRevision,
    RunGrade,
    Sweep,
)
from tests.app.command_helpers import command_exit
from tests.app.sweep_helpers import import_runs
from tests.grading.judge.fake_servers import FakeProviderServer, error, point_sdks_at, provider_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("flushable_transactional_db")]

SONNET = "anthropic:claude-sonnet-4-5-20250929"
GPT = "openai:gpt-4o-2024-08-06"
BATCH_POSTS = {"/v1/messages/batches", "/v1/batches"}


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[FakeProviderServer]:
    settings.SWEEP_PROVIDER_LIMITS = parse_provider_limits("anthropic=4,openai=4")
    settings.SWEEP_BATCH_POLL_SECONDS = 0.01
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    with provider_server() as server:
        point_sdks_at(server, monkeypatch)
        yield server


def sweep_command(*args: str) -> tuple[int, str]:
    return command_exit("sweep", *args, "--wait", "--timeout", "60")


def batch_posts(provider: FakeProviderServer) -> list[str]:
    return [r.path for r in provider.requests if r.method == "POST" and r.path in BATCH_POSTS]


def _get(provider: FakeProviderServer, path: str) -> bytes:
    with urllib.request.urlopen(provider.url + path, timeout=10) as response:
        body: bytes = response.read()
        return body


def billed_usage(provider: FakeProviderServer) -> dict[str, list[Usage]]:
    """Every call's usage as the stand-in's batch results report it, by model: read back through its API."""
    usages: dict[str, list[Usage]] = {}
    paths = {r.path for r in provider.requests if r.method == "GET"}
    for path in sorted(paths):
        if match := re.fullmatch(r"/v1/messages/batches/([^/]+)/results", path):
            for line in _get(provider, path).decode().splitlines():
                message = json.loads(line)["result"]["message"]
                u = message["usage"]
                usages.setdefault(message["model"], []).append(
                    Usage(
                        input_tokens=u["input_tokens"],
                        cache_write_tokens=u["cache_creation_input_tokens"],
                        cache_read_tokens=u["cache_read_input_tokens"],
                        output_tokens=u["output_tokens"],
                    )
                )
        elif match := re.fullmatch(r"/v1/batches/([^/]+)", path):
            batch = json.loads(_get(provider, f"/v1/batches/{match.group(1)}"))
            content = _get(provider, f"/v1/files/{batch['output_file_id']}/content")
            for line in content.decode().splitlines():
                body = json.loads(line)["response"]["body"]
                u = body["usage"]
                cached = u["prompt_tokens_details"]["cached_tokens"]
                usages.setdefault(body["model"], []).append(
                    Usage(
                        input_tokens=u["prompt_tokens"] - cached,
                        cache_read_tokens=cached,
                        output_tokens=u["completion_tokens"],
                    )
                )
    return usages


def test_sweep_batch_sends_every_judge_call_through_the_batch_apis_and_pays_the_batch_price(
    admitted_revision: RubricRevision,
    repository: Repository,
    tmp_path: Path,
    provider: FakeProviderServer,
) -> None:
    import_runs(repository, tmp_path / "runs", 3, lazy=(1,))
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET, second_judge=GPT)
    assert not JudgeSetting.objects.get(repository=repository).sweep_batch  # the default is interactive

    code, out = sweep_command("--repository", repository.name, "--batch")
    assert code == 0, out
    assert f"judge {SONNET}, batch" in out and "3 of 3 runs done, 3 graded now, 0 judge failures" in out
    sweep = Sweep.objects.get()
    assert sweep.batch
    # Both judges went through their provider's batch API, and not one call went call by call.
    assert provider.model_calls() == []
    assert set(batch_posts(provider)) == BATCH_POSTS
    assert RunGrade.objects.filter(source="sweep").count() == 3
    assert JudgeGrade.objects.filter(role="primary").count() == 3
    assert JudgeGrade.objects.filter(role="second").count() == 3
    assert ItemVerdict.objects.count() == 2 * 3 * 4
    assert not JudgeGrade.objects.exclude(failure="").exists()

    # The cost stored is the batch price (half) of the tokens the stand-in billed, cache reads included.
    usages = billed_usage(provider)
    assert sorted(usages) == ["claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06"]
    assert sum(len(u) for u in usages.values()) == sweep.calls == 6
    prices = PriceTable()
    batch = sum(prices.cost(u, model, batch=True).cost_usd for model, us in usages.items() for u in us)
    interactive = sum(prices.cost(u, model).cost_usd for model, us in usages.items() for u in us)
    assert sweep.cost_known and sweep.cost_usd == pytest.approx(batch)
    assert batch == pytest.approx(interactive / 2)
    assert f"6 judge calls, ${batch:.4f}" in out


def test_interactive_overrides_a_repository_whose_default_is_batch(
    admitted_revision: RubricRevision,
    repository: Repository,
    tmp_path: Path,
    provider: FakeProviderServer,
) -> None:
    import_runs(repository, tmp_path / "runs", 2)
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET, second_judge="", sweep_batch=True)

    code, out = sweep_command("--repository", repository.name, "--interactive")
    assert code == 0, out
    assert ", batch" not in out and "2 of 2 runs done, 2 graded now" in out
    assert not Sweep.objects.get().batch
    assert len(provider.model_calls()) == 2 and batch_posts(provider) == []
    assert RunGrade.objects.count() == 2


def test_the_judges_page_batch_choice_is_the_default_of_the_command(
    admitted_revision: RubricRevision,
    repository: Repository,
    maintainer: User,
    client: Client,
    tmp_path: Path,
    provider: FakeProviderServer,
) -> None:
    import_runs(repository, tmp_path / "runs", 2)
    client.force_login(maintainer)
    url = reverse("rubrics:judge_settings", args=[repository.pk])
    assert b"batch (cheaper, slower)" in client.get(url).content
    response = client.post(url, {"judge": SONNET, "second_judge": "", "sweep_mode": "batch"})
    assert response.status_code == 302, response.content.decode()

    code, out = sweep_command("--repository", repository.name)  # neither --batch nor --interactive
    assert code == 0, out
    assert f"judge {SONNET}, batch" in out and "2 of 2 runs done, 2 graded now" in out
    assert Sweep.objects.get().batch
    assert provider.model_calls() == [] and batch_posts(provider) == ["/v1/messages/batches"]
    assert RunGrade.objects.count() == 2 and JudgeGrade.objects.filter(role="primary").count() == 2


@pytest.mark.parametrize("mode", ["--batch", "--interactive"])
def test_a_sweep_in_which_every_call_failed_exits_1(
    mode: str,
    admitted_revision: RubricRevision,
    repository: Repository,
    tmp_path: Path,
    provider: FakeProviderServer,
) -> None:
    import_runs(repository, tmp_path / "runs", 2)
    JudgeSetting.objects.filter(repository=repository).update(judge=SONNET, second_judge="")
    provider.script([error(400) for _ in range(20)])  # in a batch: each request an errored item

    code, out = sweep_command("--repository", repository.name, mode)
    assert code == 1, out
    assert "2 of 2 runs done, 2 graded now, 2 judge failures" in out
    assert out.endswith(
        "2 of 2 runs left without a grade (2 judge failures, 0 not readable); sweep again to grade them"
    )
    assert "every run is graded" not in out
    assert JudgeGrade.objects.exclude(failure="").count() == 2
    assert bool(batch_posts(provider)) == (mode == "--batch")
