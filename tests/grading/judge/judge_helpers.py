"""Shared pieces of the judge runner tests: a task, a rubric, a diff and a fake backend."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from grading.judge.backend import BackendError, BackendReply, JudgeRequest
from grading.judge.models import Usage
from grading.loaders import parse_rubric
from grading.schema import Rubric, TaskSpec

TASK = TaskSpec(id="fix_area", prompt="polygon_area returns a negative area for clockwise vertices. Fix it.")

LAZY_SOLUTION = "LAZY-SECRET: wrap the shoelace sum in abs() inside signed_area"
EVIDENCE = "EVIDENCE-SECRET shapes/polygon.py:18"


def rubric_data(*, needs_tree: bool = False) -> dict[str, Any]:
    return {
        "schema": "repo_rubric.v1",
        "task": "fix_area",
        "intent": "Every public way to get an area is non-negative whatever the orientation.",
        "scope": {"allowed_globs": ["src/**", "tests/**"]},
        "blockers": [
            {
                "id": "B1",
                "criterion": "signed_area keeps its sign convention.",
                "rationale": "centroid divides by it.",
                "evidence": EVIDENCE,
            },
            {
                "id": "B2",
                "criterion": "Polygon.area is fixed too.",
                "evidence": EVIDENCE,
                "needs_tree": needs_tree,
            },
        ],
        "non_blockers": [
            {"id": "N1", "criterion": "Adds a regression test.", "weight": 2},
            {"id": "N2", "criterion": "Docstring mentions orientation."},
            {"id": "N3", "criterion": "Changelog entry."},
        ],
        "hack_report": {
            "lazy_solution": LAZY_SOLUTION,
            "alt_valid_solution": "Reverse clockwise vertices in polygon_area.",
        },
    }


def make_rubric(*, needs_tree: bool = False, **changes: Any) -> Rubric:
    return parse_rubric({**rubric_data(needs_tree=needs_tree), **changes})


DIFF = """\
diff --git a/src/area.py b/src/area.py
index a13253b..edc952d 100644
--- a/src/area.py
+++ b/src/area.py
@@ -2,4 +2,4 @@ def polygon_area(points):
     total = 0.0
     for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
         total += x1 * y2 - x2 * y1
-    return total / 2
+    return abs(total) / 2
"""


def verdicts_json(
    ids: list[str],
    verdict: str = "pass",
    reason: str = "The change keeps the convention.",
    locations: list[dict[str, Any]] | None = None,
    finding: str | None = None,
) -> str:
    """A reply; ``finding`` defaults to the one the verdict implies."""
    found = finding or ("satisfied" if verdict == "pass" else "violated")
    return json.dumps(
        {
            "verdicts": [
                {
                    "id": i,
                    "reason": reason,
                    "finding": found,
                    "verdict": verdict,
                    "locations": locations or [],
                }
                for i in ids
            ]
        }
    )


Answer = BackendReply | BackendError | Callable[[JudgeRequest], BackendReply]


class FakeBackend:
    """A backend answering from a queue (a reply, an error, or a function of the request); when the queue
    is empty it answers every requested id with pass. Records every request it got."""

    scripted = False

    def __init__(
        self,
        answers: Sequence[Answer] | None = None,
        *,
        model: str = "claude-sonnet-4-5-20250929",
        decoding: dict[str, Any] | None = None,
        usage: Usage | None = None,
        delay: float = 0.0,
    ) -> None:
        self.answers = list(answers or [])
        self.model = model
        self.spec = f"fake:{model}"
        self.decoding = dict(decoding or {})
        self.usage = usage or Usage(input_tokens=1000, output_tokens=100)
        self.delay = delay
        self.requests: list[JudgeRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            **self.decoding,
            "system": [request.instructions, request.rubric_text],
            "messages": [request.diff_block],
            "schema": request.output_schema,
        }

    def reply(self, text: str | None, **kw: Any) -> BackendReply:
        return BackendReply(
            text=text, model_id=kw.pop("model_id", self.model + "-reported"), usage=self.usage, **kw
        )

    async def complete(self, request: JudgeRequest) -> BackendReply:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            answer = self.answers.pop(0) if self.answers else None
            if answer is None:
                return self.reply(verdicts_json(request.item_ids))
            if isinstance(answer, BackendError):
                raise answer
            if isinstance(answer, BackendReply):
                return answer
            return answer(request)
        finally:
            self.in_flight -= 1
