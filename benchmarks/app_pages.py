"""The web app's pages as what they show grows: server time and queries.

    .venv/bin/python benchmarks/app_pages.py                    # every table
    .venv/bin/python benchmarks/app_pages.py --only report      # one: inputs, revision, queue, report

Builds a throwaway SQLite database in a temp dir and renders each page through Django's test client (the
whole request: middleware, access check, queries, template). Every figure is set against the same page at
the smallest size, measured in the same run: the ratio says how the time grows with the size (at most the
size's own ratio when the time is linear; near 1 when it does not grow). The queries of each render are in
the row: a page whose queries grow with what it shows has a query per item, run or revision.

- inputs (issue 8 §2): a blocker's evidence and calibration diffs of hostile shapes, 25,000 to 390,000 chars.
- revision: the revision page as its items (5 to 11, the rubric schema's range) and its task's revisions
  (1 to 64) grow.
- queue: the review queue (judges disagree) as the repository's runs grow from 1,000 to 10,000 (issue 11:
  2 arms x 2 models x 5 repetitions per task, the second judge disagreeing on one item of 2 runs in 5): its
  first and last page, and one pair's screen from the middle of the queue.
- report: the report page on the same runs, first view after a change (computed: the goal is under 1 s at
  10,000 runs) and later views (from the cache).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._common import django_for_pages  # noqa: E402

_tmp = django_for_pages(None, "app-pages-bench-")

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from benchmarks._common import Row, machine, print_table  # noqa: E402
from benchmarks._pages import PageTimer  # noqa: E402
from grading.loaders import parse_rubric  # noqa: E402
from rubrics_app.access import Actor  # noqa: E402
from rubrics_app.models import Membership, Repository, Role, RubricRevision, Task  # noqa: E402
from rubrics_app.services.rubrics.revisions import create_revision, new_draft_from  # noqa: E402
from rubrics_app.services.runs.queue import Queue  # noqa: E402
from tests.app.conftest import CALIBRATION_FILES, rubric_data  # noqa: E402
from tests.app.report_rows import bulk_runs  # noqa: E402

REPEAT = 3
RUN_SIZES = [1000, 2500, 5000, 10_000]
# The two inputs of issue 8 §2: letters in a blocker's evidence, and one JavaScript line of `/*"\\` repeated.
JS_UNIT = '/*"\\\\'


class Bench(PageTimer):
    def __init__(self) -> None:
        super().__init__(User.objects.create_user("bench", password="bench"), REPEAT)
        self.repository = self.new_repository("bench")

    def new_repository(self, name: str, **fields: object) -> Repository:
        repository = Repository.objects.create(name=name, **fields)
        Membership.objects.create(repository=repository, user=self.user, role=Role.MAINTAINER)
        return repository


def growth_table(
    title: str,
    page: str,
    unit: str,
    sizes: list[int],
    measure: Callable[[int], tuple[float, int]],
    notes: list[str],
) -> None:
    """One row per size, each against the smallest: time ratio and queries."""

    def label(size: int, queries: int) -> str:
        return f"{size:,} {unit.removesuffix('s') if size == 1 else unit} ({queries} queries)"

    measured = [(size, *measure(size)) for size in sizes]
    small, small_seconds, small_queries = measured[0]
    rows = [
        Row(
            f"{page}, {label(size, queries)}",
            seconds,
            label(small, small_queries),
            small_seconds,
            goal=size / small,  # no worse than linear
        )
        for size, seconds, queries in measured
    ]
    counts = sorted({q for _, _, q in measured})
    notes = [
        f"Queries: {' / '.join(map(str, counts))} "
        + ("(the same at every size)." if len(counts) == 1 else "(they grow with the size)."),
        *notes,
        f"Fastest of {REPEAT} renders each; the goal is linear growth (the ratio of the sizes); {machine()}.",
    ]
    print_table(title, rows, notes)


# --- the tables ------------------------------------------------------------------------------------------


def inputs(bench: Bench) -> None:
    repository = bench.repository

    def revision_page(evidence: str) -> str:
        task = Task.objects.create(repository=repository, task_id=f"t{Task.objects.count()}")
        data = rubric_data(task=task.task_id)
        data["blockers"][0]["evidence"] = evidence
        revision = create_revision(task, parse_rubric(data), CALIBRATION_FILES, by=Actor.member(bench.user))
        return reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])

    def diff_page(diff: str) -> str:
        task = Task.objects.create(repository=repository, task_id=f"t{Task.objects.count()}")
        files = {**CALIBRATION_FILES, "calib/lazy.diff": diff.encode()}
        revision = create_revision(
            task, parse_rubric(rubric_data(task=task.task_id)), files, by=Actor.member(bench.user)
        )
        diff_pk = revision.calibration_diffs.get(path="calib/lazy.diff").pk
        return reverse("rubrics:calibration_diff", args=[repository.pk, revision.pk, diff_pk])

    def js_line(size: int) -> str:
        return f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1 @@\n+{JS_UNIT * (size // len(JS_UNIT))}\n"

    def many_lines(size: int) -> str:
        # Short lines whose tokens make the lexer scan ahead: the highlighting budget, not the line cap.
        line = '"\\\\' * 50
        count = size // (len(line) + 2)
        body = "".join(f"+{line}\n" for _ in range(count))
        return f"--- a/app.js\n+++ b/app.js\n@@ -0,0 +1,{count} @@\n{body}"

    cases: list[tuple[str, Callable[[int], str], list[int]]] = [
        ("revision page, evidence of letters", lambda n: revision_page("a" * n), [25_000, 50_000, 100_000]),
        ("calibration diff, one JS line", lambda n: diff_page(js_line(n)), [97_500, 195_000, 390_000]),
        ("calibration diff, short JS lines", lambda n: diff_page(many_lines(n)), [97_500, 195_000, 390_000]),
    ]
    for name, make, sizes in cases:
        urls = {size: make(size) for size in sizes}
        growth_table(
            f"{name}: {sizes[0]:,} to {sizes[-1]:,} characters",
            name,
            "chars",
            sizes,
            lambda size, urls=urls: bench.timed(urls[size]),  # type: ignore[misc]
            [
                "The goal of issue 8 §2: every page under 1 s whatever a maintainer or an imported file "
                "put in it."
            ],
        )


def revision(bench: Bench) -> None:
    repository = bench.repository
    base = rubric_data(task="x")

    def with_items(items: int) -> str:
        task = Task.objects.create(repository=repository, task_id=f"items{items}")
        data = rubric_data(task=task.task_id)
        blockers = min(5, items - 3)
        data["blockers"] = [{**base["blockers"][0], "id": f"B{i}"} for i in range(1, blockers + 1)]
        data["non_blockers"] = [
            {**base["non_blockers"][0], "id": f"N{i}"} for i in range(1, items - blockers + 1)
        ]
        revision = create_revision(task, parse_rubric(data), CALIBRATION_FILES, by=Actor.member(bench.user))
        return reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])

    urls = {n: with_items(n) for n in (5, 8, 11)}
    growth_table(
        "Revision page as its items grow (the schema allows 5 to 11)",
        "revision page",
        "items",
        [5, 8, 11],
        lambda n: bench.timed(urls[n]),
        [],
    )

    def with_revisions(count: int) -> str:
        task = Task.objects.create(repository=repository, task_id=f"revisions{count}")
        revision = create_revision(
            task, parse_rubric(rubric_data(task=task.task_id)), CALIBRATION_FILES, by=Actor.member(bench.user)
        )
        for _ in range(count - 1):
            revision = new_draft_from(revision, by=Actor.member(bench.user))
        assert RubricRevision.objects.filter(task=task).count() == count
        return reverse("rubrics:revision_detail", args=[repository.pk, revision.pk])

    sizes = [1, 8, 64]
    urls = {n: with_revisions(n) for n in sizes}
    growth_table(
        "Revision page as its task's revisions grow (the newest draft shown)",
        "revision page",
        "revisions",
        sizes,
        lambda n: bench.timed(urls[n]),
        [],
    )


def _runs_repositories(bench: Bench) -> dict[int, Repository]:
    repositories = {}
    for size in RUN_SIZES:
        repository = bench.new_repository(f"runs-{size}", training_cutoffs={"claude-x": "2025-05-01"})
        tasks = Task.objects.bulk_create(
            Task(
                repository=repository, task_id=f"t{i:04d}", spec_prompt="x", base_date=f"2025-0{1 + i % 9}-01"
            )
            for i in range(size // 20)
        )
        assert bulk_runs(tasks, ["a", "b"], ["claude-x", "gpt-y"], 5) == size
        repositories[size] = repository
    return repositories


def queue(bench: Bench, repositories: dict[int, Repository]) -> None:
    size = settings.RUNS_QUEUE_PAGE_SIZE
    urls = {n: reverse("rubrics:queue", args=[r.pk]) + "?kind=judges" for n, r in repositories.items()}
    growth_table(
        "Review queue (the judges disagree) as runs grow: its first page",
        "queue page",
        "runs",
        RUN_SIZES,
        lambda n: bench.timed(urls[n]),
        [
            f"The queue holds 2 disagreeing pairs in 5 runs here (4,000 at 10,000 runs); the list shows "
            f"{size} to a page, and counts N of M reviewed over the whole queue."
        ],
    )
    last = {n: f"{urls[n]}&page={(2 * n // 5 + size - 1) // size}" for n in RUN_SIZES}
    growth_table(
        "Review queue as runs grow: its last page",
        "queue page, last",
        "runs",
        RUN_SIZES,
        lambda n: bench.timed(last[n]),
        [],
    )
    entries = {}
    for n, repository in repositories.items():
        middle = Queue(repository, "judges", {}).page(2 * n // 5 // size // 2 + 1, size).entries[0]
        entries[n] = reverse("rubrics:queue_entry", args=[repository.pk, middle.grade_id, middle.item_id])
    growth_table(
        "One pair's screen (position, previous and next) as runs grow: a pair in the middle",
        "queue pair",
        "runs",
        RUN_SIZES,
        lambda n: bench.timed(entries[n] + "?kind=judges"),
        [],
    )


def report(bench: Bench, repositories: dict[int, Repository]) -> None:
    urls = {size: reverse("rubrics:report", args=[r.pk]) for size, r in repositories.items()}
    first: dict[int, float] = {}

    def computed(size: int) -> tuple[float, int]:
        seconds, queries = bench.timed(urls[size], before=cache.clear)
        first[size] = seconds
        return seconds, queries

    growth_table(
        "Report page, first view after a change (computed), as runs grow",
        "report page, computed",
        "runs",
        RUN_SIZES,
        computed,
        [],
    )
    print(
        f"\nFirst view at {RUN_SIZES[-1]:,} runs: {first[RUN_SIZES[-1]]:.2f} s; "
        f"under 1 s: {'yes' if first[RUN_SIZES[-1]] < 1 else 'NO'}."
    )
    for url in urls.values():
        bench.get(url)  # cached
    growth_table(
        "Report page, later views (from the cache), as runs grow",
        "report page, cached",
        "runs",
        RUN_SIZES,
        lambda size: bench.timed(urls[size]),
        [],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["inputs", "revision", "queue", "report"], action="append")
    chosen = parser.parse_args().only or ["inputs", "revision", "queue", "report"]
    setup_test_environment()
    call_command("migrate", verbosity=0)
    bench = Bench()
    if "inputs" in chosen:
        inputs(bench)
    if "revision" in chosen:
        revision(bench)
    if {"queue", "report"} & set(chosen):
        repositories = _runs_repositories(bench)
        if "queue" in chosen:
            queue(bench, repositories)
        if "report" in chosen:
            report(bench, repositories)


if __name__ == "__main__":
    main()
