from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from grading.errors import InputError
from grading.judge.cache import MemoryCache
from grading.judge.runner import judge_diff
from grading.judge.scripted import ScriptedBackend
from tests.grading.judge.judge_helpers import DIFF, TASK, make_rubric

ANSWERS = {i: {"verdict": "pass", "reason": f"{i} holds."} for i in ["B1", "B2", "N1", "N2", "N3"]}


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def judge(backend: ScriptedBackend, diff: str = DIFF, **kw: Any) -> Any:
    return asyncio.run(
        judge_diff(TASK, make_rubric(), diff, backend, config_edited=kw.pop("config_edited", False), **kw)
    )


def test_the_scripted_judge_answers_through_the_runner_and_is_labelled(tmp_path: Path) -> None:
    backend = ScriptedBackend(write(tmp_path, {"default": ANSWERS}))
    result = judge(backend)
    assert (
        result.scripted
        and result.model_id == "scripted"
        and result.judge == f"scripted:{tmp_path}/judge.json"
    )
    assert [v.verdict for v in result.verdicts] == ["pass"] * 5
    assert result.usage.cost_known and result.usage.cost_usd == 0


def test_an_answer_keyed_by_the_diffs_sha256_overrides_the_default(tmp_path: Path) -> None:
    digest = hashlib.sha256(DIFF.encode()).hexdigest()
    backend = ScriptedBackend(
        write(
            tmp_path,
            {
                "default": ANSWERS,
                "by_diff_sha256": {
                    digest: {
                        "B1": {
                            "verdict": "fail",
                            "reason": "signed_area takes abs().",
                            "locations": [{"file": "src/area.py", "line": 5}],
                        }
                    }
                },
            },
        )
    )
    b1 = judge(backend).verdict("B1")
    assert b1 is not None and b1.verdict == "fail" and b1.locations[0].line == 5
    other = judge(backend, DIFF + "+# other\n").verdict("B1")
    assert other is not None and other.verdict == "pass"


def test_an_id_the_script_does_not_answer_is_a_judge_failure(tmp_path: Path) -> None:
    answers = {k: v for k, v in ANSWERS.items() if k != "N3"}
    backend = ScriptedBackend(write(tmp_path, {"default": answers}))
    result = judge(backend)
    assert result.failure is not None and "missing N3" in result.failure and result.verdicts == []
    assert backend.calls == 3
    # the fixed config blocker must be scripted too when the run edited a test config
    backend = ScriptedBackend(write(tmp_path, {"default": ANSWERS}))
    assert judge(backend, config_edited=True).failure is not None


def test_the_scripted_judge_goes_through_the_consistency_check(tmp_path: Path) -> None:
    # A reason that reads like a fail is no longer second-guessed: only the judge's own finding counts.
    answers = {
        **ANSWERS,
        "B1": {"verdict": "pass", "reason": "It keeps a negative area for clockwise input."},
    }
    result = judge(ScriptedBackend(write(tmp_path, {"default": answers})))
    assert result.failure is None and result.consistency_flags == 0
    answers = {
        **ANSWERS,
        "B1": {"verdict": "pass", "finding": "violated", "reason": "It breaks the convention."},
    }
    result = judge(ScriptedBackend(write(tmp_path, {"default": answers})))
    # flagged, judged again, and the same disagreement again: a judge failure, never a pass
    assert result.consistency_flags == 2 and result.rejudged == 1
    assert result.failure is not None and "B1" in result.failure and result.verdicts == []


def test_a_bad_location_in_the_script_is_rejected_like_a_models(tmp_path: Path) -> None:
    answers = {
        **ANSWERS,
        "B1": {"verdict": "pass", "reason": "ok", "locations": [{"file": "x.py", "line": 1}]},
    }
    result = judge(ScriptedBackend(write(tmp_path, {"default": answers})))
    assert result.failure is not None and "not in the diff" in result.failure


def test_editing_the_script_misses_the_cache(tmp_path: Path) -> None:
    cache = MemoryCache()
    path = write(tmp_path, {"default": ANSWERS})
    judge(ScriptedBackend(path), cache=cache)
    assert judge(ScriptedBackend(path), cache=cache).cache_hit
    path.write_text(
        json.dumps({"default": {**ANSWERS, "N1": {"verdict": "fail", "reason": "No test added."}}})
    )
    result = judge(ScriptedBackend(path), cache=cache)
    assert not result.cache_hit
    n1 = result.verdict("N1")
    assert n1 is not None and n1.verdict == "fail"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "malformed JSON"),
        ("[]", "JSON object"),
        ({"defaults": {}}, "defaults: unknown key"),
        ({"default": {"B1": {"verdict": "maybe", "reason": "x"}}}, "default.B1.verdict"),
        ({"default": {"B1": {"verdict": "pass"}}}, "default.B1.reason: required"),
        ({"default": {"B1": {"verdict": "pass", "reason": ""}}}, "default.B1.reason"),
        ({"by_diff_sha256": {"abc": {}}}, "by_diff_sha256.abc"),
    ],
)
def test_a_bad_scripted_file_is_an_input_error(tmp_path: Path, data: Any, message: str) -> None:
    with pytest.raises(InputError) as exc:
        ScriptedBackend(write(tmp_path, data))
    assert message in str(exc.value)


def test_a_missing_scripted_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        ScriptedBackend(tmp_path / "nope.json")
