"""The report page reads a fixed number of queries whatever the number of runs: 100 and 10,000 runs
(written with bulk_create) cost the same, computed or from the cache."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rubrics_app.models import Repository
from tests.app.report_rows import bulk_runs, bulk_tasks

pytestmark = pytest.mark.django_db


def _queries(user: User, repository: Repository, **params: Any) -> tuple[int, int]:
    """Queries of the page computed (empty cache), then served from the cache."""
    client = Client()
    client.force_login(user)
    url = reverse("rubrics:report", args=[repository.pk])
    cache.clear()
    with CaptureQueriesContext(connection) as cold:
        assert client.get(url, params).status_code == 200
    with CaptureQueriesContext(connection) as warm:
        assert client.get(url, params).status_code == 200
    return len(cold), len(warm)


def test_it_reads_as_many_queries_at_100_and_10000_runs(
    repository: Repository, other_repository: Repository, viewer: User, outsider: User
) -> None:
    small = bulk_runs(bulk_tasks(repository, 5), ["a", "b"], ["claude-x", "gpt-y"], 5)
    large = bulk_runs(bulk_tasks(other_repository, 50), ["a", "b"], ["claude-x", "gpt-y"], 50)
    assert (small, large) == (100, 10_000)
    repository.training_cutoffs = other_repository.training_cutoffs = {"claude-x": "2025-01-01"}
    repository.save()
    other_repository.save()
    small_cold, small_warm = _queries(viewer, repository)
    large_cold, large_warm = _queries(outsider, other_repository)  # maintainer of the other repository
    assert small_cold == large_cold
    assert small_warm == large_warm
    assert small_warm < small_cold  # the cache spares the rows
    # Filters change what the queries select, not how many there are; a filtered view does not look for
    # the stored report (only the whole one is stored).
    assert _queries(outsider, other_repository, arm="a", prompt_style="spec") == (large_cold - 1, large_warm)
