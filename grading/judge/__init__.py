"""The diff-only rubric judge (§4): prompt rendering and fencing, backends, runner, cache and cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grading.lazy import lazy_interface

# module -> the public names it defines
_PUBLIC: dict[str, tuple[str, ...]] = {
    "grading.judge.backend": ("Backend", "BackendError", "BackendReply", "Decoding", "JudgeRequest"),
    "grading.judge.batching": ("ThreadBatchBackend",),
    "grading.judge.cache": (
        "CachedVerdicts",
        "MemoryCache",
        "RepeatAgreement",
        "SqliteCache",
        "VerdictCache",
        "cache_key",
        "default_cache_path",
        "describe_repeat_agreement",
        "in_regrade_sample",
    ),
    "grading.judge.cost": ("PriceTable", "load_price_table"),
    "grading.judge.limits": (
        "Budget",
        "BudgetExceeded",
        "Limit",
        "LimitedBackend",
        "ProviderLimit",
        "ProviderLimitSpec",
        "SharedProviderLimit",
        "parse_provider_limits",
        "provider_of",
    ),
    "grading.judge.models": ("JudgeResult", "TreeBudget", "Usage"),
    "grading.judge.prompt": (
        "DEFAULT_MAX_DIFF_CHARS",
        "DiffTooLarge",
        "NONCE_BYTES",
        "NONCE_PLACEHOLDER",
        "check_diff_text",
        "draw_nonce",
        "fence_close",
        "fence_open",
        "git_dir_note",
        "render_request",
        "select_items",
        "self_ignoring_note",
        "special_files_note",
        "too_large_to_review",
    ),
    "grading.judge.runner": ("JudgeSettings", "diff_sha256", "judge_run"),
    "grading.judge.scripted": (
        "SCRIPTED_MODEL_ID",
        "ScriptedFile",
        "ScriptedVerdict",
        "load_scripted",
        "render_scripted",
    ),
    "grading.judge.specs": (
        "JudgeSpec",
        "check_second_judge",
        "judge_family",
        "make_backend",
        "model_family",
        "parse_decoding",
        "parse_judge_spec",
        "second_judge_problem",
    ),
    "grading.judge.sweep": ("SweepJob", "judge_sweep"),
    "grading.judge.tree": ("base_tree_for", "supports_tree"),
}
__all__, _MODULE_OF, __getattr__, __dir__ = lazy_interface(__name__, _PUBLIC, globals())

if TYPE_CHECKING:
    from grading.judge.backend import Backend as Backend
    from grading.judge.backend import BackendError as BackendError
    from grading.judge.backend import BackendReply as BackendReply
    from grading.judge.backend import Decoding as Decoding
    from grading.judge.backend import JudgeRequest as JudgeRequest
    from grading.judge.batching import ThreadBatchBackend as ThreadBatchBackend
    from grading.judge.cache import CachedVerdicts as CachedVerdicts
    from grading.judge.cache import MemoryCache as MemoryCache
    from grading.judge.cache import RepeatAgreement as RepeatAgreement
    from grading.judge.cache import SqliteCache as SqliteCache
    from grading.judge.cache import VerdictCache as VerdictCache
    from grading.judge.cache import cache_key as cache_key
    from grading.judge.cache import default_cache_path as default_cache_path
    from grading.judge.cache import describe_repeat_agreement as describe_repeat_agreement
    from grading.judge.cache import in_regrade_sample as in_regrade_sample
    from grading.judge.cost import PriceTable as PriceTable
    from grading.judge.cost import load_price_table as load_price_table
    from grading.judge.limits import Budget as Budget
    from grading.judge.limits import BudgetExceeded as BudgetExceeded
    from grading.judge.limits import Limit as Limit
    from grading.judge.limits import LimitedBackend as LimitedBackend
    from grading.judge.limits import ProviderLimit as ProviderLimit
    from grading.judge.limits import ProviderLimitSpec as ProviderLimitSpec
    from grading.judge.limits import SharedProviderLimit as SharedProviderLimit
    from grading.judge.limits import parse_provider_limits as parse_provider_limits
    from grading.judge.limits import provider_of as provider_of
    from grading.judge.models import JudgeResult as JudgeResult
    from grading.judge.models import TreeBudget as TreeBudget
    from grading.judge.models import Usage as Usage
    from grading.judge.prompt import DEFAULT_MAX_DIFF_CHARS as DEFAULT_MAX_DIFF_CHARS
    from grading.judge.prompt import NONCE_BYTES as NONCE_BYTES
    from grading.judge.prompt import NONCE_PLACEHOLDER as NONCE_PLACEHOLDER
    from grading.judge.prompt import DiffTooLarge as DiffTooLarge
    from grading.judge.prompt import check_diff_text as check_diff_text
    from grading.judge.prompt import draw_nonce as draw_nonce
    from grading.judge.prompt import fence_close as fence_close
    from grading.judge.prompt import fence_open as fence_open
    from grading.judge.prompt import git_dir_note as git_dir_note
    from grading.judge.prompt import render_request as render_request
    from grading.judge.prompt import select_items as select_items
    from grading.judge.prompt import self_ignoring_note as self_ignoring_note
    from grading.judge.prompt import special_files_note as special_files_note
    from grading.judge.prompt import too_large_to_review as too_large_to_review
    from grading.judge.runner import JudgeSettings as JudgeSettings
    from grading.judge.runner import diff_sha256 as diff_sha256
    from grading.judge.runner import judge_run as judge_run
    from grading.judge.scripted import SCRIPTED_MODEL_ID as SCRIPTED_MODEL_ID
    from grading.judge.scripted import ScriptedFile as ScriptedFile
    from grading.judge.scripted import ScriptedVerdict as ScriptedVerdict
    from grading.judge.scripted import load_scripted as load_scripted
    from grading.judge.scripted import render_scripted as render_scripted
    from grading.judge.specs import JudgeSpec as JudgeSpec
    from grading.judge.specs import check_second_judge as check_second_judge
    from grading.judge.specs import judge_family as judge_family
    from grading.judge.specs import make_backend as make_backend
    from grading.judge.specs import model_family as model_family
    from grading.judge.specs import parse_decoding as parse_decoding
    from grading.judge.specs import parse_judge_spec as parse_judge_spec
    from grading.judge.specs import second_judge_problem as second_judge_problem
    from grading.judge.sweep import SweepJob as SweepJob
    from grading.judge.sweep import judge_sweep as judge_sweep
    from grading.judge.tree import base_tree_for as base_tree_for
    from grading.judge.tree import supports_tree as supports_tree
