"""The ``rubric`` command. Exit codes: 0 success, 1 the thing checked fails, 2 bad input."""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence

from grading.errors import InputError, InputErrors, one_line

# Each module defines register(subparsers) and sets a handler returning the exit code.
COMMAND_MODULES = [
    "grading.commands.validate",
    "grading.commands.workspace",
    "grading.commands.scope",
    "grading.commands.integrity",
    "grading.commands.judge",
    "grading.commands.grade",
    "grading.commands.check",
    "grading.commands.draft",
    "grading.commands.report",
]


# The module that registers each subcommand, so that `rubric scope` imports only what scope needs: not the
# judge runner (asyncio), the verdict cache (sqlite3, ssl) or, through them, anything a judge needs. A name
# missing here still works: every module is then imported, as for `rubric --help`.
COMMAND_MODULE_OF = {
    "validate": "grading.commands.validate",
    "schema": "grading.commands.validate",
    "snapshot": "grading.commands.workspace",
    "capture": "grading.commands.workspace",
    "scope": "grading.commands.scope",
    "integrity": "grading.commands.integrity",
    "judge": "grading.commands.judge",
    "grade": "grading.commands.grade",
    "check": "grading.commands.check",
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``rubric`` parser; given the arguments, only the module of the subcommand they name is loaded."""
    parser = argparse.ArgumentParser(
        prog="rubric",
        description="Mergeability grading: rubric checks, scope, test integrity, the judge and admission.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    command = next(iter(argv), None) if argv is not None else None
    module = COMMAND_MODULE_OF.get(command) if command is not None else None
    for name in [module] if module is not None else COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


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
