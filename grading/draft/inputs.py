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
from typing import Any

from pydantic import BaseModel, ConfigDict

from grading.basetree import BaseTree, ObjectMissing
from grading.diffs import read_diff
from grading.draft.pr import PullRequest, ReviewComment
from grading.globs import match_any
from grading.path_lists import quote_path

DEFAULT_GUIDANCE_GLOBS = ("CONTRIBUTING.md", "AGENTS.md", "CLAUDE.md", "docs/dev/**", "**/CONTRIBUTING.md")
# Why a file the drafter would have read is not in its input (DraftInput.omitted).
OVER_BUDGET = "left out for size: the source budget was spent"
NOT_AVAILABLE = "object not available in this checkout"
MAX_FILE_BYTES = 40_000  # one file's share; a longer file is cut and marked so
MAX_SOURCE_BYTES = 240_000  # guidance and base source together
# The PR material sent to the model, in characters (about a quarter of that in tokens): with the sources
# above it stays well inside a 200k-token context. Kept in this order: description, diff, review threads,
# reviews, conversation; what does not fit is listed in the input.
MAX_PR_CHARS = 400_000
MAX_DESCRIPTION_CHARS = 20_000
_ENTRY_OVERHEAD = 80  # the line a comment is rendered with (who, where) beside its own text


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
    # Files the drafter would have read and does not, each "path (why)": left out once MAX_SOURCE_BYTES was
    # reached, or not held by the checkout (a partial clone, a pruned or damaged object store).
    omitted: list[str] = []
    pr_left_out: list[str] = []  # PR material left out once MAX_PR_CHARS was reached

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
    max_pr_chars: int = MAX_PR_CHARS,
) -> DraftInput:
    """Collect the drafter's input from the PR and the repository tree at the task's base commit."""
    budget = max_source_bytes
    omitted: list[str] = []

    def take(paths: Sequence[str]) -> list[SourceFile]:
        nonlocal budget
        out: list[SourceFile] = []
        for path in paths:
            # A name that is not UTF-8 is shown C-quoted, as git shows it: the request must be text.
            shown = quote_path(path)
            try:
                data = tree.read(path, max_file_bytes + 1)
            except ObjectMissing:
                omitted.append(f"{shown} ({NOT_AVAILABLE})")
                continue
            if data is None:
                continue  # not at the base commit: the PR adds it, and the diff shows it whole
            if b"\0" in data[:8000]:
                continue  # binary: nothing a reviewer reads
            if budget <= 0:
                omitted.append(f"{shown} ({OVER_BUDGET})")
                continue
            cut = min(max_file_bytes, budget)
            out.append(SourceFile(path=shown, text=_decoded(data[:cut]), truncated=len(data) > cut))
            budget -= min(len(data), cut)
        return out

    all_paths, unlisted = tree.paths_report()
    for directory in unlisted:
        where = f"{quote_path(directory)}/" if directory else "the whole tree"
        omitted.append(f"{where} ({NOT_AVAILABLE}: its guidance files cannot be listed)")
    guidance_paths = [p for p in all_paths if match_any(guidance_globs, p)]
    touched = [p for p in pr.touched_paths() if p not in guidance_paths]
    guidance = take(guidance_paths)
    sources = take(touched)
    pr, pr_left_out = fit_pr(pr, max_pr_chars)
    return DraftInput(
        task_id=task_id,
        task_prompt=task_prompt,
        base_commit=tree.commit,
        pr=pr,
        pr_left_out=pr_left_out,
        guidance=guidance,
        base_sources=sources,
        omitted=omitted,
    )


def _comment_chars(comment: ReviewComment) -> int:
    return len(comment.body) + len(comment.hunk()[0]) + len(comment.path) + _ENTRY_OVERHEAD


def _diff_parts(diff: str) -> list[tuple[str, str]]:
    """The diff cut at its files: (label, text) each; what the reader could not split stays one part."""
    parsed = read_diff(diff, "the PR's diff", strict=False)
    parts = []
    for f in parsed.files:
        text = "\n".join(parsed.lines[f.first_line : f.end_line]) + "\n"
        parts.append((f.change.new_path or f.change.old_path or "?", text))
    if parsed.unparsed_from is not None or not parts:
        start = parsed.files[-1].end_line if parsed.files else 0
        rest = "\n".join(parsed.lines[start:])
        if rest.strip():
            parts.append(("the rest of the diff", rest + "\n"))
    return parts


def fit_pr(pr: PullRequest, max_chars: int = MAX_PR_CHARS) -> tuple[PullRequest, list[str]]:
    """``pr`` cut to about ``max_chars`` of material, and what was left out, one line each.

    What a maintainer's rubric rests on goes first: the description (up to MAX_DESCRIPTION_CHARS), the
    diff (whole files), the review threads (every thread's first comment before any reply), the reviews,
    then the conversation. Once something does not fit, everything after it in that order is left out, so
    a kept reply always has the comment it answers."""
    budget = max_chars - len(pr.title)
    left_out: list[str] = []
    body = pr.body
    if len(body) > min(MAX_DESCRIPTION_CHARS, max(budget, 0)):
        cut = max(0, min(MAX_DESCRIPTION_CHARS, budget))
        left_out.append(f"the description past its first {cut} characters (of {len(body)})")
        body = body[:cut]
    budget -= len(body)
    full = True

    diff = pr.diff
    if len(diff) > budget:
        kept_parts, dropped = [], []
        for label, text in _diff_parts(diff):
            if full and len(text) <= budget:
                kept_parts.append(text)
                budget -= len(text)
            else:
                full = False
                dropped.append(label)
        diff = "".join(kept_parts)
        shown = ", ".join(dropped[:20]) + (f" and {len(dropped) - 20} more" if len(dropped) > 20 else "")
        left_out.append(f"the diff of {len(dropped)} file{'s' if len(dropped) != 1 else ''}: {shown}")
        full = False
    else:
        budget -= len(diff)

    def take(entries: list[Any], size: Any, what: str) -> list[Any]:
        nonlocal budget, full
        kept = []
        for entry in entries:
            cost = size(entry)
            if not full or cost > budget:
                full = False
                break
            kept.append(entry)
            budget -= cost
        if len(kept) < len(entries):
            left_out.append(f"{len(entries) - len(kept)} of {len(entries)} {what}")
        return kept

    threads = pr.review_threads()
    # Every thread's first comment (what a reviewer asked for) before any reply.
    in_order = [t[0] for t in threads] + [reply for t in threads for reply in t[1:]]
    comments = take(in_order, _comment_chars, "review comments (replies left out before first comments)")
    reviews = take(pr.reviews, lambda r: len(r.body) + _ENTRY_OVERHEAD, "reviews")
    conversation = take(pr.issue_comments, lambda c: len(c.body) + _ENTRY_OVERHEAD, "conversation comments")
    if not left_out:
        return pr, []
    kept = pr.model_copy(
        update={
            "body": body,
            "diff": diff,
            "review_comments": comments,
            "reviews": reviews,
            "issue_comments": conversation,
        }
    )
    return kept, left_out
