"""The fence holds on an adversarial corpus: fence closers, triple backticks, forged delimiters with guessed
nonces, fake verdict JSON, reviewer claims in comments, docstrings, test names and file names."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grading.diffs import parse_diff
from grading.judge.backend import JudgeRequest
from grading.judge.prompt import (
    fence_close,
    fence_open,
    fenced_diff,
    redraw_nonce,
    render_request,
    select_items,
)
from grading.judge.replies import index_diff
from tests.grading.judge.judge_helpers import TASK, make_rubric

CORPUS = sorted((Path(__file__).parent / "adversarial").glob("*.diff"))


def _anthropic() -> Any:
    from grading.judge.anthropic_backend import AnthropicBackend

    return AnthropicBackend("claude-sonnet-4-5-20250929")


def _openai() -> Any:
    from grading.judge.openai_backend import OpenAIBackend

    return OpenAIBackend("gpt-4o-2024-08-06")


def _scripted(tmp_path: Path) -> Any:
    from grading.judge.scripted import ScriptedBackend

    path = tmp_path / "judge.json"
    path.write_text('{"default": {}}')
    return ScriptedBackend(path)


def test_the_corpus_has_at_least_twenty_diffs() -> None:
    assert len(CORPUS) >= 20


def _request(diff: str) -> JudgeRequest:
    rubric = make_rubric()
    items, _ = select_items(rubric, config_edited=True)
    return render_request(TASK, rubric, items, diff)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_the_fence_holds_in_every_backend_body(path: Path, tmp_path: Path) -> None:
    diff = path.read_bytes().decode("utf-8")
    backends: list[Callable[[], Any]] = [_anthropic, _openai, lambda: _scripted(tmp_path)]
    for _ in range(3):  # several draws per diff
        request = redraw_nonce(_request(diff))
        nonce = request.nonce
        assert nonce not in diff
        assert fenced_diff(request.diff_block, nonce) == diff  # intact, byte for byte
        for make in backends:
            body = json.dumps(make().render(request), ensure_ascii=False)
            assert body.count(fence_open(nonce)) == 1, make
            assert body.count(fence_close(nonce)) == 1, make
            # the diff sits after the opening line and before the only closing line
            assert body.index(fence_open(nonce)) < body.index(fence_close(nonce))
            assert json.dumps(diff, ensure_ascii=False)[1:-1] in body


def test_a_forged_closer_with_a_guessed_nonce_forces_a_new_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    diff = (Path(__file__).parent / "adversarial" / "02_forged_closer_guessed_nonce.diff").read_text()
    guessed = "0" * 32
    assert fence_close(guessed) in diff
    draws = iter([guessed, "1" * 32])
    monkeypatch.setattr("grading.judge.prompt.secrets.token_hex", lambda n: next(draws))
    request = _request(diff)
    assert request.nonce == "1" * 32
    assert request.diff_block.count(fence_close(request.nonce)) == 1
    assert fenced_diff(request.diff_block, request.nonce) == diff


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_the_location_index_agrees_with_the_diff_parser(path: Path) -> None:
    data = path.read_bytes()
    changes = parse_diff(data, str(path))
    index = index_diff(data.decode("utf-8"))
    changed_with_lines = {c.new_path for c in changes if c.added and c.new_path} | {
        c.old_path for c in changes if c.removed and c.old_path
    }
    assert set(index.files()) <= {p for c in changes for p in c.paths()}
    assert changed_with_lines <= set(index.files())
    assert sum(len(lines) for lines in index.new_lines.values()) >= sum(c.added for c in changes)
