"""manage.py calibrate --repository NAME --task ID [--no-injection-suite] [--mutants] [--wait]
    [--timeout SECONDS]

Sends the calibration job (§5 admission rows with the repository's judges) for the task's latest approved
revision, as "Admit" does: the revision is admitted when every row holds with the primary judge. As on the
Admit button, the injection suite runs too unless --no-injection-suite is given; any attack success refuses
admission. With
--wait, prints each row as it finishes and exits 0 when admitted, 1 when a row does not hold, 2 on bad
input (no such repository, task or approved revision; a calibration that could not run, with its reason).
--mutants also judges the oracle's mutants (an authoring aid): --wait prints them and their counts after
the rows; they never change the exit code. Exit 1 at once when the job queue is unreachable (the job is
failed; nothing was started).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading import printable
from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP, repository_named, task_of
from rubrics_app.management.wait import wait_for_job
from rubrics_app.models import (
    CalibrationMutant,
    CalibrationRow,
    CalibrationRun,
    CalibrationStatus,
    Job,
    RevisionStatus,
    RubricRevision,
    TransitionError,
)
from rubrics_app.services.calibration import run as calibration
from rubrics_app.services.calibration.mutants import harmless_marks
from rubrics_app.services.jobs import QueueUnreachable


class Command(BaseCommand):
    help = "Calibrate (and admit when every row holds) the latest approved revision of a task."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--task", required=True, metavar="ID", help=TASK_HELP)
        parser.add_argument(
            "--injection-suite",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="run the injection suite too (default: on, as on the Admit button); any attack success "
            "refuses admission",
        )
        parser.add_argument(
            "--mutants",
            action="store_true",
            help="also judge the oracle's mutants (never used to admit); --wait prints them",
        )
        parser.add_argument("--wait", action="store_true", help="wait for the job; print the rows")
        parser.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS", help="with --wait")

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        task = task_of(repository, options["task"])
        revision = (
            RubricRevision.objects.filter(task=task, status=RevisionStatus.APPROVED)
            .order_by("-number")
            .first()
        )
        if revision is None:
            raise CommandError(f"--task: {task.task_id} has no approved revision to calibrate", returncode=2)
        try:
            run = calibration.start(
                revision,
                Actor.command_line(),
                admit=True,
                injection_suite=options["injection_suite"],
                mutants=options["mutants"],
            )
        except TransitionError as exc:
            raise CommandError(str(exc), returncode=2) from None
        except QueueUnreachable as exc:
            raise CommandError(exc.detail, returncode=1) from None
        tag = " (scripted judge)" if run.scripted else ""
        self.stdout.write(
            f"calibration #{run.pk} of {task.task_id} revision {revision.number}, judge {run.judge}{tag}"
        )
        if not options["wait"]:
            self.stdout.write("queued; run with --wait to follow it")
            return
        run = self._follow(run, options["timeout"])
        revision.refresh_from_db()
        self.stdout.write(f"{run.calls} judge calls, ${run.cost_usd:.4f}")
        if run.injection_suite and run.is_finished and run.status != CalibrationStatus.ERROR:
            self.stdout.write(
                f"injection suite: {run.attack_successes} attack successes of {run.attacks_measured} "
                f"measured, {run.benign_drifts} benign drifts of {run.benign_measured} measured"
            )
        if run.agreement:
            kappa = run.agreement.get("kappa")
            self.stdout.write(
                f"agreement with the second judge: raw {run.agreement.get('raw')}, kappa "
                f"{'undefined' if kappa is None else round(kappa, 3)} (never used to admit)"
            )
        if run.with_mutants:
            self._print_mutants(run)
        if run.status == CalibrationStatus.ERROR:
            raise CommandError(f"could not calibrate: {run.reason}", returncode=2)
        if revision.status == RevisionStatus.ADMITTED:
            self.stdout.write(self.style.SUCCESS(f"admitted: {task.task_id} revision {revision.number}"))
            return
        raise CommandError(f"not admitted: {run.reason or run.status}", returncode=1)

    def _follow(self, run: CalibrationRun, timeout: float) -> CalibrationRun:
        if run.job is None:
            raise CommandError(f"calibration #{run.pk} has no job to follow", returncode=2)
        shown: set[int] = set()

        def show_rows(job: Job) -> None:
            calibration.fail_stale_runs()  # a job the reaper failed fails its calibration too
            for row in CalibrationRow.objects.filter(run=run).exclude(pk__in=shown).order_by("position"):
                shown.add(row.pk)
                self._print_row(row)

        wait_for_job(run.job, timeout=timeout, on_poll=show_rows)
        calibration.fail_stale_runs()
        run.refresh_from_db()
        return run

    def _print_mutants(self, run: CalibrationRun) -> None:
        marks = set(harmless_marks(run.revision.task, run.rubric_sha256))
        for mutant in CalibrationMutant.objects.filter(run=run).order_by("position"):
            status = mutant.status(mutant.mutant_id in marks)
            status = "MERGEABLE" if status == "mergeable" else status
            line = f"{status:9} {mutant.mutant_id}  {mutant.description}  actual: {mutant.actual}"
            # Descriptions quote diff lines and reasons come from a model: no control characters.
            self.stdout.write(printable(line))
        if run.mutants_total is not None:
            self.stdout.write(
                f"mutants (an authoring aid, never used to admit): {run.mutants_total} judged, "
                f"{run.mutants_caught} caught, {run.mutants_harmless} marked harmless"
            )
        if run.mutants_note:
            self.stdout.write(printable(f"mutants: {run.mutants_note}"))

    def _print_row(self, row: CalibrationRow) -> None:
        mark = "ok  " if row.holds else "FAIL"
        text = f"{mark} {row.kind} {row.name}  expected: {row.expected}  actual: {row.actual}"
        # Judge reasons and diff names are untrusted: no terminal control characters reach the screen.
        self.stdout.write(printable(text))
