"""A management command run in a test: its output, or its exit code and output."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.core.management.base import CommandError


def command_output(*args: str) -> tuple[str, str]:
    """The stdout and stderr of ``manage.py *args`` (a CommandError fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def command_exit(*args: str) -> tuple[int, str]:
    """The exit code of ``manage.py *args`` and its stdout, the CommandError's message after it when it
    fails (its stderr left out)."""
    out = io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=io.StringIO())
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()
