from __future__ import annotations

from grading.commands._common import Subparsers


def register(subparsers: Subparsers) -> None:
    # Not yet built: the subcommand(s) of this module are being written.
    pass
