"""The judges a sweep calls (docs/sweeps.md): the repository's judge specs as backends, gathered into batches
for a batch sweep, behind the provider limits every sweep shares and the repository's monthly spend cap."""

from __future__ import annotations

import threading

from django.conf import settings

from grading import (
    Backend,
    Budget,
    Decoding,
    Limit,
    PriceTable,
    ProviderLimit,
    ProviderLimitSpec,
    SharedProviderLimit,
    ThreadBatchBackend,
    make_backend,
)
from rubrics_app.models import JudgeSetting, Repository
from rubrics_app.services.calibration.inputs import spent_this_month


def unpriced_specs(specs: list[str], prices: PriceTable) -> list[str]:
    return [
        spec
        for spec in specs
        if spec and not JudgeSetting.is_scripted(spec) and prices.price_for(spec.partition(":")[2]) is None
    ]


_limits_lock = threading.Lock()
_limits: dict[str, tuple[str, Limit]] = {}


def provider_limit(provider: str) -> Limit:
    """The limit of a provider (settings.SWEEP_PROVIDER_LIMITS), shared by every sweep: across every worker
    through settings.SWEEP_LIMITS_REDIS_URL when set, else by this process's threads."""
    spec: ProviderLimitSpec = settings.SWEEP_PROVIDER_LIMITS.get(
        provider, ProviderLimitSpec(concurrency=settings.SWEEP_DEFAULT_CONCURRENCY)
    )
    url: str = settings.SWEEP_LIMITS_REDIS_URL
    where = f"{url} {settings.SWEEP_LIMITS_KEY_PREFIX}"
    with _limits_lock:
        known = _limits.get(provider)
        if known is not None and known[0] == where and known[1].spec == spec:
            return known[1]
        limit: Limit = (
            SharedProviderLimit(spec, url, f"{settings.SWEEP_LIMITS_KEY_PREFIX}:{provider}")
            if url
            else ProviderLimit(spec)
        )
        _limits[provider] = (where, limit)
        return limit


def judge_backend(spec: str, decoding: Decoding, batch: bool = False) -> Backend:
    backend = make_backend(
        spec,
        decoding=decoding,
        timeout=settings.SWEEP_JUDGE_TIMEOUT_SECONDS,
        max_retries=settings.SWEEP_JUDGE_MAX_RETRIES,
        batch=batch,
    )
    if batch:
        backend.batch_poll_interval = settings.SWEEP_BATCH_POLL_SECONDS  # type: ignore[attr-defined]
    return backend


def batched(backend: Backend) -> Backend:
    """``backend`` with its calls from every grading thread gathered into batches (a batch sweep)."""
    if not getattr(backend, "batch", False) or not hasattr(backend, "complete_many"):
        return backend
    return ThreadBatchBackend(backend, size=settings.SWEEP_BATCH_SIZE)


def spend_budget(repository: Repository) -> Budget | None:
    judges = JudgeSetting.objects.filter(repository=repository).first()
    if judges is None or judges.monthly_cap_usd is None:
        return None
    return Budget(
        float(judges.monthly_cap_usd),
        spent_this_month(repository.pk),
        what="the repository's monthly spend cap",
    )
