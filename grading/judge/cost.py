"""Cost of judge calls from a price table (USD per million tokens), per call, per diff and per sweep.

The built-in table holds list prices published by the providers for a few dated model ids; a JSON file
(``--prices FILE`` or ``RUBRIC_JUDGE_PRICES``) replaces or extends it. A model that is in no table costs 0
and is marked ``cost_known=False``: a price is never guessed.

Price file format::

    {"claude-sonnet-4-5-20250929": {"input": 3.0, "cache_write": 3.75, "cache_read": 0.30, "output": 15.0}}

``cache_write`` and ``cache_read`` default to ``input`` when absent. ``batch`` (optional, default 0.5) is what
a call sent through the provider's batch API costs as a fraction of these prices.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from grading.errors import InputError
from grading.judge.models import Usage
from grading.strict_json import read_json

PRICES_ENV = "RUBRIC_JUDGE_PRICES"
PerMillion = Annotated[float, Field(ge=0)]
# Batch processing (Anthropic Message Batches, OpenAI Batch) is billed at half the interactive price, on
# every token kind (input, cache write, cache read, output). Per model: ``batch`` in a price entry.
BATCH_DISCOUNT = 0.5


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: PerMillion
    output: PerMillion
    # Absent: the input price (filled in before validation, so the 0.0 defaults never apply).
    cache_write: PerMillion = 0.0
    cache_read: PerMillion = 0.0
    # What batch processing costs, as a fraction of the prices above (both providers: half).
    batch: Annotated[float, Field(gt=0, le=1)] = BATCH_DISCOUNT

    @model_validator(mode="before")
    @classmethod
    def _default_cache_prices(cls, data: Any) -> Any:
        if isinstance(data, dict) and "input" in data:
            data = {"cache_write": data["input"], "cache_read": data["input"], **data}
        return data


# List prices at the time of writing. Anthropic's cache write is the 5-minute write (1.25 x input); OpenAI
# has no cache-write charge and bills cached input at cache_read. Checked 2026-12-04 (docs/benchmarks.md,
# "Batch billing", says what each source settles and what it leaves open):
# - Anthropic: https://platform.claude.com/docs/en/about-claude/pricing (every claude-* row below, cache
#   writes and hits included) and https://platform.claude.com/docs/en/build-with-claude/batch-processing
#   (batches: all usage at 50% of the standard prices, so cache reads too).
# - OpenAI: https://developers.openai.com/api/docs/pricing and
#   https://developers.openai.com/api/docs/guides/prompt-caching (caching from 1,024 tokens, no write
#   charge). Whether Batch also discounts cached input for gpt-4o and gpt-4.1 is not settled there; priced
#   here as if it does (the cap's estimate prices all input at the full input price, so it stays an upper
#   bound either way).
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-1-20250805": Price(input=15.0, cache_write=18.75, cache_read=1.50, output=75.0),
    "claude-opus-4-5-20251101": Price(input=5.0, cache_write=6.25, cache_read=0.50, output=25.0),
    "claude-sonnet-4-5-20250929": Price(input=3.0, cache_write=3.75, cache_read=0.30, output=15.0),
    "claude-sonnet-4-20250514": Price(input=3.0, cache_write=3.75, cache_read=0.30, output=15.0),
    "claude-haiku-4-5-20251001": Price(input=1.0, cache_write=1.25, cache_read=0.10, output=5.0),
    "gpt-4o-2024-08-06": Price(input=2.5, cache_write=2.5, cache_read=1.25, output=10.0),
    "gpt-4.1-2025-04-14": Price(input=2.0, cache_write=2.0, cache_read=0.50, output=8.0),
}


class PriceTable(BaseModel):
    model_config = ConfigDict(frozen=True)

    prices: dict[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    def price_for(self, *model_ids: str | None) -> Price | None:
        """The price of the first of ``model_ids`` that the table knows (requested id, then reported id)."""
        for model_id in model_ids:
            if model_id and model_id in self.prices:
                return self.prices[model_id]
        return None

    def cost(self, usage: Usage, *model_ids: str | None, batch: bool = False) -> Usage:
        """``usage`` with ``cost_usd`` and ``cost_known`` set for one call."""
        price = self.price_for(*model_ids)
        if price is None:
            return usage.model_copy(update={"cost_usd": 0.0, "cost_known": False})
        usd = (
            usage.input_tokens * price.input
            + usage.cache_write_tokens * price.cache_write
            + usage.cache_read_tokens * price.cache_read
            + usage.output_tokens * price.output
        ) / 1_000_000
        if batch:
            usd *= price.batch
        return usage.model_copy(update={"cost_usd": usd, "cost_known": True})


def parse_prices(data: Any, source: str | Path) -> dict[str, Price]:
    if not isinstance(data, dict):
        raise InputError(source, "a price table is a JSON object: {model id: {input, output, ...}}")
    out: dict[str, Price] = {}
    for model_id, entry in data.items():
        try:
            out[model_id] = Price.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in (model_id, *first["loc"]))
            raise InputError(source, first["msg"], where) from None
    return out


def load_price_table(path: Path | None = None, *, env: dict[str, str] | None = None) -> PriceTable:
    """The built-in table, extended (and overridden per model) by ``path`` or ``$RUBRIC_JUDGE_PRICES``."""
    environ = os.environ if env is None else env
    if path is None and environ.get(PRICES_ENV):
        path = Path(environ[PRICES_ENV])
    prices = dict(DEFAULT_PRICES)
    if path is not None:
        prices.update(parse_prices(read_json(path), path))
    return PriceTable(prices=prices)


# --- estimating a call before it is made (spend caps) ----------------------------------------------------

# Providers count roughly 4 characters of English or code per token; 3 over-counts on purpose, so an
# estimate errs high and a spend cap is reached early rather than passed.
ESTIMATE_CHARS_PER_TOKEN = 3
# What a reply is allowed per judged item (a reason, a finding, a verdict and its cited lines), plus the
# envelope: far above what judges write, still far below max_tokens, which would stop every capped sweep.
ESTIMATE_OUTPUT_TOKENS_PER_ITEM = 200
ESTIMATE_OUTPUT_TOKENS_BASE = 100


def estimate_call_cost(prices: PriceTable, backend: Any, request: Any) -> float | None:
    """An upper estimate (USD) of one judge call before it is made: the rendered request body's length in
    characters / ``ESTIMATE_CHARS_PER_TOKEN``, all priced at the dearer of the input and cache-write prices,
    plus ``ESTIMATE_OUTPUT_TOKENS_PER_ITEM`` output tokens per judged item (and a base), capped at the
    request's ``max_tokens``. 0 for a scripted judge; None when the model has no price in ``prices``.

    ``backend`` is a :class:`grading.judge.backend.Backend` and ``request`` a ``JudgeRequest``."""
    if backend.scripted:
        return 0.0
    price = prices.price_for(backend.model)
    if price is None:
        return None
    body = backend.render(request)
    text = json.dumps(body, ensure_ascii=False, default=str)
    input_tokens = -(-len(text) // ESTIMATE_CHARS_PER_TOKEN)
    output_tokens = ESTIMATE_OUTPUT_TOKENS_BASE + ESTIMATE_OUTPUT_TOKENS_PER_ITEM * len(request.item_ids)
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    if isinstance(max_tokens, int) and max_tokens > 0:
        output_tokens = min(output_tokens, max_tokens)
    usd = input_tokens * max(price.input, price.cache_write) + output_tokens * price.output
    batch = price.batch if getattr(backend, "batch", False) else 1.0
    return usd * batch / 1_000_000
