"""Runs imported from the SWE-bench harness, then graded by a sweep: the integrity parts the harness cannot
tell (the ignored files a run created, its test ids) are not measured, with a reason naming the harness,
never passed and never a grader failure, and the report counts those runs apart.

The task's manifest declares ``tests.list`` and the task stores its ``tests_base.txt``: for a run captured
by ``rubric capture`` a missing ``tests_list.txt`` is the operator's fault (a grader failure), but the harness
never lists test ids, so for its runs that part cannot be measured."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import (
    AgentRun,
    JobStatus,
    JudgeSetting,
    Repository,
    RevisionStatus,
    RubricRevision,
    RunGrade,
    Task,
)
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import SweepRequest
from tests.app.conftest import MakeRevision, judge_answers, rubric_data
from tests.app.runs_helpers import write_run, write_scripted
from tests.app.sweep_helpers import numbered_diff

pytestmark = pytest.mark.django_db

INSTANCE = "example__project-12"
MODEL = "20240620_sweagent_claude3.5sonnet"
SILENT = "20240509_autocoderover"  # an empty patch: the harness does not evaluate it
PROSE = "20240612_chatty_baseline"  # a patch that is no diff: the harness cannot apply it
PROSE_PATCH = "I looked at src/fraction.py and I think fit() should check the fraction.\n\x00"
BASE_TESTS = "tests/test_fraction.py::test_gt1\ntests/test_fraction.py::test_lt0\n"
HARNESS_PARTS = ["git_dir", "ignored_files", "test_cases", "tests_skipped"]


@pytest.fixture
def revision(repository: Repository, make_revision: MakeRevision, tmp_path: Path) -> RubricRevision:
    """An approved revision of a task named as a SWE-bench instance, which stores its tests_base.txt
    (the repository's manifest declares tests.list), under a judge that passes every item."""
    assert repository.tests_config["list"]
    task = Task.objects.create(
        repository=repository,
        task_id=INSTANCE,
        spec_prompt="Make fit() reject fraction > 1.",
        base_commit="0123456789abcdef0123456789abcdef01234567",
        gate=["pass"],
        tests_base=BASE_TESTS.encode(),
        oracle_grade=json.dumps({"pass": True, "tests_skipped": 0}).encode(),
    )
    JudgeSetting.objects.filter(repository=repository).update(
        judge=write_scripted(tmp_path / "passing.json", judge_answers()), second_judge=""
    )
    return make_revision(RevisionStatus.APPROVED, data=rubric_data(task=INSTANCE), task=task)


def harness_report(resolved: bool, applied: bool = True) -> dict[str, Any]:
    """One instance's report.json as the harness writes it (swebench.harness.grading.get_eval_report)."""
    f2p = "tests/test_fraction.py::test_gt1"
    return {
        INSTANCE: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": applied,
            "resolved": resolved,
            "tests_status": {
                "FAIL_TO_PASS": {"success": [f2p] if resolved else [], "failure": [] if resolved else [f2p]},
                "PASS_TO_PASS": {"success": ["tests/test_fraction.py::test_lt0"], "failure": []},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []},
            },
        }
    }


def harness_run(
    root: Path,
    run_id: str,
    model: str,
    patch: str | None,
    resolved: bool | None,
    report: dict[str, Any] | None = None,
) -> None:
    """One evaluation by the harness: its predictions.jsonl (the harness takes one prediction per instance)
    and logs/run_evaluation/RUN_ID/MODEL/INSTANCE/report.json (none for an empty patch), imported."""
    folder = root / run_id
    predictions = folder / "predictions.jsonl"
    folder.mkdir(parents=True)
    line = {"instance_id": INSTANCE, "model_name_or_path": model, "model_patch": patch}
    predictions.write_text(json.dumps(line) + "\n")
    reports = folder / "logs" / "run_evaluation" / run_id
    reports.mkdir(parents=True)
    if resolved is not None:
        (reports / model / INSTANCE).mkdir(parents=True)
        report = report or harness_report(resolved, applied=patch != PROSE_PATCH)
        (reports / model / INSTANCE / "report.json").write_text(json.dumps(report, indent=4))
    call_command(
        "import_runs", "--format", "swe-bench", "--predictions", str(predictions), "--reports", str(reports),
        "--repository", "example-project", "--arm", "swe-agent", "--repetition", run_id[-1],
        stdout=io.StringIO(),
    )  # fmt: skip


