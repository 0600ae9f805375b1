from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from grading.errors import InputError

# argparse's subparsers object has no public type name.
Subparsers = Any


def print_json(obj: BaseModel | dict[str, Any] | list[Any]) -> None:
    data = obj.model_dump(mode="json", by_alias=True) if isinstance(obj, BaseModel) else obj
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def existing_dir(value: str) -> Path:
    path = Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value}: not a directory")
    return path


# Every option that takes a judge names the forms it accepts, the same words everywhere.
JUDGE_SPEC_HELP = (
    "anthropic:<full-model-id>, openai:<full-model-id> (any OpenAI-compatible server, OPENAI_BASE_URL), "
    "claude-code:<full-model-id> or scripted:<file> (a deterministic stand-in for tests and demos)"
)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object to stdout")


def add_held_out_flags(parser: argparse.ArgumentParser) -> None:
    """``--rubric PATH`` and ``--task-json PATH``: a rubric (and task) kept outside the public tree (§7)."""
    parser.add_argument(
        "--rubric",
        type=Path,
        metavar="PATH",
        help="the rubric.json to use instead of TASK_DIR/rubric.json (a held-out rubric kept outside the "
        "public tree); its calibration paths resolve against its own folder",
    )
    parser.add_argument(
        "--task-json",
        type=Path,
        metavar="PATH",
        help="the task.json to use instead of TASK_DIR/task.json (prompt.md is read beside it)",
    )


def add_regrade_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--regrade-sample",
        type=float,
        default=0.0,
        metavar="RATE",
        help="share of cached diffs judged again to measure same-judge repeat agreement (§9); the "
        "figure is printed",
    )
    parser.add_argument("--regrade-seed", type=int, default=0, metavar="N", help="seed of the regrade sample")


def regrade_rate(args: argparse.Namespace) -> float:
    rate: float = getattr(args, "regrade_sample", 0.0)
    if not 0.0 <= rate <= 1.0:  # also refuses NaN
        raise InputError(None, "must be between 0 and 1", "--regrade-sample")
    return rate
