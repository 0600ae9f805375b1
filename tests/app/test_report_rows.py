"""The report's precomputed rows: written beside each imported or swept grade, the newest grade of a run
marked, and the same rows from the migration that fills stored grades."""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    JudgeSetting,
    ReportRow,
    ReportVerdicts,
    Repository,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.report_rows import refresh_report_rows
from rubrics_app.services.sweeps import run as sweeps
from tests.app.conftest import LAZY_DIFF, judge_answers
from tests.app.report_helpers import build_runs, label_runs, rubric_report_json
from tests.app.report_rows import bulk_runs
from tests.app.runs_helpers import PASSING, grade, sha256_of, write_run, write_scripted, write_task_dir
from tests.app.sweep_helpers import import_runs

pytestmark = pytest.mark.django_db

FAILING = {**PASSING, "B1": {"verdict": "fail", "reason": "wrong message"}}


def report_json(user: User, repository: Repository) -> dict[str, Any]:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("rubrics:report_json", args=[repository.pk]))
    assert response.status_code == 200
    data: dict[str, Any] = json.loads(response.content)
    data.pop("provenance")  # when it was made: not the report
    return data


def _import(path: Path, repository: Repository) -> None:
    call_command("import_runs", str(path), "--repository", repository.name, stdout=io.StringIO())


def test_the_newest_grade_of_a_run_is_the_one_reported(
    tmp_path: Path, repository: Repository, viewer: User
) -> None:
    task_dir = write_task_dir(tmp_path / "checkout", "t1")
    Task.objects.create(repository=repository, task_id="t1", gate=["pass"], spec_prompt="Fix it.")
    runs = [write_run(tmp_path / "runs", f"r{i}", task_id="t1", repetition=i) for i in range(3)]
    for run_dir in runs:
        grade(task_dir, run_dir, write_scripted(tmp_path / "pass.json", PASSING))
    _import(tmp_path / "runs", repository)
    assert ReportRow.objects.count() == 3 and ReportRow.objects.filter(latest=True).count() == 3
    first = report_json(viewer, repository)
    assert first["cells"][0]["mergeable_rate"]["value"] == 1.0

    # Graded again with another primary judge: a second grade of each run, which the report takes.
    failing = write_scripted(tmp_path / "fail.json", FAILING)
    for run_dir in runs:
        grade(task_dir, run_dir, failing)
    _import(tmp_path / "runs", repository)
    assert RunGrade.objects.count() == ReportRow.objects.count() == 6
    newest = {g.run_id: g.pk for g in RunGrade.objects.order_by("pk")}
    assert set(ReportRow.objects.filter(latest=True).values_list("grade_id", flat=True)) == set(
        newest.values()
    )
    second = report_json(viewer, repository)
    assert second["cells"][0]["runs"] == 3
    assert second["cells"][0]["mergeable_rate"]["value"] == 0.0
    assert [j["judge"] for j in second["judges"]] == [failing]
    # Two writers grading the same run at once may each mark their own grade newest: still one row per
    # run in the report, the newest grade's.
    ReportRow.objects.update(latest=True)
    cache.clear()
    assert report_json(viewer, repository) == second


