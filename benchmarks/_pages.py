"""The app's pages timed, for the benchmarks that render them (``_common.django_for_pages`` sets Django up
before this module is imported): a logged-in client, the queries of one render, and the fastest of several
renders with the queries of one.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext


def timed_queries(work: Callable[[], object], before: Callable[[], None], repeat: int) -> tuple[float, int]:
    """The fastest of ``repeat`` calls of ``work`` (``before`` untimed before each) and its queries."""
    best = float("inf")
    queries = 0
    for _ in range(repeat):
        before()
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - started)
        queries = len(captured)
    return best, queries


class PageTimer:
    """The app's pages as ``user`` sees them, each timed as the fastest of ``repeat`` renders."""

    def __init__(self, user: User, repeat: int) -> None:
        self.user = user
        self.client = Client()
        self.client.force_login(user)
        self.repeat = repeat

    def get(self, url: str) -> int:
        """One render (it must answer 200); the number of queries it made."""
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return len(queries)

    def timed(self, url: str, before: Callable[[], None] = lambda: None) -> tuple[float, int]:
        """The fastest of ``repeat`` renders (``before`` runs untimed before each) and the queries of one."""
        return timed_queries(functools.partial(self.get, url), before, self.repeat)
