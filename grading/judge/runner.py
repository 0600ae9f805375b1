"""The judge runner (§4): one entry point for every backend, real or scripted.

:func:`judge_diff` renders the request, answers from the cache when it can, calls the backend otherwise,
and accepts a reply only when it covers every item id exactly once, with a reason and with locations that
exist in the diff (the check and the location index are :mod:`grading.judge.replies`). A rejected reply is
asked again (``attempts``); when every attempt is rejected the result is a judge failure: no verdicts,
never a pass and never a fail. Each verdict comes with the judge's own finding on its reason
(``satisfied`` / ``violated``); a verdict that disagrees with its finding is flagged and its item judged
once more, and a second disagreement is a judge failure. ``needs_tree`` blockers are not sent with the
others: given the repository at the base commit (``base_tree``) and a backend that can use tools, each is
judged by the tree judge (:mod:`grading.judge.tree`), its cost counted apart; otherwise it is listed as
not measured, with the reason. The judge reads binary patches as one line each
(``grading.binary_text.judge_text``); a diff still over its size limit is not judged and no call is made:
the result says it is too large to review (``too_large_to_review``), which makes a run not mergeable, and
is no judge failure. :func:`grading.judge.sweep.judge_sweep` judges many diffs under a concurrency limit.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grading.basetree import BaseTree
from grading.binary_text import judge_text
from grading.judge.backend import Backend, BackendError, BackendReply, JudgeRequest
from grading.judge.cache import CachedVerdicts, VerdictCache, cache_key, in_regrade_sample
from grading.judge.cost import PriceTable
from grading.judge.models import (
    ItemVerdict,
    JudgeResult,
    TreeBudget,
    Usage,
)
from grading.judge.prompt import (
    DEFAULT_MAX_DIFF_CHARS,
    JudgeItem,
    git_dir_note,
    redraw_nonce,
    render_request,
    select_items,
    self_ignoring_note,
    special_files_note,
    too_large_to_review,
)
from grading.judge.replies import (
    DiffAndTreeIndex,
    DiffIndex,
    RejectedReply,
    ReplyVerdict,
    check_reply,
    finding_disagrees,
    index_diff,
)
from grading.judge.tree import (
    ReplyRejected,
    TreeItemResult,
    added_paths,
    as_tool_backend,
    judge_tree_item,
    supports_tree,
    tree_request,
)
from grading.judge.tree_tools import TreeTools
from grading.path_lists import SelfIgnoringDir
from grading.schema import Rubric, TaskSpec


class JudgeSettings(BaseModel):
    """How the runner calls a judge. None of these change what the judge sees, so none is in the cache key."""

    model_config = ConfigDict(frozen=True)

    attempts: Annotated[int, Field(ge=1)] = 3  # calls per request before a judge failure
    concurrency: Annotated[int, Field(ge=1)] = 8  # diffs judged at once in a sweep
    no_cache: bool = False  # bypass the cache (the result is still recorded as a regrade)
    regrade_sample: Annotated[float, Field(ge=0, le=1)] = 0.0  # share of cache hits judged again (§9)
    regrade_seed: int = 0
    consistency_check: bool = True
    max_diff_chars: Annotated[int, Field(gt=0)] = DEFAULT_MAX_DIFF_CHARS
    prices: PriceTable = PriceTable()
    # The tree judge's budget per needs_tree blocker. Unlike the settings above it is stated in the tree
    # judge's instructions, so it is part of those items' cache key.
    tree_budget: TreeBudget = TreeBudget()


# --- the runner ------------------------------------------------------------------------------------------


class _Session:
    """Calls for one diff: counts calls, retries and usage, and keeps why replies were rejected."""

    def __init__(self, backend: Backend, settings: JudgeSettings, index: DiffIndex) -> None:
        self.backend = backend
        self.settings = settings
        self.index = index
        self.calls = 0
        self.retries = 0
        self.usage = Usage()
        self.errors: list[str] = []

    def _cost(self, reply: BackendReply) -> Usage:
        if self.backend.scripted:
            return reply.usage.model_copy(update={"cost_usd": 0.0, "cost_known": True})
        batch = bool(getattr(self.backend, "batch", False))
        return self.settings.prices.cost(reply.usage, self.backend.model, reply.model_id, batch=batch)

    async def ask(self, request: JudgeRequest) -> tuple[list[ReplyVerdict], str] | None:
        for attempt in range(1, self.settings.attempts + 1):
            sent = redraw_nonce(request)  # a fresh nonce for every call
            try:
                reply = await self.backend.complete(sent)
            except BackendError as exc:
                self.errors.append(f"call {self.calls + 1}: backend error: {exc}")
                return None
            self.calls += 1
            self.usage = self.usage + self._cost(reply)
            try:
                return check_reply(reply, request.item_ids, self.index), reply.model_id
            except RejectedReply as exc:
                self.errors.append(f"call {self.calls}: {exc}")
                if attempt < self.settings.attempts:
                    self.retries += 1
        return None


NO_CHECKOUT = "no repository checkout was given (--checkout), so no judge could read the base tree"


async def judge_diff(
    task: TaskSpec,
    rubric: Rubric,
    diff_text: str,
    backend: Backend,
    *,
    config_edited: bool,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    self_ignoring_dirs: Sequence[SelfIgnoringDir] = (),
    base_tree: BaseTree | None = None,
    git_dir_changes: Sequence[str] = (),
    special_files: Sequence[str] = (),
) -> JudgeResult:
    """Judge one workspace diff against the rubric. The judge reads it with every binary patch as one line
    (``grading.binary_text.judge_text``); when that text is over ``settings.max_diff_chars`` no call is made
    and the result's ``too_large_to_review`` says so (the agent wrote it: the run is not mergeable, never
    ungradeable). InputError for a diff the judge cannot be shown at all (NUL bytes).

    ``self_ignoring_dirs`` (from ignored_created.txt) are named after the diff (§3). ``base_tree`` (the
    repository at the task's base commit) lets the tree judge decide the ``needs_tree`` blockers; without it,
    or with a backend that cannot use tools, they are not measured and ``not_measured_reason`` says why."""
    settings = settings or JudgeSettings()
    # Computed once: every request below (re-judging, tree items) renders from this text.
    diff_text = judge_text(diff_text)
    result = await _judge_diff_only(
        task,
        rubric,
        diff_text,
        backend,
        config_edited=config_edited,
        cache=cache,
        settings=settings,
        self_ignoring_dirs=self_ignoring_dirs,
        git_dir_changes=git_dir_changes,
        special_files=special_files,
    )
    if not result.not_measured:
        return result
    if result.too_large_to_review is not None:
        return result.model_copy(
            update={"not_measured_reason": "not judged: the change is too large to review"}
        )
    if not supports_tree(backend):
        reason = f"the {backend.spec.split(':', 1)[0]} judge has no tree tools (anthropic and openai have)"
        return result.model_copy(update={"not_measured_reason": reason})
    if base_tree is None:
        return result.model_copy(update={"not_measured_reason": NO_CHECKOUT})
    if result.failure is not None:
        # The run is a judge failure whatever these items say: nothing more is paid for.
        return result.model_copy(update={"not_measured_reason": "not judged: the diff-only judge failed"})
    return await _judge_tree_items(
        task,
        rubric,
        diff_text,
        backend,
        result,
        base_tree,
        cache,
        settings,
        self_ignoring_dirs,
        git_dir_changes,
        special_files,
    )


async def _judge_tree_items(
    task: TaskSpec,
    rubric: Rubric,
    diff_text: str,
    backend: Backend,
    result: JudgeResult,
    base_tree: BaseTree,
    cache: VerdictCache | None,
    settings: JudgeSettings,
    self_ignoring_dirs: Sequence[SelfIgnoringDir],
    git_dir_changes: Sequence[str] = (),
    special_files: Sequence[str] = (),
) -> JudgeResult:
    """The needs_tree blockers, one tree-judge conversation each, merged into the diff-only result."""
    tool_backend = as_tool_backend(backend)
    budget = settings.tree_budget
    tools = TreeTools(base_tree, added_paths(diff_text), max_answer_chars=budget.max_answer_chars)
    index = DiffAndTreeIndex(index_diff(diff_text), tools)

    def check(reply: BackendReply, item_ids: list[str]) -> list[ReplyVerdict]:
        try:
            return check_reply(reply, item_ids, index)
        except RejectedReply as exc:
            raise ReplyRejected(str(exc)) from None

    blockers = {b.id: b for b in rubric.blockers}
    notes = _notes(self_ignoring_dirs, git_dir_changes, special_files)
    outcomes: list[TreeItemResult] = []
    for item_id in result.not_measured:
        blocker = blockers[item_id]
        item = JudgeItem(
            id=blocker.id, kind="blocker", criterion=blocker.criterion, rationale=blocker.rationale
        )
        request = tree_request(
            task,
            rubric,
            item,
            diff_text,
            base_tree.commit,
            budget,
            max_diff_chars=settings.max_diff_chars,
            **notes,
        )
        outcome = await judge_tree_item(
            tool_backend,
            request,
            item,
            tools,
            budget=budget,
            prices=settings.prices,
            attempts=settings.attempts,
            consistency_check=settings.consistency_check,
            check=check,
            cache=cache,
            no_cache=settings.no_cache or result.cache_bypass is not None,
        )
        outcomes.append(outcome)
    return _with_tree_outcomes(result, rubric, base_tree.commit, outcomes)


def _with_tree_outcomes(
    result: JudgeResult, rubric: Rubric, commit: str, outcomes: Sequence[TreeItemResult]
) -> JudgeResult:
    """The diff-only result with the tree judge's verdicts merged in (in rubric order), its records, usage,
    attempt errors and flags; a judge failure, with no verdicts, if any tree item failed."""
    verdicts = list(result.verdicts)
    records = []
    usage = Usage()
    errors = list(result.attempt_errors)
    flags = result.consistency_flags
    failures: list[str] = []
    for outcome in outcomes:
        records.append(outcome.record)
        usage = usage + outcome.record.usage
        errors += outcome.attempt_errors
        flags += outcome.consistency_flags
        if outcome.verdict is not None:
            verdicts.append(outcome.verdict)
        elif outcome.record.failure is not None:
            failures.append(outcome.record.failure)
    # Verdicts in rubric order: blockers first, as the diff-only judge lists them.
    order = {b.id: n for n, b in enumerate(rubric.blockers)}
    verdicts.sort(key=lambda v: (v.kind != "blocker", order.get(v.item_id, len(order))))
    update: dict[str, Any] = {
        "verdicts": verdicts,
        "not_measured": [],
        "tree_base_commit": commit,
        "tree": records,
        "tree_usage": usage,
        "attempt_errors": errors,
        "consistency_flags": flags,
    }
    if failures:
        update["failure"] = "tree judge: " + "; ".join(failures)
        update["verdicts"] = []
    return result.model_copy(update=update)


def _notes(
    self_ignoring_dirs: Sequence[SelfIgnoringDir],
    git_dir_changes: Sequence[str],
    special_files: Sequence[str],
) -> dict[str, str]:
    """The notes every judge request carries after the diff, as keyword arguments of the request builders."""
    return {
        "ignored_note": self_ignoring_note(self_ignoring_dirs),
        "git_dir_note": git_dir_note(git_dir_changes),
        "special_files_note": special_files_note(special_files),
    }


def _cache_bypass(settings: JudgeSettings, key: str) -> Literal["no_cache", "regrade_sample"] | None:
    """Why this call skips a cached answer, if it does."""
    if settings.no_cache:
        return "no_cache"
    if in_regrade_sample(key, settings.regrade_sample, settings.regrade_seed):
        return "regrade_sample"
    return None


async def _judge_diff_only(
    task: TaskSpec,
    rubric: Rubric,
    diff_text: str,
    backend: Backend,
    *,
    config_edited: bool,
    cache: VerdictCache | None,
    settings: JudgeSettings,
    self_ignoring_dirs: Sequence[SelfIgnoringDir],
    git_dir_changes: Sequence[str] = (),
    special_files: Sequence[str] = (),
) -> JudgeResult:
    items, not_measured = select_items(rubric, config_edited=config_edited)
    if (too_large := too_large_to_review(diff_text, settings.max_diff_chars)) is not None:
        return JudgeResult(
            judge=backend.spec,
            scripted=backend.scripted,
            not_measured=not_measured,
            config_blocker=config_edited,
            too_large_to_review=too_large,
        )
    notes = _notes(self_ignoring_dirs, git_dir_changes, special_files)

    def render(chosen: list[JudgeItem]) -> JudgeRequest:
        limit = settings.max_diff_chars
        return render_request(task, rubric, chosen, diff_text, max_diff_chars=limit, **notes)

    request = render(items)
    key = cache_key(backend, request)
    result = JudgeResult(
        judge=backend.spec,
        scripted=backend.scripted,
        not_measured=not_measured,
        cache_key=key,
        config_blocker=config_edited,
    )

    bypass = _cache_bypass(settings, key)
    # Cache reads and writes (SQLite: a connection and a commit each) run in a worker thread, so a sweep's
    # event loop keeps every other call in flight moving meanwhile.
    stored = await asyncio.to_thread(cache.get, key) if cache is not None else None
    if stored is not None and bypass is None:
        return result.model_copy(
            update={
                "model_id": stored.model_id,
                "verdicts": stored.verdicts,
                "cache_hit": True,
                "consistency_flags": stored.consistency_flags,
                "rejudged": stored.rejudged,
            }
        )
    result.cache_bypass = bypass
    if bypass is not None and stored is not None:
        result.previous_verdicts = {v.item_id: v.verdict for v in stored.verdicts}

    session = _Session(backend, settings, index_diff(diff_text))
    verdicts, failure = await _ask_and_rejudge(session, request, items, render, result)
    result.calls = session.calls
    result.retries = session.retries
    result.usage = session.usage
    result.attempt_errors = session.errors
    if failure is not None:
        result.failure = failure
        return result
    result.verdicts = verdicts
    if cache is not None:
        await _store_verdicts(cache, key, result, fresh_key=stored is None)
    return result


async def _ask_and_rejudge(
    session: _Session,
    request: JudgeRequest,
    items: list[JudgeItem],
    render: Callable[[list[JudgeItem]], JudgeRequest],
    result: JudgeResult,
) -> tuple[list[ItemVerdict], str | None]:
    """The verdicts of one call, with the items whose verdict disagrees with its own finding asked again
    (when the consistency check is on); the failure, if any. Sets the model id and the consistency counts
    on ``result``."""
    by_id = {item.id: item for item in items}
    answer = await session.ask(request)
    if answer is None:
        return [], "no usable reply: " + (session.errors[-1] if session.errors else "no call made")
    replies, model_id = answer
    result.model_id = model_id
    verdicts = [v.item_verdict(by_id[v.id].kind, model_id, flagged=False) for v in replies]
    flagged = [
        v.item_id
        for v in verdicts
        if session.settings.consistency_check
        and v.finding is not None
        and finding_disagrees(v.verdict, v.finding)
    ]
    if not flagged:
        return verdicts, None
    result.consistency_flags = len(flagged)
    again = await session.ask(render([by_id[item_id] for item_id in flagged]))
    if again is None:
        return verdicts, "re-judging the items whose verdict disagreed with their finding failed: " + (
            session.errors[-1] if session.errors else "no call made"
        )
    result.rejudged = len(flagged)
    again_replies, again_model = again
    fresh = {v.id: v.item_verdict(by_id[v.id].kind, again_model, flagged=True) for v in again_replies}
    verdicts = [fresh.get(v.item_id, v) for v in verdicts]
    # A verdict that disagrees with its own finding a second time cannot be counted either way.
    twice = [
        v.item_id for v in fresh.values() if v.finding is not None and finding_disagrees(v.verdict, v.finding)
    ]
    result.consistency_flags += len(twice)
    if twice:
        return verdicts, (
            f"inconsistent: the verdict on {', '.join(twice)} disagreed with its own "
            "finding again after re-judging"
        )
    return verdicts, None


async def _store_verdicts(cache: VerdictCache, key: str, result: JudgeResult, *, fresh_key: bool) -> None:
    """The judged verdicts into the cache (when the key was not there) and into its regrade record (when
    the cache was bypassed)."""
    entry = CachedVerdicts(
        judge=result.judge,
        model_id=result.model_id,
        verdicts=result.verdicts,
        consistency_flags=result.consistency_flags,
        rejudged=result.rejudged,
        usage=result.usage,
    )
    # A cache that only queues its writes (the sweep's write-behind) takes them here: a trip through a
    # worker thread would hold the call's slot for two thread switches, long ones on a busy machine.
    store = _call if getattr(cache, "queues_writes", False) else asyncio.to_thread
    if fresh_key:
        await store(cache.put, key, entry)
    if result.cache_bypass is not None:
        await store(cache.record_regrade, key, entry)


async def _call(fn: Callable[[str, CachedVerdicts], None], key: str, entry: CachedVerdicts) -> None:
    fn(key, entry)


def judge_run(
    task: TaskSpec,
    rubric: Rubric,
    diff_text: str,
    backend: Backend,
    *,
    config_edited: bool,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    self_ignoring_dirs: Sequence[SelfIgnoringDir] = (),
    base_tree: BaseTree | None = None,
    git_dir_changes: Sequence[str] = (),
    special_files: Sequence[str] = (),
) -> JudgeResult:
    """Synchronous :func:`judge_diff` (for callers outside an event loop: the CLI, Celery tasks)."""
    return asyncio.run(
        judge_diff(
            task,
            rubric,
            diff_text,
            backend,
            config_edited=config_edited,
            cache=cache,
            settings=settings,
            self_ignoring_dirs=self_ignoring_dirs,
            base_tree=base_tree,
            git_dir_changes=git_dir_changes,
            special_files=special_files,
        )
    )


def diff_sha256(diff_text: str) -> str:
    """sha256 of the diff's bytes (UTF-8), as the scripted judge keys its answers."""
    return hashlib.sha256(diff_text.encode("utf-8", errors="surrogateescape")).hexdigest()
