"""manage.py sweep --repository NAME [--task ID] [--arm A] [--model M] [--revision PK] [--batch] [--wait]
    [--export FILE]

Sends the sweep job: every run of the repository (or of a task, an arm, a model) graded with the
repository's judges against each task's admitted revision, or against the approved revision PK (every result
provisional). --batch (or the repository's choice on the Judges page) sends the judge calls through the
providers' batch APIs, at half price and slower; --interactive one by one. Runs already graded against that
content with that judge are skipped. With --wait, prints the progress until the job ends and exits 0 when
every run is graded, 1 when the sweep stopped or failed (the reason is printed; the grades stored before are
kept) or when a run is left without a grade, batch or not: a judge failure (every call failed, say) or a run
that could not be read (the next sweep grades them again), 2 on bad input. Exit 1 at once when the job
queue is unreachable (the job is failed; nothing was started).

--export FILE asks the job for its export (services/sweeps/export.py: the report's runs in the sweep's scope
as run folders with their metrics.json, in a zip, which `rubric report` reads) and waits for it: when the job
is done, the zip is written to FILE atomically (replacing FILE), and the job page links it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from grading import InputError, printable, write_atomic
from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP, repository_named, task_of
from rubrics_app.management.wait import wait_for_job
from rubrics_app.models import Job, JobStatus, RubricRevision, Sweep, SweepResult
from rubrics_app.services.jobs import QueueUnreachable
from rubrics_app.services.sweeps import run as sweeps
from rubrics_app.services.sweeps.export import export_of
from rubrics_app.services.sweeps.run import SweepError, SweepRequest


def _rate(value: str) -> float:
    try:
        rate = float(value)
    except ValueError:
        raise CommandError(f"{value!r}: not a number", returncode=2) from None
    if not 0.0 <= rate <= 1.0:
        raise CommandError(f"{value!r}: must be between 0 and 1", returncode=2)
    return rate


class Command(BaseCommand):
    help = "Grade every run of a repository (or a task, arm or model) with its judges, in the sweep job."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--task", metavar="ID", help=f"only this task's runs; {TASK_HELP}")
        parser.add_argument("--arm", default="", metavar="A", help="only this arm's runs")
        parser.add_argument("--model", default="", metavar="M", help="only this model's runs")
        parser.add_argument(
            "--revision",
            type=int,
            metavar="PK",
            help="grade against this approved revision (every result provisional), not the admitted one",
        )
        parser.add_argument(
            "--second-sample",
            metavar="RATE",
            help="share of runs the second judge grades (default: SWEEP_SECOND_JUDGE_SAMPLE)",
        )
        parser.add_argument(
            "--regrade-sample",
            metavar="RATE",
            help="share of cached verdicts judged again (default: SWEEP_REGRADE_SAMPLE)",
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--batch",
            action="store_const",
            const=True,
            dest="batch",
            help="judge through the providers' batch APIs: half price, slower (default: the repository's)",
        )
        mode.add_argument(
            "--interactive", action="store_const", const=False, dest="batch", help="judge call by call"
        )
        parser.add_argument(
            "--export",
            metavar="FILE",
            help="when the sweep is done, write its runs as a zip to FILE (implies --wait)",
        )
        parser.add_argument("--wait", action="store_true", help="wait for the job; print its progress")
        parser.add_argument(
            "--timeout", type=float, default=24 * 3600.0, metavar="SECONDS", help="with --wait"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        export = Path(options["export"]) if options["export"] is not None else None
        if export is not None and (export.is_dir() or not export.parent.is_dir()):
            what = "is a folder" if export.is_dir() else "its folder does not exist"
            raise CommandError(f"--export: {export}: {what}", returncode=2)
        task = None
        if options["task"] is not None:
            task = task_of(repository, options["task"])
        revision = None
        if options["revision"] is not None:
            revision = RubricRevision.objects.filter(
                pk=options["revision"], task__repository=repository
            ).select_related("task").first()  # fmt: skip
            if revision is None:
                raise CommandError(
                    f"--revision: {repository.name} has no revision {options['revision']}", returncode=2
                )
        request = SweepRequest(
            task=task,
            arm=options["arm"],
            model=options["model"],
            revision=revision,
            batch=options["batch"],
            second_sample=_rate(options["second_sample"]) if options["second_sample"] is not None else None,
            regrade_sample=_rate(options["regrade_sample"])
            if options["regrade_sample"] is not None
            else None,
            export=export is not None,
        )
        try:
            sweep = sweeps.start(repository, Actor.command_line(), request)
        except (SweepError, PermissionDenied) as exc:
            raise CommandError(str(exc), returncode=2) from None
        except QueueUnreachable as exc:
            raise CommandError(exc.detail, returncode=1) from None
        tag = (" (scripted judge)" if sweep.scripted else "") + (", batch" if sweep.batch else "")
        provisional = ", provisional" if sweep.provisional else ""
        self.stdout.write(
            f"sweep #{sweep.pk} of {repository.name} ({sweep.scope_label()}{provisional}): "
            f"{sweep.total_runs} run{pluralize(sweep.total_runs)}, judge {sweep.judge}{tag}"
        )
        if not options["wait"] and export is None:
            self.stdout.write("queued; run with --wait to follow it")
            return
        job = self._follow(sweep, options["timeout"])
        sweep.refresh_from_db()
        self.stdout.write(
            f"{sweep.done_runs} of {sweep.total_runs} run{pluralize(sweep.total_runs)} done, "
            f"{sweep.graded_runs} graded now, "
            f"{sweep.judge_failures} judge failure{pluralize(sweep.judge_failures)}; "
            f"{sweep.calls} judge call{pluralize(sweep.calls)}, ${sweep.cost_usd:.4f}"
        )
        result = job.result_as(SweepResult)
        problems = result.problems if result is not None else []
        if export is not None and job.status == JobStatus.DONE:
            self._write_export(sweep, export)
        for problem in problems:
            self.stdout.write(printable(f"  not graded: {problem}"))
        if job.status == JobStatus.FAILED:
            raise CommandError(printable(f"the sweep did not finish: {job.error}"), returncode=1)
        left = sweep.judge_failures + len(problems)
        if left:
            raise CommandError(
                f"{left} of {sweep.total_runs} run{pluralize(sweep.total_runs)} left without a grade "
                f"({sweep.judge_failures} judge failure{pluralize(sweep.judge_failures)}, "
                f"{len(problems)} not readable); sweep again to grade them",
                returncode=1,
            )
        self.stdout.write(self.style.SUCCESS("every run is graded"))

    def _write_export(self, sweep: Sweep, path: Path) -> None:
        made = export_of(sweep)
        if made is None:
            raise CommandError(f"the sweep's job wrote no export; nothing written to {path}", returncode=1)
        try:
            write_atomic(path, bytes(made.data))
        except InputError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(f"wrote {path} ({made.size} bytes): the runs of the sweep's scope, as run folders")

    def _follow(self, sweep: Sweep, timeout: float) -> Job:
        shown = -1

        def show_done(job: Job) -> None:
            nonlocal shown
            done = Sweep.objects.filter(pk=sweep.pk).values_list("done_runs", flat=True).get()
            if done != shown:
                shown = done
                self.stdout.write(f"  {done} of {sweep.total_runs}")

        assert sweep.job is not None
        return wait_for_job(sweep.job, timeout=timeout, on_poll=show_done)
