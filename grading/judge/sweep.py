"""Judging many diffs (:func:`judge_sweep`): at most ``settings.concurrency`` at once, each through the
runner's :func:`grading.judge.runner.judge_diff`; the first call for each rubric prefix sent alone so the
others read the provider's prompt cache; a batch backend's concurrent calls collected into one batch
(:class:`BatchingBackend`)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import queue
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from grading.basetree import BaseTree
from grading.errors import InputError
from grading.judge.backend import Backend, BackendReply, BatchBackend, JudgeRequest
from grading.judge.batching import answer_batch
from grading.judge.cache import CachedVerdicts, SqliteCache, VerdictCache
from grading.judge.models import JudgeResult, Usage
from grading.judge.prompt import INSTRUCTIONS, render_rubric_text, select_items
from grading.judge.runner import JudgeSettings, judge_diff
from grading.path_lists import SelfIgnoringDir
from grading.schema import Rubric, TaskSpec


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
        replies = await answer_batch(self.inner, [request for request, _ in pending])
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
    # SQLite writes (a connection and a commit each, slow when the disk is busy) go to one writer thread,
    # so a slot is free again once its call is answered; the sweep returns once every write is stored.
    behind = _WriteBehind(cache) if isinstance(cache, SqliteCache) else None
    cache = behind or cache
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

    try:
        async with _session(backend):
            await asyncio.gather(*(one(n, job) for n, job in enumerate(jobs)))
    finally:
        if behind is not None:
            await asyncio.to_thread(behind.close)  # also when interrupted: what was judged stays stored
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


class _WriteBehind:
    """A verdict cache whose writes are queued for one writer thread, which stores them in order, instead
    of made by the caller. A read sees what is stored, else the first write queued for its key (what
    ``INSERT OR IGNORE`` will keep), so a diff judged twice in one sweep is still a hit. :meth:`close`
    waits for the queue to drain and raises the first write's error, if any. Its writes never block, so
    the runner makes them on the event loop (``queues_writes``)."""

    queues_writes = True

    def __init__(self, cache: VerdictCache) -> None:
        self.inner = cache
        self._lock = threading.Lock()
        self._queued: dict[str, CachedVerdicts] = {}
        self._writes: queue.SimpleQueue[tuple[bool, str, CachedVerdicts] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._writer = threading.Thread(target=self._write, name="verdict-cache-writer", daemon=True)
        self._writer.start()

    def get(self, key: str) -> CachedVerdicts | None:
        stored = self.inner.get(key)
        if stored is not None:
            return stored
        with self._lock:
            return self._queued.get(key)

    def put(self, key: str, entry: CachedVerdicts) -> None:
        with self._lock:
            self._queued.setdefault(key, entry)
        self._writes.put((True, key, entry))

    def record_regrade(self, key: str, entry: CachedVerdicts) -> None:
        self._writes.put((False, key, entry))

    def _write(self) -> None:
        while (write := self._writes.get()) is not None:
            is_put, key, entry = write
            try:
                if is_put:
                    self.inner.put(key, entry)
                else:
                    self.inner.record_regrade(key, entry)
            except Exception as exc:  # raised by close(), in the sweep's own frame
                self._error = self._error or exc

    def close(self) -> None:
        self._writes.put(None)
        self._writer.join()
        if self._error is not None:
            raise self._error


def _session(backend: Backend) -> AbstractAsyncContextManager[None]:
    """The SDK session of the backend (or of the backend a limit or a batch wraps): the sweep's calls share
    one client and its connections (``SdkBackend.session``). None for a backend without one."""
    inner: object = backend
    while inner is not None:
        session = getattr(inner, "session", None)
        if session is not None:
            return cast(AbstractAsyncContextManager[None], session())
        inner = getattr(inner, "inner", None)
    return contextlib.nullcontext()


def static_prefix(job: SweepJob) -> str:
    """What a job's calls share with other jobs' calls at the start of the prompt: the instructions and the
    rubric part (task, items), which the provider caches; the diff comes after it."""
    items, _ = select_items(job.rubric, config_edited=job.config_edited)
    text = INSTRUCTIONS + render_rubric_text(job.task, job.rubric, items)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
