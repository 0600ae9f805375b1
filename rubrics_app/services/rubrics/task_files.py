"""A task's own files (oracle.diff, oracle_grade.json, tests_base.txt): set by maintainers, audited."""

from __future__ import annotations

import hashlib

from django.db import transaction

from rubrics_app.access import Actor
from rubrics_app.models import TASK_FILES, AuditVerb, RevisionStatus, Role, Task, TransitionError
from rubrics_app.services import audit
from rubrics_app.services.rubrics.imports import task_file_problems


@transaction.atomic
def set_task_files(task: Task, files: dict[str, bytes], *, by: Actor) -> Task:
    """Replace the given task files. Refused while the task has an admitted revision, which was calibrated
    with these files (the rule is rubrics_app.freeze's, and the database's triggers keep it too); an
    approved revision not yet admitted leaves them editable, so a wrong oracle can be fixed before it is.
    Raises ValueError naming the file for content the import would refuse too."""
    task = Task.objects.select_for_update().select_related("repository").get(pk=task.pk)
    by.require(Role.MAINTAINER, task.repository)
    unknown = sorted(set(files) - set(TASK_FILES))
    if unknown:
        raise ValueError(f"not a task file: {', '.join(unknown)}")
    if task.revisions.filter(status=RevisionStatus.ADMITTED).exists():
        raise TransitionError(
            f"task {task.task_id} has an admitted revision, which was calibrated with these files: "
            "they are frozen with it"
        )
    problems = task_file_problems(files)
    if problems:
        raise ValueError("; ".join(str(p) for p in problems))
    before = {name: hashlib.sha256(task.task_file(name)).hexdigest() for name in files}
    for name, data in files.items():
        setattr(task, TASK_FILES[name], data)
    task.save(update_fields=[TASK_FILES[name] for name in files])
    audit.record(
        AuditVerb.TASK_FILES_EDITED,
        actor=by.user,
        repository=task.repository,
        detail={
            "task": task.task_id,
            "sha256_before": before,
            "sha256_after": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
        },
    )
    return task
