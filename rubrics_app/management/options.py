"""What the management commands share: the repository and task their ``--repository`` and ``--task`` name,
or exit 2 saying which option names nothing; and those options' help, worded the same in every command."""

from __future__ import annotations

from django.core.management.base import CommandError

from rubrics_app.models import Repository, Task

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
