"""What the drafter reads (spec §6), and nothing else: the task prompt, the merged PR with its review threads,
the repository's guidance files and the base source of the files the PR touches, all read at the task's
base commit.

This module takes no run, no workspace diff and no verdict: a rubric fitted to observed agent failures would
overstate the gap it is meant to measure. Callers build a :class:`DraftInput` from these sources only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from grading.basetree import BaseTree
from grading.draft.pr import PullRequest
from grading.globs import match_any

DEFAULT_GUIDANCE_GLOBS = ("CONTRIBUTING.md", "AGENTS.md", "CLAUDE.md", "docs/dev/**", "**/CONTRIBUTING.md")
MAX_FILE_BYTES = 40_000  # one file's share; a longer file is cut and marked so
MAX_SOURCE_BYTES = 240_000  # guidance and base source together


class SourceFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    text: str
    truncated: bool = False


class DraftInput(BaseModel):
    """The drafter's whole input. Its sha256 (:meth:`sha256`) is recorded with the draft."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    task_prompt: str
    base_commit: str
    pr: PullRequest
    guidance: list[SourceFile] = []
    base_sources: list[SourceFile] = []
    omitted: list[str] = []  # files left out once MAX_SOURCE_BYTES was reached

    def sha256(self) -> str:
        data = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def build_draft_input(
    *,
    task_id: str,
    task_prompt: str,
    pr: PullRequest,
    tree: BaseTree,
    guidance_globs: Sequence[str] = DEFAULT_GUIDANCE_GLOBS,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_source_bytes: int = MAX_SOURCE_BYTES,
) -> DraftInput:
    """Collect the drafter's input from the PR and the repository tree at the task's base commit."""
    budget = max_source_bytes
    omitted: list[str] = []

    def take(paths: Sequence[str]) -> list[SourceFile]:
        nonlocal budget
        out: list[SourceFile] = []
        for path in paths:
            data = tree.read(path, max_file_bytes + 1)
            if data is None:
                continue
            if b"\0" in data[:8000]:
                continue  # binary: nothing a reviewer reads
            if budget <= 0:
                omitted.append(path)
                continue
            cut = min(max_file_bytes, budget)
            out.append(SourceFile(path=path, text=_decoded(data[:cut]), truncated=len(data) > cut))
            budget -= min(len(data), cut)
        return out

    all_paths = tree.paths()
    guidance_paths = [p for p in all_paths if match_any(guidance_globs, p)]
    touched = [p for p in pr.touched_paths() if p not in guidance_paths]
    guidance = take(guidance_paths)
    sources = take(touched)
    return DraftInput(
        task_id=task_id,
        task_prompt=task_prompt,
        base_commit=tree.commit,
        pr=pr,
        guidance=guidance,
        base_sources=sources,
        omitted=omitted,
    )
