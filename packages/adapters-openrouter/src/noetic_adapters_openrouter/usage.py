"""Usage and cost as OpenRouter reports them, for both endpoints, and the billing rule.

One parser reads both shapes: Responses (`input_tokens`, `output_tokens`,
`input_tokens_details`, `output_tokens_details`) and Chat Completions (`prompt_tokens`,
`completion_tokens`, `prompt_tokens_details`, `completion_tokens_details`).

Zero versus absent: `cached_tokens`, `cache_write_tokens`, `reasoning_tokens`, `cost` and
`is_byok` are copied only when the provider sent the key with a value; an absent key (or a
null) stays `None` and a reported `0` stays `0`.

Cost rule (per call):

- `cost` is `usage.cost` — OpenRouter's charge for the call, in USD (`None` if not reported);
- `billed_cost` is what the call actually paid through OpenRouter, which is that same charge:
  for a BYOK call (`is_byok: true`) it is OpenRouter's fee only (often `0`), because the
  inference itself was billed to your own provider key; that upstream amount is kept as
  `upstream_cost` for logs and is not counted; a response-cache hit reports `0`;
- a call rejected before generation (an HTTP error status) pays nothing and reports nothing;
- a `cost` that is present but unreadable — a string, NaN, ±Infinity, a negative number — is
  not a bill: `cost` stays `None`, `cost_unreadable` is set, and the adapter holds the call's
  ceiling and reconciles it as if the usage never came;
- a call cut off before its usage arrived is held and reconciled (see `billing`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from noetic.usage import RoundUsage
from pydantic import BaseModel, ConfigDict

from noetic_adapters_openrouter.wire import count, mapping, number

__all__ = ["ProviderUsage", "parse_usage"]


class ProviderUsage(BaseModel):
    """One call's usage and cost as reported (see the module docstring for the rules)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None
    is_byok: bool | None = None
    upstream_cost: float | None = None
    cost_unreadable: bool = False

    @property
    def billed_cost(self) -> float | None:
        """What the call paid through OpenRouter: the reported cost (BYOK: its fee)."""
        return self.cost

    def round_usage(self) -> RoundUsage:
        """The token figures as the runtime's `RoundUsage`."""
        return RoundUsage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            cache_write_tokens=self.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens,
        )


def parse_usage(raw: Any) -> ProviderUsage | None:
    """Read a `usage` object of either endpoint; `None` when there is none."""
    if not isinstance(raw, Mapping):
        return None
    input_details = mapping(raw.get("input_tokens_details")) or mapping(raw.get("prompt_tokens_details"))
    output_details = mapping(raw.get("output_tokens_details")) or mapping(
        raw.get("completion_tokens_details")
    )
    cost_details = mapping(raw.get("cost_details"))
    raw_cost = raw.get("cost")
    cost = number(raw_cost)
    if cost is not None and not 0 <= cost < math.inf:  # NaN compares False
        cost = None
    return ProviderUsage(
        input_tokens=count(raw.get("input_tokens", raw.get("prompt_tokens"))) or 0,
        output_tokens=count(raw.get("output_tokens", raw.get("completion_tokens"))) or 0,
        cached_tokens=count(input_details.get("cached_tokens")),
        cache_write_tokens=count(input_details.get("cache_write_tokens")),
        reasoning_tokens=count(output_details.get("reasoning_tokens")),
        cost=cost,
        cost_unreadable=raw_cost is not None and cost is None,
        is_byok=raw.get("is_byok") if isinstance(raw.get("is_byok"), bool) else None,
        upstream_cost=number(cost_details.get("upstream_inference_cost")),
    )
