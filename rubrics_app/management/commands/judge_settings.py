"""manage.py judge_settings --repository NAME [--judge SPEC] [--second-judge SPEC] [--decoding NAME=VALUE]...

Sets a repository's judges as the judge settings page does (full model ids; the second judge from another
model family; the same checks as the `rubric` command), or, with --repository alone, prints them. API keys
are never set here: the worker reads them from its environment. Exit code 2 on bad input.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading import InputError, parse_decoding
from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import JudgeSetting, Repository
from rubrics_app.services.judges import JudgeSettingError, set_judges

_OPTION = {
    "judge": "--judge",
    "second_judge": "--second-judge",
    "decoding": "--decoding",
    "second_decoding": "--second-decoding",
    "monthly_cap_usd": "--monthly-cap",
}


class Command(BaseCommand):
    help = "Set (or print) a repository's primary and second judge, decoding and monthly spend cap."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--judge", metavar="SPEC", help="the primary judge (full model id)")
        parser.add_argument("--second-judge", metavar="SPEC", help="a judge of another model family")
        parser.add_argument("--decoding", action="append", metavar="NAME=VALUE", help="the primary's")
        parser.add_argument("--second-decoding", action="append", metavar="NAME=VALUE")
        parser.add_argument(
            "--monthly-cap",
            metavar="USD",
            help="monthly spend cap in USD for calibrations and sweeps together: none starts past it",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        changing = any(
            options[k] is not None for k in ("judge", "second_judge", "decoding", "second_decoding")
        )
        if changing or options["monthly_cap"] is not None:
            if not options["judge"]:
                raise CommandError("--judge is required to set the judges", returncode=2)
            self._set(repository, options)
        self._print(repository.judge_setting(), repository)

    def _set(self, repository: Repository, options: dict[str, Any]) -> None:
        cap = None
        if options["monthly_cap"] is not None:
            try:
                cap = Decimal(options["monthly_cap"])
            except InvalidOperation:
                raise CommandError(
                    f"--monthly-cap: {options['monthly_cap']!r} is not a number", returncode=2
                ) from None
        try:
            set_judges(
                repository,
                by=Actor.command_line(),
                judge=options["judge"],
                second_judge=options["second_judge"] or "",
                decoding=parse_decoding(options["decoding"]),
                second_decoding=parse_decoding(options["second_decoding"]),
                monthly_cap_usd=cap,
            )
        except JudgeSettingError as exc:
            raise CommandError(f"{_OPTION.get(exc.field, exc.field)}: {exc.message}", returncode=2) from None
        except InputError as exc:
            raise CommandError(str(exc), returncode=2) from None

    def _print(self, setting: JudgeSetting | None, repository: Repository) -> None:
        if setting is None:
            self.stdout.write(f"{repository.name}: no judges set")
            return
        scripted = " (scripted judge)"
        self.stdout.write(f"repository: {repository.name}")
        self.stdout.write(f"judge: {setting.judge}{scripted if setting.is_scripted(setting.judge) else ''}")
        if setting.decoding:
            self.stdout.write(f"decoding: {_pairs(setting.decoding)}")
        second = setting.second_judge or "(none)"
        self.stdout.write(
            f"second judge: {second}{scripted if setting.is_scripted(setting.second_judge) else ''}"
        )
        if setting.second_decoding:
            self.stdout.write(f"second decoding: {_pairs(setting.second_decoding)}")
        cap = f"${setting.monthly_cap_usd}" if setting.monthly_cap_usd is not None else "(none)"
        self.stdout.write(f"monthly spend cap: {cap}")


def _pairs(decoding: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in decoding.items())
