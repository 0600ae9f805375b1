"""manage.py draft_settings --repository NAME [--drafter SPEC] [--github OWNER/NAME] [--guidance GLOB]...

Sets how a repository's rubrics are drafted, as the drafting settings page does (the same checks: a full
model id or scripted:FILE, GitHub's OWNER/NAME rules, globs of the rubric dialect), or, with --repository
alone, prints them. --github "" clears the GitHub repository (PRs then come as exports only). The token is
never set here: --token-env names the variable of the worker's environment that holds it. Exit code 2 on
bad input.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rubrics_app.access import Actor
from rubrics_app.management.options import REPOSITORY_HELP, repository_named
from rubrics_app.models import DraftSetting, Repository
from rubrics_app.services.drafting.run import DraftSettingError, set_draft_settings

_OPTION = {
    "drafter": "--drafter",
    "github_repository": "--github",
    "use_token": "--token-env",
    "token_env": "--token-env",
    "guidance_globs": "--guidance",
}


class Command(BaseCommand):
    help = (
        "Set (or print) how a repository's rubrics are drafted: the drafter, the GitHub repository, guidance."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--repository", required=True, metavar="NAME", help=REPOSITORY_HELP)
        parser.add_argument("--drafter", metavar="SPEC", help="anthropic:<full-model-id>, or scripted:FILE")
        parser.add_argument("--github", metavar="OWNER/NAME", help='where PRs are read ("" for exports only)')
        parser.add_argument(
            "--token-env",
            metavar="VAR",
            help="use a token, read from this variable of the worker's environment (GITHUB_TOKEN[_SUFFIX])",
        )
        parser.add_argument("--no-token", action="store_true", help="read GitHub without a token")
        parser.add_argument(
            "--guidance",
            action="append",
            metavar="GLOB",
            help="guidance files (repeatable; replaces the list)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        repository = repository_named(options["repository"])
        if options["token_env"] is not None and options["no_token"]:
            raise CommandError("--token-env and --no-token: give one of them", returncode=2)
        changing = options["no_token"] or any(
            options[k] is not None for k in ("drafter", "github", "token_env", "guidance")
        )
        if changing:
            self._set(repository, options)
        self._print(DraftSetting.objects.filter(repository=repository).first(), repository)

    def _set(self, repository: Repository, options: dict[str, Any]) -> None:
        current = DraftSetting.objects.filter(repository=repository).first()
        drafter = (
            options["drafter"] if options["drafter"] is not None else (current.drafter if current else "")
        )
        if not drafter:
            raise CommandError("--drafter is required to set drafting up", returncode=2)
        if options["token_env"] is not None:
            use_token, token_env = True, options["token_env"]
        elif options["no_token"]:
            use_token, token_env = False, current.token_env if current else "GITHUB_TOKEN"
        else:
            use_token = current.use_token if current else False
            token_env = current.token_env if current else "GITHUB_TOKEN"
        github = (
            options["github"]
            if options["github"] is not None
            else (current.github_repository if current else "")
        )
        try:
            set_draft_settings(
                repository,
                by=Actor.command_line(),
                drafter=drafter,
                github_repository=github,
                use_token=use_token,
                token_env=token_env,
                guidance_globs=options["guidance"],
            )
        except DraftSettingError as exc:
            raise CommandError(f"{_OPTION.get(exc.field, exc.field)}: {exc.message}", returncode=2) from None

    def _print(self, setting: DraftSetting | None, repository: Repository) -> None:
        if setting is None:
            self.stdout.write(f"{repository.name}: no drafting settings")
            return
        scripted = (
            " (scripted drafter: a stand-in, not a model)" if setting.drafter.startswith("scripted:") else ""
        )
        self.stdout.write(f"repository: {repository.name}")
        self.stdout.write(f"drafter: {setting.drafter}{scripted}")
        self.stdout.write(f"github: {setting.github_repository or '(none: PR exports only)'}")
        token = f"from {setting.token_env} in the worker's environment" if setting.use_token else "(none)"
        self.stdout.write(f"token: {token}")
        self.stdout.write("guidance: " + (" ".join(setting.guidance_globs or []) or "(none)"))
