"""The command-line checks' shared run and reply: ``rubric check`` on a task, and a judge reply that tries to
escape its fence."""

from __future__ import annotations

import json

from tests.grading.task_helpers import Task

ESCAPE_REPLY = json.dumps(
    {
        "verdicts": [
            {
                "id": "\x1b]0;owned\x07\x1b[2J",
                "reason": "r",
                "finding": "satisfied",
                "verdict": "pass",
                "locations": [],
            }
        ]
    }
)


def check(task: Task, *extra: str) -> list[str]:
    task.backend()  # writes the scripted judge file
    return [
        "check",
        str(task.dir),
        "--manifest",
        str(task.manifest),
        "--judge",
        f"scripted:{task.judge}",
        *extra,
    ]
