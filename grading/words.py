"""Counts in words, "1 run" and "2 runs", for the command line's output and the messages grading writes.

The one pluralising helper of ``grading`` (which never imports Django); the app's pages and commands use
Django's ``pluralize`` for the same.
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural unless ``count`` is exactly 1: ``counted(1, "run")`` is "1 run",
    ``counted(0, "run")`` "0 runs"; ``plural`` for a noun that does not add an s (``"strata"``)."""
    return f"{count} {noun if count == 1 else (plural or f'{noun}s')}"
