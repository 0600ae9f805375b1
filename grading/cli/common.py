"""What the subcommands share: the flags of the judge, the tree judge, held-out runs, regrading and
``--json``, argument types, and printing JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grading.errors import InputError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: every subcommand loads this module
if TYPE_CHECKING:  # pydantic and the judge's models load only for the subcommands that use them
    from typing import Any

    from pydantic import BaseModel

    from grading.judge.models import TreeBudget

    # argparse's subparsers object has no public type name.
    Subparsers = Any
else:
    Subparsers = object


def print_json(obj: BaseModel | dict[str, Any] | list[Any]) -> None:
    # A model by its method, not isinstance: a command that prints a dict need not import pydantic.
    import json  # only for --json and the commands that print JSON

    data = obj if isinstance(obj, dict | list) else obj.model_dump(mode="json", by_alias=True)
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


def add_tree_flags(parser: argparse.ArgumentParser) -> None:
    """``--checkout`` and the tree judge's budget (needs_tree blockers, judged with the base tree)."""
    from grading.judge.models import TreeBudget

    default = TreeBudget()
    parser.add_argument(
        "--checkout",
        type=Path,
        metavar="PATH",
        help="the repository (a clone holding task.json's base_commit): needs_tree blockers are then "
        "judged by a judge that reads the base commit from its git objects, never its work tree; without "
        "it they are not measured",
    )
    parser.add_argument(
        "--tree-max-tool-calls",
        type=int,
        default=default.max_tool_calls,
        metavar="N",
        help="tree judge budget per needs_tree blocker: tool calls (default: %(default)s)",
    )
    parser.add_argument(
        "--tree-max-tokens",
        type=int,
        default=default.max_tokens,
        metavar="N",
        help="tree judge budget per needs_tree blocker: tokens over all its calls (default: %(default)s)",
    )
    parser.add_argument(
        "--tree-max-answer-chars",
        type=int,
        default=default.max_answer_chars,
        metavar="N",
        help="the most characters one tree tool answer holds (default: %(default)s)",
    )


def tree_budget(args: argparse.Namespace) -> TreeBudget:
    """The :class:`TreeBudget` of the ``--tree-*`` flags; InputError naming the flag when out of range."""
    from pydantic import ValidationError

    from grading.judge.models import TreeBudget

    try:
        return TreeBudget(
            max_tool_calls=args.tree_max_tool_calls,
            max_tokens=args.tree_max_tokens,
            max_answer_chars=args.tree_max_answer_chars,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = "--tree-" + str(first["loc"][0]).replace("_", "-")
        raise InputError(None, first["msg"], flag) from None
