"""Every management command words its shared options the same, and says what its numbers count."""

from __future__ import annotations

import argparse

import pytest
from django.core.management import get_commands, load_command_class

from rubrics_app.management.options import REPOSITORY_HELP, TASK_HELP


def _options(name: str) -> dict[str, argparse.Action]:
    parser = load_command_class("rubrics_app", name).create_parser("manage.py", name)
    return {flag: action for action in parser._actions for flag in action.option_strings}


OURS = sorted(name for name, app in get_commands().items() if app == "rubrics_app")


def test_the_commands_are_found() -> None:
    assert {"sweep", "export_rubrics", "reap_jobs", "judge_settings"} <= set(OURS)


@pytest.mark.parametrize("name", OURS)
def test_repository_and_task_read_the_same_everywhere(name: str) -> None:
    options = _options(name)
    if "--repository" in options:
        assert REPOSITORY_HELP in (options["--repository"].help or ""), name
    if "--task" in options:
        assert TASK_HELP in (options["--task"].help or ""), name


def test_numbers_name_their_unit_and_what_they_cover() -> None:
    assert "seconds" in (_options("reap_jobs")["--timeout"].help or "")
    assert "sweeps" in (_options("judge_settings")["--monthly-cap"].help or "")
