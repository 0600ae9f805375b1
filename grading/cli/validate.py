"""``rubric validate FILE...`` (repo_rubric.v1 and the authoring rules of spec §2) and ``rubric schema``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from grading.cli.common import Subparsers, add_json_flag, print_json
from grading.errors import InputError, InputErrors
from grading.loaders import load_rubric
from grading.schema import rubric_json_schema
from grading.strict_json import read_json


def register(subparsers: Subparsers) -> None:
    validate = subparsers.add_parser(
        "validate",
        help="check rubric.json files against repo_rubric.v1 and the authoring rules (§2)",
        description="Check rubric.json files. Every problem of every file is listed with its JSON path "
        "(blockers[1].evidence); exit 0 when all are valid, 2 otherwise.",
    )
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE", help="a rubric.json")
    add_json_flag(validate)
    validate.set_defaults(handler=run_validate)

    schema = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of repo_rubric.v1",
        description="Print the JSON Schema of repo_rubric.v1 (for editors and other tools). Exit 0.",
    )
    schema.set_defaults(handler=run_schema)


def problems_of(path: Path) -> list[tuple[str, str]]:
    """(JSON path, message) of every problem of one rubric file; empty when it is valid."""
    try:
        rubric = load_rubric(path)
    except InputErrors as exc:
        return exc.errors
    except InputError as exc:
        return [(exc.field or "", exc.message)]
    # A task.json beside the rubric names the task: a rubric copied from another task is caught here.
    task_json = path.parent / "task.json"
    if task_json.is_file():
        try:
            data = read_json(task_json)
        except InputError:
            return []  # task.json is checked where tasks are loaded; the rubric itself is valid
        if isinstance(data, dict) and isinstance(data.get("id"), str) and data["id"] != rubric.task:
            return [("task", f"{rubric.task!r} differs from the id {data['id']!r} in {task_json}")]
    return []


def run_validate(args: argparse.Namespace) -> int:
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    for path in args.files:
        problems = problems_of(path)
        errors = [{"path": where, "message": message} for where, message in problems]
        results.append({"file": str(path), "ok": not problems, "errors": errors})
        if problems:
            lines += [": ".join(p for p in (str(path), where, message) if p) for where, message in problems]
        elif not args.json:
            print(f"{path}: ok")
    if args.json:
        print_json({"ok": not lines, "files": results})
        return 2 if lines else 0
    if lines:
        # Every problem of every file, so one run fixes them all; bad input is exit 2.
        raise InputErrors(None, [("", line) for line in lines])
    return 0


def run_schema(args: argparse.Namespace) -> int:
    try:
        sys.stdout.write(json.dumps(rubric_json_schema(), indent=2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # `rubric schema | head` closed the pipe early: not an error. Keep Python from complaining on exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
