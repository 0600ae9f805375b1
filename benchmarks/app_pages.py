"""How long the web app's pages take on the inputs of issue 8 §2, at doubling sizes.

    .venv/bin/python benchmarks/app_pages.py

Builds a throwaway SQLite database in a temp dir, renders each page through Django's test client and prints
a table: seconds per size and the ratio to the previous size (about 2 when the time is linear in the size,
about 4 when quadratic). The goal: every page under 1 s whatever a maintainer or an imported file put in it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_tmp = tempfile.mkdtemp(prefix="app-pages-bench-")
os.environ["DATABASE_URL"] = f"sqlite:///{_tmp}/bench.sqlite3"
os.environ["RUBRICS_VAR_DIR"] = _tmp
os.environ["CELERY_BROKER_URL"] = "filesystem://"
os.environ["DJANGO_SETTINGS_MODULE"] = "rubrics_app.settings"

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from grading.schema import parse_rubric  # noqa: E402
from rubrics_app.models import Membership, Repository, Role, Task  # noqa: E402
from rubrics_app.services.revisions import create_revision  # noqa: E402
from tests.app.conftest import CALIBRATION_FILES, rubric_data  # noqa: E402

# The two inputs of the issue: letters in a blocker's evidence, and one JavaScript line of `/*"\\` repeated.
JS_UNIT = '/*"\\\\'


def best_of(runs: int, render: Callable[[], None]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        render()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    setup_test_environment()
    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench", password="bench")
    repository = Repository.objects.create(name="bench")
    Membership.objects.create(repository=repository, user=user, role=Role.MAINTAINER)
    client = Client()
    client.force_login(user)

    def revision_page(evidence: str) -> Callable[[], None]:
        task = Task.objects.create(repository=repository, task_id=f"t{Task.objects.count()}")
        data = rubric_data(task=task.task_id)
        data["blockers"][0]["evidence"] = evidence
        revision = create_revision(task, parse_rubric(data), CALIBRATION_FILES, by=user)
        url = reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])
        return lambda: _ok(client.get(url))

    def diff_page(diff: str) -> Callable[[], None]:
        task = Task.objects.create(repository=repository, task_id=f"t{Task.objects.count()}")
        files = {**CALIBRATION_FILES, "calib/lazy.diff": diff.encode()}
        revision = create_revision(task, parse_rubric(rubric_data(task=task.task_id)), files, by=user)
        diff_pk = revision.calibration_diffs.get(path="calib/lazy.diff").pk
        url = reverse("rubrics:calibration_diff", args=[repository.pk, revision.pk, diff_pk])
        return lambda: _ok(client.get(url))

    def js_line(size: int) -> str:
        return f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1 @@\n+{JS_UNIT * (size // len(JS_UNIT))}\n"

    def many_lines(size: int) -> str:
        # Short lines whose tokens make the lexer scan ahead: the highlighting budget, not the line cap.
        line = '"\\\\' * 50
        count = size // (len(line) + 2)
        body = "".join(f"+{line}\n" for _ in range(count))
        return f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1,{count} @@\n{body}"

    cases: list[tuple[str, Callable[[int], Callable[[], None]], list[int]]] = [
        ("revision page, evidence of letters", lambda n: revision_page("a" * n), [25_000, 50_000, 100_000]),
        ("calibration diff, one JS line", lambda n: diff_page(js_line(n)), [97_500, 195_000, 390_000]),
        ("calibration diff, short JS lines", lambda n: diff_page(many_lines(n)), [97_500, 195_000, 390_000]),
    ]
    print(f"{'page and input':40} {'size':>9} {'seconds':>8} {'ratio':>6}")
    for name, make, sizes in cases:
        previous = None
        for size in sizes:
            seconds = best_of(3, make(size))
            ratio = f"{seconds / previous:6.2f}" if previous else ""
            print(f"{name:40} {size:9,} {seconds:8.3f} {ratio:>6}")
            previous = seconds


def _ok(response: object) -> None:
    assert getattr(response, "status_code", None) == 200, response


if __name__ == "__main__":
    main()
