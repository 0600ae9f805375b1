"""manage.py import_rubrics PATH_TO_REPO_CHECKOUT [--repository NAME] [--approved-by USER]

Every tasks/*/rubric.json of the checkout (with task.json, oracle.diff, oracle_grade.json and tests_base.txt
when present) becomes a draft revision; with --approved-by, an approved one: the rubrics were reviewed in the
repository itself (merged through its own PR review), and the audit trail records them as imported approved
by that maintainer. All or nothing: any invalid file is listed with its errors and nothing is imported
(exit code 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.template.defaultfilters import pluralize

from rubrics_app.access import Actor, access_of
from rubrics_app.management.options import REPOSITORY_HELP, import_refused
from rubrics_app.models import Role
from rubrics_app.services.rubrics.files import ImportFailed
from rubrics_app.services.rubrics.imports import import_checkout, repository_for_checkout


class Command(BaseCommand):
    help = "Import every tasks/*/rubric.json of a repository checkout as draft revisions (all or nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("checkout", type=Path, help="the repository checkout (holds tasks/<task-id>/)")
        parser.add_argument(
            "--repository", metavar="NAME", help=f"{REPOSITORY_HELP} (default: the checkout folder's name)"
        )
        parser.add_argument(
            "--approved-by",
            metavar="USER",
            help="a maintainer of the repository: the rubrics were reviewed there and come in approved",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["checkout"]
        if not root.is_dir():
            raise CommandError(f"{root}: not a directory", returncode=2)
        approver = None
        if options["approved_by"]:
            approver = User.objects.filter(username=options["approved_by"]).first()
            if approver is None:
                raise CommandError(f"--approved-by: no user named {options['approved_by']!r}", returncode=2)
        try:
            with transaction.atomic():
                repository = repository_for_checkout(root, options["repository"])
                approving = None
                if approver is not None:
                    approving = access_of(approver, repository)
                    try:
                        approving.require(Role.MAINTAINER, repository)
                    except PermissionDenied:
                        raise CommandError(
                            f"--approved-by: {approver.username} is not a maintainer of {repository.name}",
                            returncode=2,
                        ) from None
                revisions = import_checkout(repository, root, Actor.command_line(), approved_by=approving)
        except ImportFailed as exc:
            raise import_refused(self.stderr, exc) from None
        for revision in revisions:
            source = f"tasks/{revision.task.task_id}/rubric.json"
            self.stdout.write(f"{source} -> {repository.name} revision {revision.number} ({revision.status})")
        self.stdout.write(
            self.style.SUCCESS(
                f"imported {len(revisions)} rubric{pluralize(len(revisions))} into {repository.name}"
            )
        )
