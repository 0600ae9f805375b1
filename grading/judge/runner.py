"""The judge runner (§4): one entry point for every backend, real or scripted.

:func:`judge_diff` renders the request, answers from the cache when it can, calls the backend otherwise,
and accepts a reply only when it covers every item id exactly once, with a reason and with locations that
exist in the diff. A rejected reply is asked again (``attempts``); when every attempt is rejected the result
is a judge failure: no verdicts, never a pass and never a fail. Each verdict comes with the judge's own
finding on its reason (``satisfied`` / ``violated``); a verdict that disagrees with its finding is flagged
and its item judged once more, and a second disagreement is a judge failure. ``needs_tree`` blockers are
not sent with the others: given the repository at the base commit (``base_tree``) and a backend that can
use tools, each is judged by the tree judge (:mod:`grading.judge.tree`), its cost counted apart; otherwise
it is listed as not measured, with the reason. The judge reads binary patches as one line each
(``grading.binary_text.judge_text``); a diff still over its size limit is not judged and no call is made: the
result says it is too large to review (``too_large_to_review``), which makes a run not mergeable, and is
no judge failure. :func:`judge_sweep` judges many diffs under a concurrency limit.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from grading.basetree import BaseTree
from grading.binary_text import judge_text
from grading.diffs import read_diff
from grading.errors import InputError
from grading.judge.backend import Backend, BackendError, BackendReply, BatchBackend, JudgeRequest
from grading.judge.cache import CachedVerdicts, VerdictCache, cache_key, in_regrade_sample
from grading.judge.cost import PriceTable
from grading.judge.models import (
    FINDING_VERDICT,
    Finding,
    ItemVerdict,
    JudgeResult,
    Location,
    TreeBudget,
    Usage,
    VerdictValue,
)
from grading.judge.prompt import (
    DEFAULT_MAX_DIFF_CHARS,
    INSTRUCTIONS,
    JudgeItem,
    git_dir_note,
    redraw_nonce,
    render_request,
    render_rubric_text,
    select_items,
    self_ignoring_note,
    special_files_note,
    too_large_to_review,
)
from grading.judge.tree import (
    ReplyRejected,
    TreeTools,
    added_paths,
    as_tool_backend,
    judge_tree_item,
    supports_tree,
    tree_request,
)
from grading.path_lists import SelfIgnoringDir
from grading.schema import Rubric, TaskSpec

# stop reasons that mean the reply was cut off (Anthropic, OpenAI)
TRUNCATED_STOP_REASONS = {"max_tokens", "length", "model_context_window_exceeded"}
REFUSED_STOP_REASONS = {"refusal", "content_filter"}


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


# --- where a verdict may point: the diff-location index ----------------------------------------------------


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


class DiffIndex:
    """Line numbers each file shows in the diff: new side (added and context lines), old side (removed and
    context lines). Its paths are the ones ``grading.diffs`` gives scope and integrity."""

    def __init__(self) -> None:
        self.new_lines: dict[str, set[int]] = {}
        self.old_lines: dict[str, set[int]] = {}

    def has(self, location: Location) -> bool:
        table = self.new_lines if location.side == "new" else self.old_lines
        # A judge may cite the path as the diff header spells it ("b/src/x.py") or with a leading slash.
        for path in (location.file, _strip_prefix(location.file), location.file.lstrip("/")):
            if location.line in table.get(path, ()):
                return True
        return False

    def files(self) -> list[str]:
        return sorted(set(self.new_lines) | set(self.old_lines))


class DiffAndTreeIndex(DiffIndex):
    """Where a tree-judged verdict may point: a line of the diff, or an old-side line of the base tree."""

    def __init__(self, diff: DiffIndex, tools: TreeTools) -> None:
        super().__init__()
        self.new_lines, self.old_lines = diff.new_lines, diff.old_lines
        self.tools = tools

    def has(self, location: Location) -> bool:
        if super().has(location):
            return True
        return location.side == "old" and self.tools.has_line(_strip_prefix(location.file), location.line)


def index_diff(diff_text: str) -> DiffIndex:
    """Build the :class:`DiffIndex` of a unified diff with :func:`grading.diffs.read_diff`, leniently: files
    after a part it cannot read are left out (no location in them is accepted)."""
    index = DiffIndex()
    parsed = read_diff(diff_text, strict=False)
    for diff_file in parsed.files:
        old_path, new_path = diff_file.change.old_path, diff_file.change.new_path
        for hunk in diff_file.hunks:
            old_set = index.old_lines.setdefault(old_path, set()) if old_path is not None else set()
            new_set = index.new_lines.setdefault(new_path, set()) if new_path is not None else set()
            for kind, old_no, new_no, _ in parsed.hunk_lines(hunk):
                if kind != "add" and old_no is not None:
                    old_set.add(old_no)
                if kind != "del" and new_no is not None:
                    new_set.add(new_no)
    return index


# --- replies ---------------------------------------------------------------------------------------------


class _ReplyLocation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str
    line: StrictInt
    side: Literal["new", "old"]


class _ReplyVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    reason: Annotated[str, Field(min_length=1)]
    finding: Finding
    verdict: VerdictValue
    locations: list[_ReplyLocation]


class _Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdicts: list[_ReplyVerdict]


class RejectedReply(Exception):
    """A reply that cannot be counted; the runner asks again, then records a judge failure."""


def check_reply(reply: BackendReply, item_ids: list[str], index: DiffIndex) -> list[_ReplyVerdict]:
    """The reply's verdicts when it covers every id exactly once with valid locations; else RejectedReply."""
    if reply.refused or (reply.stop_reason or "") in REFUSED_STOP_REASONS:
        raise RejectedReply("refused")
    if (reply.stop_reason or "") in TRUNCATED_STOP_REASONS:
        raise RejectedReply(f"truncated (stop reason {reply.stop_reason})")
    if not reply.text or not reply.text.strip():
        raise RejectedReply("empty reply")
    try:
        parsed = _Reply.model_validate_json(reply.text.strip())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise RejectedReply(f"malformed reply: {where}: {first['msg']}") from None
    seen: list[str] = [v.id for v in parsed.verdicts]
    duplicates = sorted({i for i in seen if seen.count(i) > 1})
    missing = [i for i in item_ids if i not in seen]
    extra = sorted({i for i in seen if i not in item_ids})
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if extra:
        problems.append("unknown " + ", ".join(extra))
    if duplicates:
        problems.append("more than one verdict for " + ", ".join(duplicates))
    if problems:
        raise RejectedReply("does not cover every id exactly once: " + "; ".join(problems))
    if any(not v.reason.strip() for v in parsed.verdicts):
        raise RejectedReply("a verdict has a blank reason")
    bad = [
        f"{v.id}: {loc.file}:{loc.line} ({loc.side})"
        for v in parsed.verdicts
        for loc in v.locations
        if not index.has(Location(file=loc.file, line=loc.line, side=loc.side))
    ]
    if bad:
        raise RejectedReply("cites locations that are not in the diff: " + "; ".join(bad[:5]))
    order = {item_id: n for n, item_id in enumerate(item_ids)}
    return sorted(parsed.verdicts, key=lambda v: order[v.id])


