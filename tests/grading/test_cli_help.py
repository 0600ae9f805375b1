"""What `rubric --help` and each subcommand's help tell a newcomer: exit codes, every positional argument,
defaults, the judge forms; no reST markup or section numbers of a spec the user's copy does not ship."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

import pytest

from grading.cli.rubric import COMMAND_HELP, build_parser, help_width, main, plain_help

SUBCOMMANDS = sorted(
    name
    for action in build_parser()._actions
    if isinstance(action, argparse._SubParsersAction)
    for name in action.choices
)


def help_text(*args: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_the_top_level_help_says_what_each_subcommand_registers() -> None:
    # `rubric --help` lists the subcommands from COMMAND_HELP without loading them: the words must be the
    # ones each module registers, and every subcommand must be there.
    registered = {
        choice.dest: choice.help
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    }
    assert registered == COMMAND_HELP


def test_every_subcommand_is_listed() -> None:
    assert {"validate", "schema", "snapshot", "capture", "scope", "integrity", "judge", "grade", "check",
            "draft", "report", "list-tests"} <= set(SUBCOMMANDS)  # fmt: skip


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_each_subcommand_says_its_exit_codes_and_explains_its_arguments(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_text(command, capsys=capsys)
    description = text.split("positional arguments:")[0].split("options:")[0]
    assert re.search(r"exit (codes: )?0", " ".join(description.lower().split())), description
    assert "``" not in text and "§" not in text
    parser = build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    for action in sub._actions:
        if not action.option_strings:
            assert action.help, f"{command}: positional {action.metavar} has no help"


@pytest.mark.parametrize("command", ["judge", "grade", "check"])
def test_every_judge_option_lists_the_judge_forms(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = "".join(help_text(command, capsys=capsys).split())  # argparse wraps lines at hyphens
    for form in ("anthropic:<full-model-id>", "openai:<full-model-id>", "claude-code:<full-model-id>"):
        assert form in text
    assert "scripted:<file>" in text


def test_defaults_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_text("judge", capsys=capsys)
    assert "diffs judged at once (default: 8)" in text
    assert "calls per request before a judge failure (default: 3)" in " ".join(text.split())


def test_the_top_level_help_points_to_the_docs_and_the_version_is_printed() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "grading", "--help"], capture_output=True, text=True, check=True
    )
    assert "docs/README.md" in out.stdout and "2 on bad" in out.stdout
    assert "(§" not in out.stdout
    version = subprocess.run([sys.executable, "-m", "grading", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.startswith("rubric ")


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("``rubric grade``: the §1 outcome of one run", "rubric grade: the outcome of one run"),
        ("admission (§5): empty, oracle", "admission: empty, oracle"),
        ("Check the scope (spec §3). Exit 0", "Check the scope. Exit 0"),
    ],
)
def test_plain_help(raw: str, shown: str) -> None:
    assert plain_help(raw) == shown


@pytest.mark.parametrize("columns", ["50", "132", "", "0", "wide"])
def test_the_help_wraps_where_argparse_would(columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The width is worked out without shutil (a tenth of a short command's start-up), the same as
    shutil's: COLUMNS, else the terminal, else 80."""
    monkeypatch.setenv("COLUMNS", columns)
    assert help_width() == shutil.get_terminal_size().columns - 2
    formatter = build_parser(["capture"])._get_formatter()
    assert formatter._width == argparse.HelpFormatter("rubric")._width
