"""The Celery app, configured from Django settings (``CELERY_*``).

Embedded default: kombu's filesystem transport under VAR_DIR/broker, so a worker needs no server.
Production: ``CELERY_BROKER_URL=redis://...``. Run a worker with
``celery -A rubrics_app worker --pool=solo -c 1`` (or more processes and machines for sweeps).
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.contrib.django.task import DjangoTask

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rubrics_app.settings")

# DjangoTask gives every task delay_on_commit: jobs are sent only once the row they name is committed.
app: Celery[DjangoTask[Any, Any]] = Celery("rubrics_app", task_cls=DjangoTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
# The modules that define tasks: each service defines the task of its own kind of job, and the job protocol
# the reaper's. Every worker imports them when it starts (celery's ``imports``), and so does
# services.jobs.task_of in a process that needs a task it has not imported yet. Named as strings: this module
# imports none of them.
TASK_MODULES = [
    "rubrics_app.services.jobs",
    "rubrics_app.services.rubrics.revisions",
    "rubrics_app.services.rubrics.exports",
    "rubrics_app.services.rubrics.rereview",
    "rubrics_app.services.calibration.run",
    "rubrics_app.services.sweeps.run",
    "rubrics_app.services.drafting.run",
    "rubrics_app.services.reports.report",
]
app.conf.imports = TASK_MODULES
