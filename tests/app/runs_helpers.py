"""Agent run directories built on disk and graded by the real `rubric grade` code
(grading.checks.outcome.grade_run) with scripted judges, so imported metrics.json files are exactly what the
command line writes."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from django.core.management import call_command

from grading.checks.outcome import grade_run
from rubrics_app.models import Repository, RubricRevision, RunGrade
from rubrics_app.services.runs.store import revision_sha256
from tests.app.conftest import ALT_DIFF, rubric_data

# A run that solves the task the other way: raising on a fraction above 1.
RUN_DIFF = ALT_DIFF

PASSING = {
    "B1": {
        "verdict": "pass",
        "reason": "raises ValueError",
        "locations": [{"file": "src/fraction.py", "line": 2}],
    },
    "N1": {"verdict": "pass", "reason": "names it"},
    "N2": {"verdict": "fail", "reason": "no docs"},
    "N3": {"verdict": "pass", "reason": "boundary covered"},
}
# The second judge disagrees with the primary on B1 and N2.
DISAGREEING = {
    **PASSING,
    "B1": {
        "verdict": "fail",
        "reason": "the <script>alert(1)</script> check is missing on the GPU path",
        "locations": [{"file": "src/fraction.py", "line": 3}],
    },
    "N2": {"verdict": "pass", "reason": "docs are fine"},
}


def write_task_dir(
    root: Path, task_id: str = "fix_fraction_gt1", rubric: dict[str, Any] | None = None
) -> Path:
    task_dir = root / "tasks" / task_id
    task_dir.mkdir(parents=True, exist_ok=True)
    data = rubric or rubric_data(task=task_id, calibration={})
    (task_dir / "rubric.json").write_text(json.dumps(data, indent=2) + "\n")
    (task_dir / "task.json").write_text(json.dumps({"id": task_id, "prompt": "Fix it.", "gate": ["pass"]}))
    return task_dir


def write_scripted(path: Path, verdicts: dict[str, Any]) -> str:
    path.write_text(json.dumps({"default": verdicts}))
    return f"scripted:{path}"


def write_run(
    root: Path,
    name: str,
    *,
    task_id: str = "fix_fraction_gt1",
    arm: str = "guidance",
    model: str = "model-a",
    repetition: int = 0,
    diff: bytes = RUN_DIFF,
    passed: bool = True,
    tests_list: str | None = "tests/test_fraction.py::test_gt1\n",
    metrics: dict[str, Any] | None = None,
) -> Path:
    run_dir = root / name
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"task": task_id, "arm": arm, "model": model, "repetition": repetition}
    (run_dir / "run.json").write_text(json.dumps(record))
    (run_dir / "grade.json").write_text(json.dumps({"pass": passed, "tests_skipped": 0, **(metrics or {})}))
    (run_dir / "workspace.diff").write_bytes(diff)
    (run_dir / "ignored_created.txt").write_text("build/out.o\n")
    if tests_list is not None:
        (run_dir / "tests_list.txt").write_text(tests_list)
    return run_dir


def grade(
    task_dir: Path, run_dir: Path, primary: str, second: str | None = None, **metrics: Any
) -> dict[str, Any]:
    """`rubric grade` on the run (metrics.json written), with extra top-level keys merged in when given."""
    manifest = task_dir.parent.parent / "repo_manifest.yaml"
    if not manifest.exists():
        manifest.write_text("tests:\n  globs: ['tests/**']\n")
    result = grade_run(task_dir, run_dir, manifest, primary, second, cache=None)
    data = result.to_json_dict()
    if metrics:
        data.update(metrics)
        (run_dir / "metrics.json").write_text(json.dumps(data, indent=2))
    return data


def zip_dir(root: Path, prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(root).as_posix())
    return buffer.getvalue()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def import_graded(tmp_path: Path, repository: Repository, revision: RubricRevision, **extra: Any) -> None:
    """Two runs graded with a primary and a second judge that disagree on B1 and N2, then imported."""
    task_dir = write_task_dir(tmp_path / "checkout")
    primary = write_scripted(tmp_path / "primary.json", PASSING)
    second = write_scripted(tmp_path / "second.json", DISAGREEING)
    for repetition in (0, 1):
        run_dir = write_run(tmp_path / "runs", f"rep{repetition}", repetition=repetition)
        data = grade(task_dir, run_dir, primary, second, rubric_sha256=revision_sha256(revision))
        if extra.get("regrade") and repetition == 0:
            data["details"]["judge"]["cache_bypass"] = "regrade_sample"
            data["details"]["judge"]["previous_verdicts"] = {
                "B1": "fail",
                "N1": "pass",
                "N2": "fail",
                "N3": "pass",
            }
            (run_dir / "metrics.json").write_text(json.dumps(data))
    call_command("import_runs", str(tmp_path / "runs"), "--repository", repository.name, stdout=io.StringIO())


def put_label(grade_or_id: Any, item_id: str, verdict: str, queue: str = "judges", **extra: Any) -> Any:
    """A label stored directly (as a reviewer's would be) on the pair of this grade: for its run, the item's
    criterion wording the grade was against and the run's diff."""
    from rubrics_app.models import HumanVerdict, RunGrade
    from rubrics_app.services.runs.queue import pair_wording

    grade = grade_or_id if isinstance(grade_or_id, RunGrade) else RunGrade.objects.get(pk=grade_or_id)
    return HumanVerdict.objects.create(
        run=grade.run,
        item_id=item_id,
        criterion_sha256=pair_wording(grade, item_id),
        diff_sha256=grade.run.diff_sha256,
        verdict=verdict,
        queue=queue,
        **extra,
    )


def graded_pairs() -> list[tuple[RunGrade, str]]:
    """The four pairs ``import_graded`` leaves in the queue (its judges disagree on B1 and N2), in the order
    rep0 B1, rep0 N2, rep1 B1, rep1 N2."""
    first, second = RunGrade.objects.order_by("run__repetition")
    return [(first, "B1"), (first, "N2"), (second, "B1"), (second, "N2")]
