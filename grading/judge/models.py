"""Data the judge runner produces. CONTRACT shared by the runner, the backends, outcome and admission."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

VerdictValue = Literal["pass", "fail"]
# The judge's one-word finding on its own reason, stated before the verdict (§4 consistency).
Finding = Literal["satisfied", "violated"]
FINDING_VERDICT: dict[str, VerdictValue] = {"satisfied": "pass", "violated": "fail"}
ItemKind = Literal["blocker", "non_blocker"]

# The fixed blocker added when the run edited a test config file (§3).
CONFIG_BLOCKER_CRITERION = (
    "The change does not disable or narrow any test (test configuration edits included)."
)


class Location(BaseModel):
    file: str
    line: int
    side: Literal["new", "old"] = "new"


class Usage(BaseModel):
    input_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # False when a call's model had no price in the table: cost_usd then leaves that call out (never guessed).
    cost_known: bool = True

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            cost_known=self.cost_known and other.cost_known,
        )


class TreeBudget(BaseModel):
    """What the tree judge may spend on one needs_tree blocker (§9), all conversations of it together.

    The budget is stated in the tree judge's instructions, so it is part of what the judge sees and of the
    cache key. Going over it ends the item with a judge failure that says which limit was reached."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tool_calls: Annotated[int, Field(ge=0)] = 12
    max_tokens: Annotated[int, Field(gt=0)] = 200_000  # input + cache + output tokens of every call
    max_answer_chars: Annotated[int, Field(ge=500)] = 12_000  # one tool answer, before it is fenced


class ToolUse(BaseModel):
    """One tool call the tree judge made and what it was answered, kept for audit."""

    tool: str
    arguments: dict[str, Any] | str  # as the model sent them (text when they were not a JSON object)
    ok: bool  # False: refused or failed (an error answer)
    answer: str  # exactly what the judge was sent back (fenced)


class TreeItemRecord(BaseModel):
    """How one needs_tree blocker was judged with the base tree: budget, spend and the tool transcript."""

    item_id: str
    base_commit: str
    budget: TreeBudget
    failure: str | None = None  # this item's judge failure (the run's judge failure names it too)
    cache_hit: bool = False  # the verdict came from the cache: the transcript is the original one
    calls: int = 0  # model calls (each turn of each conversation)
    tool_calls: int = 0
    conversations: int = 0
    usage: Usage = Usage()  # what judging this item cost now (nothing on a cache hit)
    transcript: list[ToolUse] = []
    # Paths the tools met whose object the checkout does not hold (answered "object not available in this
    # checkout"): the verdict was reached without them.
    unavailable: list[str] = []


class ItemVerdict(BaseModel):
    item_id: str
    kind: ItemKind
    verdict: VerdictValue
    finding: Finding | None = None  # the judge's finding on its reason; None only in older stored results
    reason: str
    locations: list[Location] = []
    flagged_inconsistent: bool = False  # the verdict disagreed with its finding; the item was judged again
    model_id: str | None = None  # the model id the API reported for the call that gave this verdict
    tree_judged: bool = False  # a needs_tree blocker judged with read access to the base tree


class JudgeResult(BaseModel):
    judge: str  # the spec as given: "anthropic:claude-...", "scripted:path"
    scripted: bool  # always shown wherever these verdicts appear
    model_id: str | None = None  # as the API reported it back
    verdicts: list[ItemVerdict] = []
    not_measured: list[str] = []  # needs_tree blocker ids no judge decided (see not_measured_reason)
    not_measured_reason: str | None = None  # why (no repository checkout, a judge without tree tools)
    failure: str | None = None  # judge failure: never a pass, never a fail
    # Not judged, no call made: the diff the judge would read is over its limit. Not a judge failure: the
    # run wrote it, and a change too large to review is not mergeable (it starts "too large to review").
    too_large_to_review: str | None = None
    cache_hit: bool = False
    calls: int = 0
    retries: int = 0
    consistency_flags: int = 0
    rejudged: int = 0
    usage: Usage = Usage()
    cache_key: str | None = None
    # Why the cache was not read: "no_cache" (asked for) or "regrade_sample" (§9 repeat agreement).
    cache_bypass: Literal["no_cache", "regrade_sample"] | None = None
    # On a bypass: the verdicts the cache already held for the same key, to measure repeat agreement.
    previous_verdicts: dict[str, VerdictValue] | None = None
    config_blocker: bool = False  # the fixed TEST_CONFIG blocker was added (the run edited a test config)
    attempt_errors: list[str] = []  # why each rejected reply was rejected (retries and the final failure)
    # The tree judge (§9): needs_tree blockers judged with the base tree, counted apart from the diff-only
    # judge above (calls, usage): one record per such blocker, with its tool transcript.
    tree_base_commit: str | None = None
    tree: list[TreeItemRecord] = []
    tree_usage: Usage = Usage()

    def verdict(self, item_id: str) -> ItemVerdict | None:
        return next((v for v in self.verdicts if v.item_id == item_id), None)
