from __future__ import annotations

import argparse
import json
from pathlib import Path

from grading.commands._common import Subparsers
from grading.errors import InputError, InputErrors
from grading.schema import load_rubric, rubric_json_schema


def register(subparsers: Subparsers) -> None:
    validate = subparsers.add_parser("validate", help="check rubric.json files against repo_rubric.v1 and §2")
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE")
    validate.set_defaults(handler=run_validate)

    schema = subparsers.add_parser("schema", help="print the JSON Schema of repo_rubric.v1")
    schema.set_defaults(handler=run_schema)


def run_validate(args: argparse.Namespace) -> int:
    problems: list[str] = []
    for path in args.files:
        try:
            load_rubric(path)
        except InputErrors as exc:
            problems.extend(exc.lines())
        except InputError as exc:
            problems.append(str(exc))
        else:
            print(f"{path}: ok")
    if problems:
        # Every problem of every file, so one run fixes them all; bad input is exit 2.
        raise InputErrors(None, [("", p) for p in problems])
    return 0


def run_schema(args: argparse.Namespace) -> int:
    print(json.dumps(rubric_json_schema(), indent=2))
    return 0
