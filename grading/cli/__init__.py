"""The ``rubric`` command: :func:`main` parses the command line; each subcommand's module (validate,
workspace, scope, integrity, judge, grade, check, check_mutants, draft, report) parses its arguments and
prints, and the work lives in the other grading packages."""

from grading.cli.rubric import main

__all__ = ["main"]
