"""Where the Celery tasks used to live. Each service now defines the task of its own kind of job, and
services/jobs.py holds the job protocol; the tasks keep their names (``rubrics_app.tasks.<name>``). This
module re-exports them until every caller imports them from their service."""

from rubrics_app.services.calibration import calibrate_revision as calibrate_revision
from rubrics_app.services.drafting import draft_rubric_job as draft_rubric_job
from rubrics_app.services.import_export import export_revision_to_checkout as export_revision_to_checkout
from rubrics_app.services.jobs import EXPECTED_FAILURES as EXPECTED_FAILURES
from rubrics_app.services.jobs import Reaped as Reaped
from rubrics_app.services.jobs import finish as _finish
from rubrics_app.services.jobs import lost_jobs as lost_jobs
from rubrics_app.services.jobs import reap as reap
from rubrics_app.services.jobs import reap_lost_jobs as reap_lost_jobs
from rubrics_app.services.rereview import check_evidence_everywhere as check_evidence_everywhere
from rubrics_app.services.rereview import check_repository_evidence as check_repository_evidence
from rubrics_app.services.revisions import validate_revision as validate_revision
from rubrics_app.services.sweeps import sweep_runs as sweep_runs

__all__ = [
    "EXPECTED_FAILURES",
    "Reaped",
    "_finish",
    "calibrate_revision",
    "check_evidence_everywhere",
    "check_repository_evidence",
    "draft_rubric_job",
    "export_revision_to_checkout",
    "lost_jobs",
    "reap",
    "reap_lost_jobs",
    "sweep_runs",
    "validate_revision",
]
