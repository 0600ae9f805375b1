"""``scripted:<file>``: a deterministic judge that answers from a JSON file, for tests and demos.

Format (ARCHITECTURE.md)::

    {"default": {"B1": {"verdict": "pass", "reason": "...", "locations": [...], "finding": ...}, ...},
     "by_diff_sha256": {"<sha256 of the diff's bytes>": {"B1": {"verdict": "fail", "reason": "..."}}}}

The diff is the one the judge reads (``grading.binary_text.judge_text``): the diff's own bytes unless it
holds a binary patch, which the judge reads as one summary line.

The answer for a diff is ``default`` updated with the entry for the diff's sha256 (when there is one), cut
to the ids the request asks for. ``finding`` is optional: by default the one the verdict implies
(``satisfied`` for pass, ``violated`` for fail); giving the other one scripts a judge whose verdict disagrees
with its own finding. An id the file does not answer is left out of the reply, which the runner
then treats like any incomplete reply: a judge failure. It goes through the same runner as a real model
(coverage check, consistency check, cache) and is labelled as scripted wherever its verdicts are shown.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from grading.errors import InputError
from grading.judge.backend import BackendReply, Decoding, JudgeRequest
from grading.judge.models import Finding, Location, VerdictValue
from grading.strict_json import parse_json, read_input_bytes

SCRIPTED_MODEL_ID = "scripted"

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class ScriptedVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: VerdictValue
    reason: Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]
    locations: list[Location] = []
    finding: Finding | None = None  # default: the finding the verdict implies

    def finding_text(self) -> Finding:
        if self.finding is not None:
            return self.finding
        return "satisfied" if self.verdict == "pass" else "violated"


class ScriptedFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default: dict[str, ScriptedVerdict] = {}
    by_diff_sha256: dict[Sha256, dict[str, ScriptedVerdict]] = Field(default_factory=dict)


def load_scripted(path: Path) -> tuple[ScriptedFile, str]:
    """The parsed file and the sha256 of its bytes; InputError naming the field for a bad file."""
    raw = read_input_bytes(path)
    data = parse_json(raw, path)
    if not isinstance(data, dict):
        raise InputError(
            path, 'a scripted judge file is a JSON object {"default": ..., "by_diff_sha256": ...}'
        )
    try:
        script = ScriptedFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = "unknown key (misspelt?)" if first["type"] == "extra_forbidden" else first["msg"]
        if first["type"] == "missing":
            message = "required"
        raise InputError(path, message, where) from None
    return script, hashlib.sha256(raw).hexdigest()


def render_scripted(request: JudgeRequest, file_sha256: str) -> dict[str, Any]:
    """The request body a scripted stand-in records (judge or drafter). The file's hash is part of it, so
    editing the script misses the cache."""
    return {
        "model": SCRIPTED_MODEL_ID,
        "script_sha256": file_sha256,
        "system": request.instructions,
        "messages": [{"role": "user", "content": [request.rubric_text, request.diff_block]}],
        "output_schema": request.output_schema,
    }


class ScriptedBackend:
    """Answers from a scripted file. ``model`` and the reported model id are "scripted"."""

    scripted = True
    model = SCRIPTED_MODEL_ID

    def __init__(self, path: Path) -> None:
        self.path = path
        self.spec = f"scripted:{path}"
        self.script, self.file_sha256 = load_scripted(path)
        self.decoding: Decoding = {}
        self.calls = 0

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return render_scripted(request, self.file_sha256)

    def answers_for(self, diff_text: str) -> dict[str, ScriptedVerdict]:
        digest = hashlib.sha256(diff_text.encode("utf-8", errors="surrogateescape")).hexdigest()
        return {**self.script.default, **self.script.by_diff_sha256.get(digest, {})}

    async def complete(self, request: JudgeRequest) -> BackendReply:
        self.calls += 1
        answers = self.answers_for(request.diff_text)
        verdicts = [
            {
                "id": item_id,
                "reason": answer.reason,
                "finding": answer.finding_text(),
                "verdict": answer.verdict,
                "locations": [loc.model_dump(mode="json") for loc in answer.locations],
            }
            for item_id in request.item_ids
            if (answer := answers.get(item_id)) is not None
        ]
        return BackendReply(
            text=json.dumps({"verdicts": verdicts}), model_id=SCRIPTED_MODEL_ID, stop_reason="end_turn"
        )
