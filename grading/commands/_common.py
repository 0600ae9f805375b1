from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

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


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object to stdout")