# --- consistency ---------------------------------------------------------------------------------------


def finding_disagrees(verdict: VerdictValue, finding: Finding) -> bool:
    """True when the verdict is not the one the judge's own finding on its reason implies (§4 consistency):
    "satisfied" goes with "pass", "violated" with "fail". The judge states the finding right after the
    reason and before the verdict, so a reason that argues the other way shows up here, in the judge's own
    words, instead of through a keyword guess at the reason's polarity."""
    return FINDING_VERDICT[finding] != verdict


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

    async def ask(self, request: JudgeRequest) -> tuple[list[_ReplyVerdict], str] | None:
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


def _item_verdict(v: _ReplyVerdict, item: JudgeItem, model_id: str, flagged: bool) -> ItemVerdict:
    return ItemVerdict(
        item_id=v.id,
        kind=item.kind,
        verdict=v.verdict,
        finding=v.finding,
        reason=v.reason,
        locations=[Location(file=loc.file, line=loc.line, side=loc.side) for loc in v.locations],
        flagged_inconsistent=flagged,
        model_id=model_id,
    )


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

    def check(reply: BackendReply, item_ids: list[str]) -> list[_ReplyVerdict]:
        try:
            return check_reply(reply, item_ids, index)
        except RejectedReply as exc:
            raise ReplyRejected(str(exc)) from None

    blockers = {b.id: b for b in rubric.blockers}
    note = self_ignoring_note(self_ignoring_dirs)
    git_note = git_dir_note(git_dir_changes)
    special_note = special_files_note(special_files)
    verdicts = list(result.verdicts)
    records = []
    usage = Usage()
    errors = list(result.attempt_errors)
    flags = result.consistency_flags
    failures: list[str] = []
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
            ignored_note=note,
            git_dir_note=git_note,
            special_files_note=special_note,
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
        "tree_base_commit": base_tree.commit,
        "tree": records,
        "tree_usage": usage,
        "attempt_errors": errors,
        "consistency_flags": flags,
    }
    if failures:
        update["failure"] = "tree judge: " + "; ".join(failures)
        update["verdicts"] = []
    return result.model_copy(update=update)


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
    by_id = {item.id: item for item in items}
    if (too_large := too_large_to_review(diff_text, settings.max_diff_chars)) is not None:
        return JudgeResult(
            judge=backend.spec,
            scripted=backend.scripted,
            not_measured=not_measured,
            config_blocker=config_edited,
            too_large_to_review=too_large,
        )
    note = self_ignoring_note(self_ignoring_dirs)
    git_note = git_dir_note(git_dir_changes)
    special_note = special_files_note(special_files)
    request = render_request(
        task,
        rubric,
        items,
        diff_text,
        max_diff_chars=settings.max_diff_chars,
        ignored_note=note,
        git_dir_note=git_note,
        special_files_note=special_note,
    )
    key = cache_key(backend, request)
    result = JudgeResult(
        judge=backend.spec,
        scripted=backend.scripted,
        not_measured=not_measured,
        cache_key=key,
        config_blocker=config_edited,
    )

    bypass: Literal["no_cache", "regrade_sample"] | None = None
    if settings.no_cache:
        bypass = "no_cache"
    elif in_regrade_sample(key, settings.regrade_sample, settings.regrade_seed):
        bypass = "regrade_sample"
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
    answer = await session.ask(request)
    verdicts: list[ItemVerdict] = []
    failure: str | None = None
    if answer is None:
        failure = "no usable reply: " + (session.errors[-1] if session.errors else "no call made")
    else:
        replies, model_id = answer
        result.model_id = model_id
        verdicts = [_item_verdict(v, by_id[v.id], model_id, False) for v in replies]
        flagged = [
            v.item_id
            for v in verdicts
            if settings.consistency_check
            and v.finding is not None
            and finding_disagrees(v.verdict, v.finding)
        ]
        if flagged:
            result.consistency_flags = len(flagged)
            again_items = [by_id[item_id] for item_id in flagged]
            again_request = render_request(
                task,
                rubric,
                again_items,
                diff_text,
                max_diff_chars=settings.max_diff_chars,
                ignored_note=note,
                git_dir_note=git_note,
                special_files_note=special_note,
            )
            again = await session.ask(again_request)
            if again is None:
                failure = "re-judging the items whose verdict disagreed with their finding failed: " + (
                    session.errors[-1] if session.errors else "no call made"
                )
            else:
                result.rejudged = len(flagged)
                again_replies, again_model = again
                fresh = {v.id: _item_verdict(v, by_id[v.id], again_model, True) for v in again_replies}
                verdicts = [fresh.get(v.item_id, v) for v in verdicts]
                # A verdict that disagrees with its own finding a second time cannot be counted either way.
                twice = [
                    v.item_id
                    for v in fresh.values()
                    if v.finding is not None and finding_disagrees(v.verdict, v.finding)
                ]
                result.consistency_flags += len(twice)
                if twice:
                    failure = (
                        f"inconsistent: the verdict on {', '.join(twice)} disagreed with its own "
                        "finding again after re-judging"
                    )

    result.calls = session.calls
    result.retries = session.retries
    result.usage = session.usage
    result.attempt_errors = session.errors
    if failure is not None:
        result.failure = failure
        return result
    result.verdicts = verdicts
    if cache is not None:
        entry = CachedVerdicts(
            judge=backend.spec,
            model_id=result.model_id,
            verdicts=verdicts,
            consistency_flags=result.consistency_flags,
            rejudged=result.rejudged,
            usage=result.usage,
        )
        if stored is None:
            await asyncio.to_thread(cache.put, key, entry)
        if bypass is not None:
            await asyncio.to_thread(cache.record_regrade, key, entry)
    return result


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


