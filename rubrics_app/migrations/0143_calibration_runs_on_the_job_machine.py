"""A calibration run's lifecycle is its Job's (services/jobs.py): the run's own heartbeat goes, and a run
left unfinished by a job that already ended (the stale-run check that used to fail it on a page is gone) is
ended here as an error, with the job's reason."""

from typing import Any

from django.db import migrations
from django.utils import timezone

UNFINISHED = ["queued", "running"]
KEPT = "the rows stored before are kept: calibrate again, and the rows already judged come from the cache"


def end_orphaned_runs(apps: Any, schema_editor: Any) -> None:
    calibration_run = apps.get_model("rubrics_app", "CalibrationRun")
    now = timezone.now()
    for run in calibration_run.objects.filter(status__in=UNFINISHED).select_related("job"):
        job = run.job
        if job is not None and job.status in ("queued", "running"):
            continue
        error = "the job is gone" if job is None else (job.error or f"the job ended {job.status}")
        calibration_run.objects.filter(pk=run.pk, status__in=UNFINISHED).update(
            status="error", reason=f"the calibration job failed ({error}); {KEPT}", finished_at=now
        )


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics_app", "0142_calibration_passes_with_its_rows"),
    ]

    operations = [
        migrations.RunPython(end_orphaned_runs, migrations.RunPython.noop),
        migrations.RemoveField(model_name="calibrationrun", name="heartbeat_at"),
    ]
