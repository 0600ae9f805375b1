"""A sweep measures every test-integrity part `rubric grade` measures: the task's oracle_grade.json
(tests_skipped) and tests_base.txt (test_cases) and the run's git_dir_changes.txt (git_dir), so a run that
changed .git, removed test cases or skipped more tests than the oracle is not mergeable in the app too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from grading.judge.cache import MemoryCache
from rubrics_app.access import Actor
from rubrics_app.models import JobStatus, JudgeSetting, Repository, RubricRevision, RunGrade, Task
from rubrics_app.services.runs.store import import_run_dirs
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.run import SweepRequest
from tests.app.conftest import judge_answers
from tests.app.runs_helpers import write_run, write_scripted
from tests.app.sweep_helpers import numbered_diff

pytestmark = pytest.mark.django_db

BASE_TESTS = "tests/test_fraction.py::test_gt1\ntests/test_fraction.py::test_lt0\n"
ORACLE_SKIPPED = 1


@pytest.fixture
def revision(
    approved_revision: RubricRevision, task: Task, repository: Repository, tmp_path: Path
) -> RubricRevision:
    """The approved revision of a task that stores its oracle_grade.json and tests_base.txt (editable while
    no revision is admitted), under a judge that passes every item."""
    task.oracle_grade = json.dumps({"pass": True, "tests_skipped": ORACLE_SKIPPED}).encode()
    task.tests_base = BASE_TESTS.encode()
    task.save(update_fields=["oracle_grade", "tests_base"])
    JudgeSetting.objects.filter(repository=repository).update(
        judge=write_scripted(tmp_path / "passing.json", judge_answers()), second_judge=""
    )
    return approved_revision


def captured_run(
    root: Path,
    repetition: int,
    *,
    git_dir: str | None = "",
    tests_list: str = BASE_TESTS,
    skipped: int = ORACLE_SKIPPED,
) -> None:
    """A run as `rubric capture` writes it from a v4 snapshot (git_dir_changes.txt, tests_list.txt);
    ``git_dir`` None: captured without the private record."""
    run_dir = write_run(
        root,
        f"rep{repetition}",
        repetition=repetition,
        diff=numbered_diff(repetition),
        tests_list=tests_list,
        metrics={"tests_skipped": skipped},
    )
    if git_dir is not None:
        (run_dir / "git_dir_changes.txt").write_text(git_dir)


def sweep(repository: Repository, maintainer: User, revision: RubricRevision) -> dict[int, RunGrade]:
    done = sweeps.sweep_now(
        repository, Actor.member(maintainer), SweepRequest(revision=revision), cache=MemoryCache()
    )
    assert done.job.status == JobStatus.DONE, done.job.error
    assert done.job.result is not None and not done.job.result["problems"]
    return {g.run.repetition: g for g in RunGrade.objects.select_related("run")}


def violations(grade: RunGrade) -> list[tuple[str, str | None]]:
    found = grade.metrics["details"]["integrity"]["violations"]
    return [(v["rule"], v.get("path")) for v in found]


def test_a_sweep_measures_the_git_dir_the_base_test_list_and_the_oracle_s_skipped_tests(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    captured_run(runs, 0)
    captured_run(runs, 1, git_dir=".git/hooks/pre-commit\n")
    captured_run(runs, 2, tests_list="tests/test_fraction.py::test_gt1\n")
    captured_run(runs, 3, skipped=ORACLE_SKIPPED + 2)
    import_run_dirs(repository, runs, "", user=Actor.command_line())

    grades = sweep(repository, maintainer, revision)
    # Fully captured and clean: mergeable, every part measured.
    assert grades[0].status == "mergeable" and grades[0].mergeable is True
    assert grades[0].metrics["details"]["integrity_not_measured"] == []
    assert violations(grades[0]) == []
    # The judge passes every item of runs 1 to 3: integrity alone makes them not mergeable.
    assert violations(grades[1]) == [("git_dir_modified", ".git/hooks/pre-commit")]
    assert violations(grades[2]) == [("test_case_removed", "tests/test_fraction.py::test_lt0")]
    assert violations(grades[3]) == [("more_tests_skipped", None)]
    assert grades[3].metrics["details"]["integrity"]["violations"][0]["detail"] == (
        f"{ORACLE_SKIPPED + 2} tests skipped, oracle run {ORACLE_SKIPPED}"
    )
    for n in (1, 2, 3):
        assert (grades[n].status, grades[n].mergeable) == ("not_mergeable", False)
        assert "test-integrity check failed" in grades[n].reasons
        assert grades[n].metrics["details"]["integrity_not_measured"] == []


def test_the_report_page_counts_only_the_runs_captured_without_a_record(
    revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    for n in range(3):
        captured_run(runs, n)
    captured_run(runs, 3, git_dir=None)  # an older capture: no private record of .git
    import_run_dirs(repository, runs, "", user=Actor.command_line())
    grades = sweep(repository, maintainer, revision)
    assert [grades[n].status for n in range(4)] == ["mergeable"] * 4
    assert grades[3].metrics["details"]["integrity_not_measured"] == ["git_dir"]

    cache.clear()
    client = Client()
    client.force_login(maintainer)
    page = client.get(reverse("rubrics:report", args=[repository.pk]))
    assert page.status_code == 200
    cells = page.content.decode().split('id="report-cells"')[1].split("</table>")[0]
    assert '<td>1 <span class="muted">(git_dir 1)</span></td>\n</tr>' in cells
    report = client.get(reverse("rubrics:report_json", args=[repository.pk])).json()
    (cell,) = report["cells"]
    assert (cell["runs"], cell["measured"], cell["integrity_not_measured_runs"]) == (4, 4, 1)
    assert cell["integrity_not_measured"] == {"git_dir": 1}

    # Once the one run is captured again with its record, no integrity part is left not measured.
    RunGrade.objects.filter(run__repetition=3).delete()
    grades[3].run.git_dir_changes = ""
    grades[3].run.save(update_fields=["git_dir_changes"])
    sweep(repository, maintainer, revision)
    cache.clear()
    page = client.get(reverse("rubrics:report", args=[repository.pk]))
    cells = page.content.decode().split('id="report-cells"')[1].split("</table>")[0]
    # The row's last cell is the integrity count.
    assert "Integrity not measured</th>" in cells and "<td>0</td>\n</tr>" in cells and "git_dir" not in cells
    (cell,) = client.get(reverse("rubrics:report_json", args=[repository.pk])).json()["cells"]
    assert (cell["runs"], cell["integrity_not_measured_runs"], cell["integrity_not_measured"]) == (4, 0, {})