def import_harness_runs(root: Path) -> None:
    """Two evaluations of one model (resolved, then not), one of a model whose patch was empty and one of a
    model whose patch is prose."""
    harness_run(root, "nightly-0", MODEL, numbered_diff(0).decode(), resolved=True)
    harness_run(root, "nightly-1", MODEL, numbered_diff(1).decode(), resolved=False)
    harness_run(root, "empty-0", SILENT, None, resolved=None)
    harness_run(root, "chatty-0", PROSE, PROSE_PATCH, resolved=False)


def sweep(repository: Repository, maintainer: User, revision: RubricRevision) -> dict[str, RunGrade]:
    """Each run's grade, by model and repetition ("model#0")."""
    done = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(revision=revision), cache=MemoryCache()
    )
    assert done.job.status == JobStatus.DONE, done.job.error
    assert done.job.result is not None and not done.job.result["problems"]
    return {f"{g.run.model}#{g.run.repetition}": g for g in RunGrade.objects.select_related("run")}


def test_a_sweep_leaves_what_the_harness_cannot_tell_not_measured(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_harness_runs(tmp_path)
    assert {r.run_json.get("source") for r in AgentRun.objects.all()} == {"swe-bench"}

    grades = sweep(repository, maintainer, revision)
    resolved, failing, silent, prose = f"{MODEL}#0", f"{MODEL}#1", f"{SILENT}#0", f"{PROSE}#0"
    assert set(grades) == {resolved, failing, silent, prose}
    # The agent's prose is stored as it came, and graded: not mergeable, never a run left ungraded.
    assert bytes(grades[prose].run.diff.content) == PROSE_PATCH.encode()
    assert (grades[prose].status, grades[prose].reasons, grades[prose].grader_failure) == (
        "not_mergeable",
        ["pass is false"],
        False,
    )
    unreadable = grades.pop(prose).metrics["details"]["integrity"]
    assert unreadable["measured"] == [] and set(unreadable["not_measured"]) == {
        "deleted_files",
        *HARNESS_PARTS,
    }
    assert unreadable["not_measured"]["deleted_files"].startswith("the patch is not a diff (line 2: NUL byte")
    for model, grade in grades.items():
        assert not grade.grader_failure, (model, grade.reasons)
        integrity = grade.metrics["details"]["integrity"]
        assert integrity["violations"] == [] and integrity["ok"] is True, model
        # Only the diff's deleted files are measured: the rest is not, and says the harness is why.
        assert integrity["measured"] == ["deleted_files"], model
        assert grade.metrics["details"]["integrity_not_measured"] == HARNESS_PARTS, model
        reasons = integrity["not_measured"]
        for part in ("git_dir", "ignored_files", "test_cases"):
            assert "SWE-bench harness" in reasons[part], (model, part, reasons[part])
    # Resolved, and the judge passes every item: mergeable. The others fail the test gate.
    assert (grades[resolved].status, grades[resolved].mergeable) == ("mergeable", True)
    assert (grades[failing].status, grades[failing].mergeable) == ("not_mergeable", False)
    assert (grades[silent].status, grades[silent].mergeable) == ("not_mergeable", False)


def test_a_captured_run_without_its_test_list_is_still_a_grader_failure(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    """The harness's marker changes nothing for runs of the framework: under tests.list, a captured run with
    no tests_list.txt was captured wrongly, which is the operator's fault."""
    write_run(tmp_path / "runs", "captured", task_id=INSTANCE, diff=numbered_diff(3), tests_list=None)
    call_command(
        "import_runs", str(tmp_path / "runs"), "--repository", "example-project", stdout=io.StringIO()
    )
    (grade,) = sweep(repository, maintainer, revision).values()
    assert grade.grader_failure and grade.status == "grader_failure"
    assert "the manifest declares tests.list but the run has no tests_list.txt" in grade.reasons[0]


def test_the_report_counts_harness_runs_apart(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_harness_runs(tmp_path)
    sweep(repository, maintainer, revision)
    cache.clear()
    client = Client()
    client.force_login(maintainer)

    report = client.get(reverse("rubrics:report_json", args=[repository.pk])).json()
    by_model = {c["model"]: c for c in report["cells"]}
    assert set(by_model) == {MODEL, SILENT, PROSE}
    assert by_model[PROSE]["integrity_not_measured"] == dict.fromkeys(["deleted_files", *HARNESS_PARTS], 1)
    for model, runs in ((MODEL, 2), (SILENT, 1)):
        cell = by_model[model]
        assert (cell["runs"], cell["measured"], cell["grader_failures"]) == (runs, runs, 0)
        assert cell["integrity_not_measured_runs"] == runs
        assert cell["integrity_not_measured"] == dict.fromkeys(HARNESS_PARTS, runs)

    text = client.get(reverse("rubrics:report_csv", args=[repository.pk])).text
    assert text.startswith("# provenance {")  # the download's first line: how it was made
    rows = list(csv.DictReader(io.StringIO(text.split("\n", 1)[1])))
    cells = [r for r in rows if r["table"] == "cells"]
    assert {r["model"]: r["integrity_not_measured"] for r in cells} == {MODEL: "2", SILENT: "1", PROSE: "1"}

    page = client.get(reverse("rubrics:report", args=[repository.pk])).content.decode()
    table = page.split('id="report-cells"')[1].split("</table>")[0]
    assert "Integrity not measured</th>" in table
    for n in (1, 2):
        parts = ", ".join(f"{part} {n}" for part in HARNESS_PARTS)
        assert f'<td>{n} <span class="muted">({parts})</span></td>' in table


def test_the_run_page_says_the_run_came_from_the_harness_and_what_was_not_measured(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    import_harness_runs(tmp_path)
    sweep(repository, maintainer, revision)
    client = Client()
    client.force_login(maintainer)
    run = AgentRun.objects.get(model=MODEL, repetition=0)
    page = client.get(reverse("rubrics:run_detail", args=[repository.pk, run.pk])).content.decode()
    assert '<span class="badge">SWE-bench harness</span>' in page
    current = page.split('id="current-grade"')[1].split("</section>")[0]
    assert "Test integrity not measured (never counted as passed)" in current
    assert '<code>test_cases</code>: <span class="muted">the SWE-bench harness lists no test ids' in current
    assert (
        '<code>ignored_files</code>: <span class="muted">the SWE-bench harness records no ignored' in current
    )


def test_an_infrastructure_failure_is_not_measured_and_not_counted(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    """The harness's container ran out of memory (report.json's infra_failure, written by
    swebench.harness.infra_failure): its resolved false says nothing of the patch, so the sweep grades the
    run not measured, with the harness's reason, and the report leaves it out of the rates."""
    oom = {
        INSTANCE: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": False,
            "resolved": False,
            "infra_failure": True,
            "infra_failure_reason": "out_of_memory",
        }
    }
    harness_run(tmp_path, "nightly-0", MODEL, numbered_diff(0).decode(), resolved=True)
    harness_run(tmp_path, "nightly-1", MODEL, numbered_diff(1).decode(), resolved=False, report=oom)
    grades = sweep(repository, maintainer, revision)
    failed = grades[f"{MODEL}#1"]
    assert (failed.status, failed.mergeable, failed.merge_score, failed.grader_failure) == (
        "not_measured",
        None,
        None,
        False,
    )
    assert failed.reasons == [
        "not measured: the SWE-bench harness's infrastructure failed: out_of_memory "
        "(infra_failure in its report)"
    ]
    assert grades[f"{MODEL}#0"].status == "mergeable"

    cache.clear()
    client = Client()
    client.force_login(maintainer)
    report = client.get(reverse("rubrics:report_json", args=[repository.pk])).json()
    (cell,) = report["cells"]
    assert (cell["runs"], cell["measured"]) == (2, 1)
