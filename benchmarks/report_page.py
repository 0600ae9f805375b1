"""How long the report page takes at doubling numbers of runs, computed and from its cache.

    .venv/bin/python benchmarks/report_page.py

Builds a throwaway SQLite database in a temp dir, writes graded runs with bulk_create (runs of 20 per task:
2 arms x 2 models x 5 repetitions, as the 10,000-run case of issue 11: 500 tasks), and renders the page
through Django's test client. Prints seconds and the ratio to the previous size (about 2 when linear), and
the queries of each render (the same at every size). "computed" is the first view after a change (the
bootstrap at 2000 replicates dominates); "cached" is every later view until the runs, grades, labels,
tasks or cutoffs change. The goal: under 1 s at 10,000 runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_tmp = tempfile.mkdtemp(prefix="report-page-bench-")
os.environ["DATABASE_URL"] = f"sqlite:///{_tmp}/bench.sqlite3"
os.environ["RUBRICS_VAR_DIR"] = _tmp
os.environ["CELERY_BROKER_URL"] = "filesystem://"
os.environ["DJANGO_SETTINGS_MODULE"] = "rubrics_app.settings"

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from rubrics_app.models import Membership, Repository, Role, Task  # noqa: E402
from tests.app.report_rows import bulk_runs  # noqa: E402

SIZES = [1250, 2500, 5000, 10_000]


def timed(client: Client, url: str) -> tuple[float, int]:
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        response = client.get(url)
        seconds = time.perf_counter() - start
    assert response.status_code == 200, response
    return seconds, len(queries)


def main() -> None:
    setup_test_environment()
    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench", password="bench")
    client = Client()
    client.force_login(user)
    print(f"{'runs':>7} {'computed s':>11} {'ratio':>6} {'cached s':>9} {'ratio':>6} {'queries':>12}")
    previous: tuple[float, float] | None = None
    for size in SIZES:
        repository = Repository.objects.create(
            name=f"bench-{size}", training_cutoffs={"claude-x": "2025-05-01"}
        )
        Membership.objects.create(repository=repository, user=user, role=Role.MAINTAINER)
        tasks = Task.objects.bulk_create(
            Task(
                repository=repository, task_id=f"t{i:04d}", spec_prompt="x", base_date=f"2025-0{1 + i % 9}-01"
            )
            for i in range(size // 20)
        )
        bulk_runs(tasks, ["a", "b"], ["claude-x", "gpt-y"], 5)
        url = reverse("rubrics:report", args=[repository.pk])
        cache.clear()
        computed, cold_queries = timed(client, url)
        cached = min(timed(client, url)[0] for _ in range(5))
        warm_queries = timed(client, url)[1]
        ratios = (
            ("", "") if previous is None else (f"{computed / previous[0]:.2f}", f"{cached / previous[1]:.2f}")
        )
        print(
            f"{size:7,} {computed:11.3f} {ratios[0]:>6} {cached:9.3f} {ratios[1]:>6} "
            f"{cold_queries:>5} / {warm_queries:<5}"
        )
        previous = (computed, cached)


if __name__ == "__main__":
    main()
