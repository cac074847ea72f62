"""Accepting what a model adapter reports: token counts, costs, held ceilings, settlements.

Every figure that reaches a context's counters passes through here, whichever adapter sent it,
so a broken or hostile provider cannot corrupt accounting or slip past `until.max_cost`:

- a round's token counts below zero are clamped to 0, with a warning (AC-1);
- a round's `cost` / `billed_cost` must be `None` or a finite number ≥ 0; anything else (NaN,
  ±Infinity, −1000, a string) rejects the round with `model_error` naming the field, because
  its spend is unknown and counting it as 0 would let a budget be bypassed (AC-2);
- a held ceiling that is negative is held as 0; one that is NaN is held as +Infinity (an
  unknown ceiling bounds nothing), with a warning (AC-3);
- a settlement with an unusable amount leaves the hold in place, with a warning (AC-3).

Adapters that can do better for an unreadable cost — hold the call's ceiling and reconcile
it, as the OpenRouter adapter does — should report `cost=None` and hold it themselves.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from noetic.errors import NoeticError
from noetic.execution_context import to_decimal
from noetic.logs import logger
from noetic.model import ModelResponse
from noetic.usage import RoundUsage

__all__ = ["accept_cost", "accept_hold", "accept_round", "accept_settlement", "accept_usage", "usable_amount"]

log = logger("noetic.accounting")

_ZERO = to_decimal(None)
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens", "reasoning_tokens")


def usable_amount(value: Any) -> bool:
    """True for a finite number ≥ 0 (booleans and strings are not amounts)."""
    return type(value) in (float, int) and 0 <= value < math.inf  # NaN compares False


def accept_usage(usage: RoundUsage, model_id: str) -> RoundUsage:
    """`usage` with negative token counts clamped to 0 (AC-1)."""
    if (
        usage.input_tokens >= 0
        and usage.output_tokens >= 0
        and (usage.cached_tokens is None or usage.cached_tokens >= 0)
        and (usage.cache_write_tokens is None or usage.cache_write_tokens >= 0)
        and (usage.reasoning_tokens is None or usage.reasoning_tokens >= 0)
    ):
        return usage
    negative = {
        name: value for name in _TOKEN_FIELDS if (value := getattr(usage, name)) is not None and value < 0
    }
    log.warning("model %s reported negative token counts %s; counted as 0", model_id, negative)
    return usage.model_copy(update=dict.fromkeys(negative, 0))


def accept_cost(value: Any, field: str, model_id: str) -> Decimal:
    """A reported USD amount as a Decimal (`None` is 0); raise `model_error` when unusable (AC-2)."""
    if value is None:
        return to_decimal(None)
    if not usable_amount(value):
        raise NoeticError(
            "model_error",
            f"model {model_id!r} reported an unusable {field} {value!r}: a cost must be a finite "
            "number of USD ≥ 0. The round's spend is unknown, so it is not counted as 0; fix or "
            "replace the model adapter.",
            field=field,
            value=repr(value)[:100],
            model_id=model_id,
        )
    return to_decimal(float(value))


def accept_round(response: ModelResponse, model_id: str) -> tuple[RoundUsage, Decimal, Decimal]:
    """A final response's usage, cost and billed cost as the context records them."""
    usage = accept_usage(response.usage, model_id)
    if response.cost is None and response.billed_cost is None:  # no figures: nothing to check
        return usage, _ZERO, _ZERO
    cost = accept_cost(response.cost, "cost", model_id)
    billed = (
        cost if response.billed_cost is None else accept_cost(response.billed_cost, "billed_cost", model_id)
    )
    return usage, cost, billed


def accept_hold(amount: Any) -> float:
    """The ceiling to hold for a requested `amount` (AC-3)."""
    if usable_amount(amount) or amount == math.inf:
        return float(amount)
    if type(amount) in (float, int) and amount < 0:
        log.warning("a negative cost ceiling (%r) was requested; holding 0", amount)
        return 0.0
    log.warning("an unreadable cost ceiling (%r) was requested; holding an unbounded amount", amount)
    return math.inf


def accept_settlement(cost: Any, billed_cost: Any) -> bool:
    """True when a hold may be settled at these amounts; else warn, and the hold stays (AC-3)."""
    if usable_amount(cost) and usable_amount(billed_cost):
        return True
    log.warning("a settlement of %r / %r USD is unusable; the ceiling stays held", cost, billed_cost)
    return False
