"""The tree judge (§9): ``needs_tree`` blockers judged by a model that may read the base tree.

The diff-only judge cannot decide a blocker such as "every backend is changed": that needs the code the
diff does not show. Here such a blocker is judged on its own, in a tool conversation: the model sees the
usual request (instructions, the one item, the fenced diff) and three tools that read the repository at
the task's base commit from its git objects (:class:`grading.basetree.BaseTree`):

- ``list_directory(path)``: the entries of a directory;
- ``read_file(path, start_line, end_line, start_column)``: numbered lines of a file (a long line in pieces);
- ``search_tree(pattern, path, fixed_string, ignore_case)``: ``git grep`` over the commit's tree.

The tools and their answers are :mod:`grading.judge.tree_tools`. Never the agent's workspace, never the
work tree, never outside the repository: a path is relative to the repository root, ``..`` and absolute
paths are refused, a symlink is followed only while it stays inside the tree, and a submodule is not read.
A file only the change adds is answered as such: its content is the diff. Every answer is cut to
``TreeBudget.max_answer_chars`` and fenced like the diff, with a nonce of its own. The budget (tool calls,
tokens) covers every conversation of an item; going over it is a judge failure for that item, with the
limit named. Verdicts are cached under a key that adds the base commit, and the tool transcript stays with
the result (metrics.json ``details.judge.tree``) for audit.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from grading.basetree import BaseTree
from grading.diffs import read_diff
from grading.errors import InputError
from grading.judge.backend import (
    Backend,
    BackendError,
    JudgeRequest,
    ToolAnswer,
    ToolBackend,
    ToolExchange,
)
from grading.judge.cache import KEY_VERSION, CachedVerdicts, VerdictCache
from grading.judge.cost import PriceTable
from grading.judge.models import (
    FINDING_VERDICT,
    ItemVerdict,
    ToolUse,
    TreeBudget,
    TreeItemRecord,
    Usage,
)
from grading.judge.prompt import (
    NONCE_PLACEHOLDER,
    JudgeItem,
    fence_base_tree,
    redraw_nonce,
    render_request,
    tree_instructions,
    with_nonce,
)
from grading.judge.tree_tools import TREE_TOOLS, TreeTools
from grading.schema import Rubric, TaskSpec


def base_tree_for(task: TaskSpec, checkout: Path, task_file: Path) -> BaseTree:
    """The repository at ``checkout`` at the task's ``base_commit``, for the tree judge; InputError naming
    task.json when it has no base_commit, or the checkout when the commit is not in it."""
    if not task.base_commit:
        raise InputError(
            task_file, "required to judge needs_tree blockers with the repository checkout", "base_commit"
        )
    return BaseTree(checkout, task.base_commit)


def supports_tree(backend: Backend) -> bool:
    """Whether a backend can hold the tree judge's tool conversation (anthropic and openai can)."""
    return all(callable(getattr(backend, name, None)) for name in ("render_tools", "complete_tools"))


def added_paths(diff_text: str) -> list[str]:
    """The files ``diff_text`` adds (new path with no old path)."""
    parsed = read_diff(diff_text, strict=False)
    return [
        f.change.new_path for f in parsed.files if f.change.old_path is None and f.change.new_path is not None
    ]


def tree_request(
    task: TaskSpec,
    rubric: Rubric,
    item: JudgeItem,
    diff_text: str,
    base_commit: str,
    budget: TreeBudget,
    *,
    max_diff_chars: int,
    ignored_note: str = "",
    git_dir_note: str = "",
    special_files_note: str = "",
) -> JudgeRequest:
    """The tree judge's request for one needs_tree blocker: the diff-only request for that item alone,
    with the instructions that name the base commit, the tools and the budget."""
    request = render_request(
        task,
        rubric,
        [item],
        diff_text,
        max_diff_chars=max_diff_chars,
        ignored_note=ignored_note,
        git_dir_note=git_dir_note,
        special_files_note=special_files_note,
    )
    return request.model_copy(update={"instructions": tree_instructions(base_commit, budget)})


def tree_cache_key(backend: ToolBackend, request: JudgeRequest, base_commit: str) -> str:
    """The verdict cache key of a tree-judged item: the first turn's exact body with the tools (nonce as a
    placeholder), the model id, the decoding, and the base commit."""
    body = backend.render_tools(with_nonce(request, NONCE_PLACEHOLDER), TREE_TOOLS, [])
    payload = {
        "v": KEY_VERSION,
        "kind": "tree",
        "base_commit": base_commit,
        "model": backend.model,
        "decoding": backend.decoding,
        "body": body,
    }
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class BudgetExhausted(Exception):
    """The item's budget is spent before a verdict: a judge failure for the item, naming the limit."""


class ReplyRejected(Exception):
    """A final reply that cannot be counted (the runner's coverage and location checks): asked again."""


class TreeItemResult(BaseModel):
    verdict: ItemVerdict | None
    record: TreeItemRecord
    attempt_errors: list[str] = []
    consistency_flags: int = 0