def test_a_sweep_writes_the_rows_of_the_grades_it_stores(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_runs(repository, tmp_path / "runs", 4, lazy=(2,), failing_tests=(3,))
    script = tmp_path / "judge.json"
    script.write_text(
        json.dumps(
            {"default": judge_answers(), "by_diff_sha256": {sha256_of(LAZY_DIFF): judge_answers(("B1",))}}
        )
    )
    JudgeSetting.objects.filter(repository=repository).update(judge=f"scripted:{script}", second_judge="")
    sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    grades = set(RunGrade.objects.values_list("pk", flat=True))
    # Written by the sweep itself, before any report is read.
    assert len(grades) == 4
    assert set(ReportRow.objects.filter(latest=True).values_list("grade_id", flat=True)) == grades
    cell = report_json(maintainer, repository)["cells"][0]
    assert (cell["runs"], cell["measured"], cell["mergeable_rate"]["value"]) == (4, 4, 0.5)


def test_judge_costs_and_tree_judged_blockers_read_as_the_command_reads_them(
    tmp_path: Path, repository: Repository, viewer: User
) -> None:
    task_dir = write_task_dir(tmp_path / "checkout", "t1")
    Task.objects.create(repository=repository, task_id="t1", gate=["pass"], spec_prompt="Fix it.")
    runs = [write_run(tmp_path / "runs", f"r{i}", task_id="t1", repetition=i) for i in range(3)]
    for i, run_dir in enumerate(runs):
        grade(task_dir, run_dir, write_scripted(tmp_path / "pass.json", PASSING))
        metrics = json.loads((run_dir / "metrics.json").read_text())
        judge = metrics["details"]["judge"]
        judge["usage"] = {**judge.get("usage", {}), "cost_usd": 0.125 * (i + 1), "cost_known": i != 2}
        judge["tree_usage"] = {"cost_usd": 0.5}
        judge["verdicts"][0]["tree_judged"] = True
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
    _import(tmp_path / "runs", repository)
    expected = rubric_report_json(runs, "--tasks", str(tmp_path / "checkout" / "tasks"))
    got = report_json(viewer, repository)
    assert got == expected
    primary = got["judges"][0]
    assert (primary["cost_usd"], primary["tree_cost_usd"], primary["cost_known"]) == (0.75, 1.5, False)
    assert (primary["tree_judged"], primary["tree_judged_runs"]) == (3, 3)


def _rows() -> list[dict[str, Any]]:
    """Every report row's fields, its verdicts as their texts (ids differ between tables)."""
    texts = {pk: (p, s) for pk, p, s in ReportVerdicts.objects.values_list("pk", "primary", "second")}
    rows = ReportRow.objects.order_by("grade_id").values(*(f.attname for f in ReportRow._meta.fields[1:]))
    return [{**row, "verdicts_id": texts[row["verdicts_id"]]} for row in rows]


def _migrate(name: str) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("rubrics_app", name)])


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_rows_the_import_writes(tmp_path: Path, repository: Repository) -> None:
    build_runs(tmp_path, repository)
    label_runs(repository)
    written = _rows()
    assert len(written) == RunGrade.objects.count() == 24
    assert any(r["human_items"] != "null" for r in written)
    assert any(r["verdicts_id"][1] != "null" for r in written)
    assert not any('"cost_usd"' in text for r in written for text in r["verdicts_id"])
    # Back to before the verdicts left the rows, and the rows written again by each migration that did.
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("rubrics_app")[0][1]
    _migrate("0135_queue_pairs")
    try:
        old = MigrationExecutor(connection).loader.project_state(("rubrics_app", "0135_queue_pairs")).apps
        rows = old.get_model("rubrics_app", "ReportRow").objects
        # Undone, 0136 put the texts back into the rows, costs included, as 0135's code reads them.
        restored = dict(rows.values_list("grade_id", "primary"))
        assert len(restored) == 24 and all('"cost_usd"' in p for p in restored.values() if p != "null")
        rows.all().delete()
        migration = importlib.import_module("rubrics_app.migrations.0100_report_rows")
        state = MigrationExecutor(connection).loader.project_state(("rubrics_app", "0100_report_rows"))
        migration.fill_rows(state.apps, None)
        # 0125 writes them again with the columns added since (the integrity parts not measured).
        assert set(rows.values_list("integrity_not_measured", flat=True)) == {"[]"}
        later = importlib.import_module("rubrics_app.migrations.0125_report_row_integrity_not_measured")
        name = ("rubrics_app", "0125_report_row_integrity_not_measured")
        later.refill_rows(MigrationExecutor(connection).loader.project_state(name).apps, None)
        # 0135 marks the current grades' rows.
        assert not rows.filter(current=True).exists()
        pairs = importlib.import_module("rubrics_app.migrations.0135_queue_pairs")
        pairs.fill_pairs(old, None)
        assert dict(rows.values_list("grade_id", "primary")) == restored
    finally:
        # 0136 writes them again: the costs in their columns, the verdicts in ReportVerdicts.
        _migrate(latest)
    assert _rows() == written
    assert {r["integrity_not_measured"] for r in written} == {'["git_dir","test_cases","tests_skipped"]'}


def test_refreshing_rows_costs_the_same_queries_for_few_and_many_grades(repository: Repository) -> None:
    few = [Task.objects.create(repository=repository, task_id=f"f{i}", spec_prompt="x") for i in (1, 2)]
    many = [Task.objects.create(repository=repository, task_id=f"m{i}", spec_prompt="x") for i in range(20)]
    bulk_runs(few, ["a"], ["m"], 2)
    bulk_runs(many, ["a", "b"], ["m", "n"], 5)
    pks = list(RunGrade.objects.order_by("pk").values_list("pk", flat=True))
    counts = []
    for chosen in (pks[:4], pks[4:]):
        with CaptureQueriesContext(connection) as queries:
            assert refresh_report_rows(chosen) == len(chosen)
        counts.append(len(queries))
    assert len(pks[4:]) == 400 and counts[0] == counts[1]
    assert ReportRow.objects.count() == 404 and ReportRow.objects.filter(latest=True).count() == 404


def test_rows_with_the_same_verdicts_share_one_copy_of_them(repository: Repository) -> None:
    tasks = [Task.objects.create(repository=repository, task_id=f"t{i}", spec_prompt="x") for i in range(3)]
    bulk_runs(tasks, ["a", "b"], ["m"], 6)
    rows = ReportRow.objects.filter(repository=repository)
    # Repetitions differ only in B1 (every third fails) and the second judge's N1 (odd ones): 4 pairs.
    assert rows.count() == 36 and ReportVerdicts.objects.count() == 4
    texts = {(v.primary, v.second) for v in ReportVerdicts.objects.all()}
    assert len(texts) == 4 and all('"cost_usd"' not in p for p, _ in texts)
    # Written again, the rows find the copies they had.
    refresh_report_rows(RunGrade.objects.values_list("pk", flat=True))
    assert ReportVerdicts.objects.count() == 4 and rows.count() == 36


def test_the_report_s_sums_cost_the_same_queries_for_few_and_many_runs(repository: Repository) -> None:
    from rubrics_app.services.reports.sums import report_sums

    few = Repository.objects.create(name="few")
    bulk_runs([Task.objects.create(repository=few, task_id="t", spec_prompt="x")], ["a"], ["m"], 3)
    tasks = [Task.objects.create(repository=repository, task_id=f"t{i}", spec_prompt="x") for i in range(12)]
    bulk_runs(tasks, ["a", "b"], ["m", "n"], 5)
    counts = []
    for chosen in (few, repository):
        with CaptureQueriesContext(connection) as queries:
            sums, grade_of_run, _ = report_sums(chosen, {})
        counts.append(len(queries))
        assert sum(p.runs for p in sums.parts) == ReportRow.objects.filter(repository=chosen).count()
        assert grade_of_run and sums.disagreements  # the second judge disagrees on N1 of odd repetitions
    assert counts[0] == counts[1]
