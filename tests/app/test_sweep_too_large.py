"""A run whose change is too large for the judge to review (§1, §4): a sweep grades it not mergeable with the
reason, stores no judge failure, and the report row counts it as a test pass that is not mergeable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from grading.judge.cache import MemoryCache
from grading.judge.prompt import DEFAULT_MAX_DIFF_CHARS
from rubrics_app.access import Actor
from rubrics_app.models import JudgeGrade, JudgeSetting, ReportRow, Repository, RubricRevision, RunGrade
from rubrics_app.services.runs.store import import_run_dirs
from rubrics_app.services.sweeps import run as sweeps
from tests.app.conftest import judge_answers
from tests.app.runs_helpers import RUN_DIFF, write_run

pytestmark = pytest.mark.django_db

LINES = 9000
BIG_DIFF = (
    RUN_DIFF
    + (
        "diff --git a/src/big.py b/src/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/src/big.py\n"
        f"@@ -0,0 +1,{LINES} @@\n" + "+x = 1  # padding the change past the judge's limit\n" * LINES
    ).encode()
)


def test_a_sweep_grades_a_change_too_large_to_review_not_mergeable_without_a_judge_failure(
    admitted_revision: RubricRevision, repository: Repository, maintainer: User, tmp_path: Path
) -> None:
    assert len(BIG_DIFF) > DEFAULT_MAX_DIFF_CHARS
    write_run(tmp_path / "runs", "big", diff=BIG_DIFF)
    import_run_dirs(repository, tmp_path / "runs", "", user=Actor.command_line())
    script = tmp_path / "judge.json"
    script.write_text(json.dumps({"default": judge_answers()}))
    JudgeSetting.objects.filter(repository=repository).update(judge=f"scripted:{script}")

    sweep = sweeps.sweep_now(repository, Actor.member(maintainer), cache=MemoryCache())
    sweep.refresh_from_db()
    assert (sweep.graded_runs, sweep.judge_failures, sweep.calls) == (1, 0, 0)
    grade = RunGrade.objects.get()
    assert (grade.mergeable, grade.merge_score, grade.judge_failure) == (False, 0.0, False)
    # The fixture's rubric allows 200 changed lines, so scope fails too; the judge is not called either way.
    assert grade.reasons == [
        "scope check failed",
        f"too large to review: {LINES + 2} changed lines / {len(BIG_DIFF)} characters of diff, the judge "
        f"reads at most {DEFAULT_MAX_DIFF_CHARS} characters (a binary file counts as one summary line)",
    ]
    judge = JudgeGrade.objects.get(grade=grade)
    assert (judge.failure, judge.calls) == ("", 0)
    row = ReportRow.objects.get(grade=grade)
    # The gate held: the report counts a test pass (a skipped judge used to read as a failed gate).
    assert (row.status, row.test_pass, row.mergeable) == ("not_mergeable", True, False)