class _TreeSession:
    """One needs_tree blocker: its conversations, the budget they share, and the transcript."""

    def __init__(
        self,
        backend: ToolBackend,
        tools: TreeTools,
        budget: TreeBudget,
        prices: PriceTable,
        check: Any,
    ) -> None:
        self.backend = backend
        self.tools = tools
        self.budget = budget
        self.prices = prices
        self.check = check  # (BackendReply, [item id]) -> verdicts, or raises ReplyRejected
        self.calls = 0
        self.tool_calls = 0
        self.conversations = 0
        self.tokens = 0
        self.usage = Usage()
        self.transcript: list[ToolUse] = []
        self.unavailable: list[str] = []

    async def converse(self, request: JudgeRequest) -> tuple[Any, str]:
        self.conversations += 1
        sent = redraw_nonce(request)  # one nonce per conversation: every turn resends the same diff block
        turns: list[ToolExchange] = []
        while True:
            reply = await self.backend.complete_tools(sent, TREE_TOOLS, turns)
            self.calls += 1
            self.usage = self.usage + self.prices.cost(reply.usage, self.backend.model, reply.model_id)
            u = reply.usage
            self.tokens += u.input_tokens + u.cache_write_tokens + u.cache_read_tokens + u.output_tokens
            if self.tokens > self.budget.max_tokens:
                raise BudgetExhausted(
                    f"token budget exhausted: {self.tokens} tokens used, the budget is "
                    f"{self.budget.max_tokens}"
                )
            if not reply.calls:
                return self.check(reply.final(), request.item_ids), reply.model_id
            if self.tool_calls + len(reply.calls) > self.budget.max_tool_calls:
                raise BudgetExhausted(
                    f"tool-call budget exhausted: {self.tool_calls} tool calls made, {len(reply.calls)} "
                    f"more asked for, the budget is {self.budget.max_tool_calls}"
                )
            answers: list[ToolAnswer] = []
            for call in reply.calls:
                self.tool_calls += 1
                text, is_error = await asyncio.to_thread(self.tools.answer, call)
                self.unavailable += [p for p in self.tools.met_unavailable if p not in self.unavailable]
                fenced = fence_base_tree(text)
                answers.append(ToolAnswer(call_id=call.id, content=fenced, is_error=is_error))
                self.transcript.append(
                    ToolUse(tool=call.name, arguments=call.arguments, ok=not is_error, answer=fenced)
                )
            turns.append(ToolExchange(text=reply.text, calls=reply.calls, answers=answers))


async def judge_tree_item(
    backend: ToolBackend,
    request: JudgeRequest,
    item: JudgeItem,
    tools: TreeTools,
    *,
    budget: TreeBudget,
    prices: PriceTable,
    attempts: int,
    consistency_check: bool,
    check: Any,
    cache: VerdictCache | None,
    no_cache: bool,
) -> TreeItemResult:
    """Judge one needs_tree blocker in a tool conversation (asked again on a rejected reply, and once more
    when the verdict disagrees with its finding), within ``budget``; from the cache when it holds it."""
    commit = tools.tree.commit
    record = TreeItemRecord(item_id=item.id, base_commit=commit, budget=budget)
    key = tree_cache_key(backend, request, commit)
    stored = None if cache is None or no_cache else await asyncio.to_thread(cache.get, key)
    if stored is not None and len(stored.verdicts) == 1 and stored.tree:
        original = stored.tree[0]
        record = original.model_copy(update={"cache_hit": True, "usage": Usage(), "calls": 0})
        return TreeItemResult(verdict=stored.verdicts[0], record=record)

    session = _TreeSession(backend, tools, budget, prices, check)
    errors: list[str] = []
    verdict: ItemVerdict | None = None
    flags = 0
    failure: str | None = None
    flagged = False
    rejected = 0
    while verdict is None and failure is None:
        try:
            replies, model_id = await session.converse(request)
        except BudgetExhausted as exc:
            failure = f"{item.id}: {exc}"
            break
        except BackendError as exc:
            failure = f"{item.id}: backend error: {exc}"
            break
        except ReplyRejected as exc:
            rejected += 1
            errors.append(f"{item.id}: conversation {session.conversations}: {exc}")
            if rejected >= attempts:
                failure = f"{item.id}: no usable reply: {exc}"
            continue
        reply = replies[0]
        if consistency_check and FINDING_VERDICT[reply.finding] != reply.verdict:
            # Judged once more, as the diff-only judge does; a second disagreement cannot be counted.
            flags += 1
            if flagged:
                failure = f"{item.id}: inconsistent: the verdict disagreed with its own finding again"
            flagged = True
            continue
        verdict = reply.item_verdict("blocker", model_id, flagged=flagged, tree_judged=True)
    record = record.model_copy(
        update={
            "failure": failure,
            "calls": session.calls,
            "tool_calls": session.tool_calls,
            "conversations": session.conversations,
            "usage": session.usage,
            "transcript": session.transcript,
            "unavailable": session.unavailable,
        }
    )
    if verdict is not None and cache is not None:
        entry = CachedVerdicts(
            judge=backend.spec,
            model_id=verdict.model_id,
            verdicts=[verdict],
            consistency_flags=flags,
            rejudged=1 if flagged else 0,
            usage=session.usage,
            tree=[record],
        )
        await asyncio.to_thread(cache.put, key, entry)
    return TreeItemResult(verdict=verdict, record=record, attempt_errors=errors, consistency_flags=flags)


def as_tool_backend(backend: Backend) -> ToolBackend:
    return cast(ToolBackend, backend)
