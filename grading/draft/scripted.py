"""``scripted:<file>``: a drafter that answers with the draft held in a JSON file, for demos and tests.

The file is the reply a model would give: one JSON object with the rubric's parts (``intent``, ``scope``,
``blockers``, ``non_blockers``, ``hack_report``), ``lazy_diff`` (``diff``, ``breaks``) and ``alt_solution``
(``description``, ``diff``). It goes through the same reading and checks as a model's reply, its model id
is "scripted", and it is labelled as scripted wherever the draft shows. It costs nothing and calls nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from grading.errors import InputError
from grading.judge.backend import BackendReply, JudgeRequest
from grading.judge.scripted import SCRIPTED_MODEL_ID, render_scripted
from grading.strict_json import read_json

SCRIPTED_DRAFTER_ID = SCRIPTED_MODEL_ID


class ScriptedDrafter:
    """Replies with the file's draft whatever it is asked. ``model`` and the reported model id are
    "scripted"."""

    scripted = True
    model = SCRIPTED_DRAFTER_ID

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spec = f"scripted:{path}"
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError(
                path, 'a scripted draft is the JSON object a drafter replies with ({"intent": ..., ...})'
            )
        self.reply_text = json.dumps(data, ensure_ascii=False)
        self.file_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        self.decoding: dict[str, Any] = {}
        self.calls = 0

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return render_scripted(request, self.file_sha256)

    async def complete(self, request: JudgeRequest) -> BackendReply:
        self.calls += 1
        return BackendReply(text=self.reply_text, model_id=SCRIPTED_DRAFTER_ID, stop_reason="end_turn")
