"""The pages of a repository each role may read: shared by the browser tests."""

from __future__ import annotations

from rubrics_app.models import CalibrationRun, Repository, RubricRevision, RunGrade


def repository_pages(repository: Repository, revision: RubricRevision) -> dict[str, str]:
    """Every page of the repository a role may read, by name."""
    grade = RunGrade.objects.order_by("run__repetition").first()
    assert grade is not None
    run = CalibrationRun.objects.get(revision=revision)
    base = f"/repos/{repository.pk}"
    return {
        "repository": f"{base}/",
        "task": f"{base}/tasks/{revision.task_id}/",
        "revision": f"{base}/revisions/{revision.pk}/",
        "calibration": f"{base}/calibrations/{run.pk}/",
        "judges": f"{base}/judges/",
        "task files": f"{base}/tasks/{revision.task_id}/files/",
        "queue": f"{base}/queue/",
        "queue entry": f"{base}/queue/{grade.pk}/B1/",
        "report": f"{base}/report/",
    }
