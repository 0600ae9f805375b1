"""Tokens and run records for the HTTP API tests."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User

from rubrics_app.models import Repository, Role
from rubrics_app.services.tokens import create_token
from tests.app.runs_helpers import RUN_DIFF


def token_for(user: User, *repositories: Repository, role: Role = Role.MAINTAINER, days: int = 30) -> str:
    return create_token(user, "harness", list(repositories), role, days).secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def run_record(
    repetition: int,
    *,
    arm: str = "guidance",
    model: str = "model-a",
    diff: bytes | None = None,
    task_id: str = "fix_fraction_gt1",
) -> dict[str, Any]:
    """One run as the push takes it: the files of a run directory as text."""
    body = (
        diff
        if diff is not None
        else RUN_DIFF.replace(b"    return x\n", f"    return x  # {repetition}\n".encode())
    )
    return {
        "name": f"{arm}-{model}-{repetition}",
        "files": {
            "run.json": json.dumps({"task": task_id, "arm": arm, "model": model, "repetition": repetition}),
            "grade.json": json.dumps({"pass": True, "tests_skipped": 0}),
            "workspace.diff": body.decode(),
            "ignored_created.txt": "build/out.o\n",
            "tests_list.txt": "tests/test_fraction.py::test_gt1\n",
        },
    }
