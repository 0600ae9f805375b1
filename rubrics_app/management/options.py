"""What the management commands share: the repository and task their ``--repository`` and ``--task`` name,
or exit 2 saying which option names nothing; those options' help, worded the same in every command; and
how an import that failed is reported."""

from __future__ import annotations

from django.core.management.base import CommandError, OutputWrapper
from django.template.defaultfilters import pluralize

from rubrics_app.models import Repository, Task
from rubrics_app.services.rubrics.files import ImportFailed

REPOSITORY_HELP = "the repository's name in the app, as its page shows it"
TASK_HELP = "the task's id: its folder under tasks/ in the checkout, e.g. fix_fraction_gt1"


def repository_named(name: str) -> Repository:
    repository = Repository.objects.filter(name=name).first()
    if repository is None:
        raise CommandError(f"--repository: no repository named {name!r}", returncode=2)
    return repository


def task_of(repository: Repository, task_id: str) -> Task:
    task = repository.tasks.filter(task_id=task_id).first()
    if task is None:
        raise CommandError(f"--task: {repository.name} has no task {task_id!r}", returncode=2)
    return task


def import_refused(stderr: OutputWrapper, failed: ImportFailed) -> CommandError:
    """Every problem of the refused import written to ``stderr``, one a line; the exit 2 that counts them."""
    for problem in failed.problems:
        stderr.write(str(problem))
    count = len(failed.problems)
    return CommandError(f"nothing imported: {count} problem{pluralize(count)}", returncode=2)