# --- sweeps ------------------------------------------------------------------------------------------------


class SweepJob(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str  # what the progress line and the report call this diff (usually the run directory)
    task: TaskSpec
    rubric: Rubric
    diff_text: str
    config_edited: bool = False
    self_ignoring_dirs: list[SelfIgnoringDir] = []  # named after the diff (§3)
    git_dir_changes: list[str] = []  # paths under .git the run changed, named after the diff (§3)
    special_files: list[str] = []  # FIFOs, sockets and devices left in the work tree, named after it (§3)


class SweepResult(BaseModel):
    results: list[JudgeResult]  # in the order of the jobs
    labels: list[str]
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    usage: Usage = Usage()  # the diff-only judge
    tree_usage: Usage = Usage()  # the tree judge (needs_tree blockers), reported apart (§9)
    tree_calls: int = 0


Progress = Callable[[int, int, str, JudgeResult], None]


class BatchingBackend:
    """Collects the calls a sweep makes at about the same time and sends them as one batch
    (``backend.complete_many``, e.g. Anthropic Message Batches); retries and re-judgements form later batches.
    Everything else (spec, model, render, decoding: so the cache key) is the wrapped backend's."""

    def __init__(self, backend: BatchBackend, *, window: float = 0.2) -> None:
        self.inner = backend
        self.spec = backend.spec
        self.model = backend.model
        self.scripted = backend.scripted
        self.decoding = backend.decoding
        self.batch = True
        self.window = window
        self.batches = 0
        self._pending: list[tuple[JudgeRequest, asyncio.Future[BackendReply]]] = []
        self._flush: asyncio.Task[None] | None = None

    def render(self, request: JudgeRequest) -> dict[str, Any]:
        return self.inner.render(request)

    async def complete(self, request: JudgeRequest) -> BackendReply:
        future: asyncio.Future[BackendReply] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._flush is None or self._flush.done():
            self._flush = asyncio.create_task(self._send_after_window())
        return await future

    async def _send_after_window(self) -> None:
        await asyncio.sleep(self.window)
        pending, self._pending = self._pending, []
        self.batches += 1
        try:
            replies = list(await self.inner.complete_many([request for request, _ in pending]))
            if len(replies) != len(pending):
                raise BackendError(f"the batch answered {len(replies)} of {len(pending)} requests")
        except Exception as exc:
            # Every waiting call must wake up: an unresolved future would hang the sweep.
            failure = exc if isinstance(exc, BackendError) else BackendError(f"batch failed: {exc!r}")
            replies = [failure for _ in pending]
        for (_, future), reply in zip(pending, replies, strict=True):
            if future.done():
                continue
            if isinstance(reply, BaseException):
                future.set_exception(reply)
            else:
                future.set_result(reply)


async def judge_sweep(
    jobs: list[SweepJob],
    backend: Backend,
    *,
    cache: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
    progress: Progress | None = None,
    base_tree: BaseTree | None = None,
) -> SweepResult:
    """Judge many diffs, at most ``settings.concurrency`` at once; ``progress(done, total, label, result)``
    after each. A diff the judge cannot be shown becomes a judge failure for that run, not an abort.
    ``base_tree`` (the task's base commit; the jobs share a task) lets the tree judge decide needs_tree
    blockers (:func:`judge_diff`)."""
    settings = settings or JudgeSettings()
    if (
        getattr(backend, "batch", False)
        and hasattr(backend, "complete_many")
        and not isinstance(backend, BatchingBackend)
    ):
        backend = BatchingBackend(cast(BatchBackend, backend))
    limit = asyncio.Semaphore(settings.concurrency)
    results: list[JudgeResult | None] = [None] * len(jobs)
    done = 0
    # Calls sent together all pay the provider's prompt-cache write for the static prefix they share
    # (it is readable only once the writing call is answered). So the first call for each distinct prefix
    # goes alone, and the jobs sharing it start once a call has written it. Batches are left alone.
    priming = settings.concurrency > 1 and not backend.scripted and not isinstance(backend, BatchingBackend)
    prefixes = [static_prefix(job) for job in jobs] if priming else [None] * len(jobs)
    primed: set[str] = set()
    leaders = {prefix: asyncio.Lock() for prefix in prefixes if prefix is not None}

    async def judge(job: SweepJob) -> JudgeResult:
        async with limit:
            try:
                return await judge_diff(
                    job.task,
                    job.rubric,
                    job.diff_text,
                    backend,
                    config_edited=job.config_edited,
                    cache=cache,
                    settings=settings,
                    self_ignoring_dirs=job.self_ignoring_dirs,
                    base_tree=base_tree,
                    git_dir_changes=job.git_dir_changes,
                    special_files=job.special_files,
                )
            except InputError as exc:
                return JudgeResult(judge=backend.spec, scripted=backend.scripted, failure=f"bad input: {exc}")

    async def one(n: int, job: SweepJob) -> None:
        nonlocal done
        prefix = prefixes[n]
        result: JudgeResult | None = None
        if prefix is not None and prefix not in primed:
            async with leaders[prefix]:
                if prefix not in primed:
                    result = await judge(job)
                    # Once a call was tried the others may go (a cache hit or bad input tried none).
                    if result.calls or result.attempt_errors:
                        primed.add(prefix)
        if result is None:
            result = await judge(job)
        results[n] = result
        done += 1
        if progress is not None:
            progress(done, len(jobs), job.label, result)

    await asyncio.gather(*(one(n, job) for n, job in enumerate(jobs)))
    final = [r for r in results if r is not None]
    usage = Usage()
    tree_usage = Usage()
    for r in final:
        usage = usage + r.usage
        tree_usage = tree_usage + r.tree_usage
    return SweepResult(
        results=final,
        labels=[job.label for job in jobs],
        calls=sum(r.calls for r in final),
        cache_hits=sum(1 for r in final if r.cache_hit),
        failures=sum(1 for r in final if r.failure is not None),
        usage=usage,
        tree_usage=tree_usage,
        tree_calls=sum(rec.calls for r in final for rec in r.tree),
    )


def static_prefix(job: SweepJob) -> str:
    """What a job's calls share with other jobs' calls at the start of the prompt: the instructions and the
    rubric part (task, items), which the provider caches; the diff comes after it."""
    items, _ = select_items(job.rubric, config_edited=job.config_edited)
    text = INSTRUCTIONS + render_rubric_text(job.task, job.rubric, items)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def diff_sha256(diff_text: str) -> str:
    """sha256 of the diff's bytes (UTF-8), as the scripted judge keys its answers."""
    return hashlib.sha256(diff_text.encode("utf-8", errors="surrogateescape")).hexdigest()
