"""The ``rubric`` command. Exit codes: 0 success, 1 the thing checked fails, 2 bad input."""

from __future__ import annotations

import argparse
import importlib
import io
import os
import re
import sys
from collections.abc import Sequence

from grading.errors import InputError, InputErrors, one_line

# Each module defines register(subparsers) and sets a handler returning the exit code.
COMMAND_MODULES = [
    "grading.cli.validate",
    "grading.cli.workspace",
    "grading.cli.scope",
    "grading.cli.integrity",
    "grading.cli.judge",
    "grading.cli.grade",
    "grading.cli.check",
    "grading.cli.draft",
    "grading.cli.report",
    "grading.cli.api",
]


# The module that registers each subcommand, so that `rubric scope` imports only what scope needs: not the
# judge runner (asyncio), the verdict cache (sqlite3, ssl) or, through them, anything a judge needs. A name
# missing here still works: every module is then imported, as for `rubric --help`.
COMMAND_MODULE_OF = {
    "validate": "grading.cli.validate",
    "schema": "grading.cli.validate",
    "snapshot": "grading.cli.workspace",
    "capture": "grading.cli.workspace",
    "scope": "grading.cli.scope",
    "integrity": "grading.cli.integrity",
    "judge": "grading.cli.judge",
    "grade": "grading.cli.grade",
    "check": "grading.cli.check",
    "list-tests": "grading.cli.workspace",
    "draft": "grading.cli.draft",
    "report": "grading.cli.report",
    "push": "grading.cli.api",
    "pull": "grading.cli.api",
}

# What `rubric --help` says of each subcommand, so that the top-level help loads none of their modules
# (they import pydantic, the schema, the judge): the same words each module registers, which a test checks.
COMMAND_HELP = {
    "validate": "check rubric.json files against repo_rubric.v1 and the authoring rules",
    "schema": "print the JSON Schema of repo_rubric.v1",
    "snapshot": "record the ignored files in a workspace before a run, its info/exclude and .gitignore files",
    "capture": "write workspace.diff and ignored_created.txt into a run directory",
    "list-tests": "run the manifest's tests.list in a checkout of the base and write the task's "
    "tests_base.txt",
    "scope": "check a run's workspace diff against the rubric's scope",
    "integrity": "check that a run deleted no test file, removed no test case and skipped no more tests",
    "judge": "the rubric judge's verdicts on runs' workspace diffs",
    "grade": "scope, integrity and the judge for one run: mergeable and merge_score into metrics.json",
    "check": "admission: empty, oracle, lazy, lazy with a reviewer comment, and alt diffs",
    "draft": "draft a rubric from the merged PR and its review threads",
    "report": "mergeable against test-pass per arm and model, with task-level intervals",
    "push": "send run directories to the app's HTTP API",
    "pull": "fetch the admitted rubrics from the app's HTTP API",
}

# Help for the positional arguments that several subcommands share, by metavar: said once, here.
POSITIONAL_HELP = {
    "TASK_DIR": "a task directory: task.json (or prompt.md), rubric.json, calib/*.diff, oracle.diff, "
    "oracle_grade.json, tests_base.txt",
    "RUN_DIR": "a run directory: run.json, grade.json, workspace.diff, ignored_created.txt, tests_list.txt "
    "or tests_list.error (metrics.json once graded)",
    "WORKSPACE": "the top level of the agent's git work tree",
}

EPILOG = (
    "Every subcommand exits 0 on success, 1 when the thing checked fails, 2 on bad input (one line naming "
    "the file and the field). Reference: docs/README.md in the project (rubric format, files, grading, "
    "admission, drafting, report)."
)

# Help texts are written for readers of the code too; on a terminal they lose the reST markup and the
# section numbers of a specification that a user's copy of the project does not ship.
_REST_LITERAL = re.compile(r"``([^`]+)``")
_SPEC_PAREN = re.compile(r"\s*\((?:spec )?§\d+\)")  # "admission (§5): ..." -> "admission: ..."
_SPEC_WORD = re.compile(r"(?:spec )?§\d+ ?")  # "the §1 outcome" -> "the outcome"


def plain_help(text: str | None) -> str | None:
    """``text`` as a terminal shows it: no reST literals, no spec section numbers."""
    if text is None:
        return None
    return _SPEC_WORD.sub("", _SPEC_PAREN.sub("", _REST_LITERAL.sub(r"\1", text)))


def _tidy(parser: argparse.ArgumentParser) -> None:
    parser.description = plain_help(parser.description)
    for action in parser._actions:
        action.help = plain_help(action.help) if isinstance(action.help, str) else action.help
        if not action.option_strings and action.help is None and isinstance(action.metavar, str):
            action.help = POSITIONAL_HELP.get(action.metavar)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = plain_help(choice.help)
            for sub in dict.fromkeys(action.choices.values()):
                _tidy(sub)


class _VersionAction(argparse.Action):
    """``--version``, looking the version up only when asked (importlib.metadata is slow to import)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"rubric {_version()}")
        parser.exit()


def help_width() -> int:
    """The width argparse wraps help to: ``shutil.get_terminal_size().columns - 2``, worked out as shutil
    does (``COLUMNS``, else the terminal on stdout, else 80) without importing shutil, whose import (bz2
    and lzma with it) argparse would otherwise pay on every ``add_argument``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns - 2


class _Parser(argparse.ArgumentParser):
    """argparse's parser with the help width of :func:`help_width`; its subparsers are of this class too."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=help_width())  # type: ignore[call-arg]


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``rubric`` parser; given the arguments, only the module of the subcommand they name is loaded,
    and none when they name no subcommand (``rubric --help``: each is listed from :data:`COMMAND_HELP`).
    Without the arguments every subcommand is loaded whole."""
    parser = _Parser(
        prog="rubric",
        description="Mergeability grading: rubric checks, scope, test integrity, the judge, admission, "
        "drafting and reports.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    command = next(iter(argv), None) if argv is not None else None
    module = COMMAND_MODULE_OF.get(command) if command is not None else None
    if argv is not None and module is None:
        # No subcommand named: the help, the version or an error needs only the list of names.
        for name, text in COMMAND_HELP.items():
            subparsers.add_parser(name, help=text)
    for name in [] if argv is not None and module is None else [module] if module else COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    _tidy(parser)
    return parser


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("mergeability-grading")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    # A file name that is not UTF-8 reaches the output as surrogate escapes; under a UTF-8 locale stdout is
    # strict and printing it would end in a traceback. Show such bytes as \udcNN instead.
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        sys.stdout.reconfigure(errors="backslashreplace")
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except InputErrors as exc:
        for line in exc.lines():
            print(f"rubric: error: {one_line(line)}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"rubric: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rubric: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader closed the pipe (`rubric ... | head`): stop quietly, as a shell tool killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
