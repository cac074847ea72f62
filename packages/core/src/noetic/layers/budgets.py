"""Token budgets: the projection policy and the allocator that splits it across layers.

`allocate_budgets` (BG-1..BG-4): what is left after the response reserve and the system prompt
is available. Each layer's minimum is funded first, in array order (scaled down together when
the minimums alone overcommit). Of the rest, 60% is a pool shared by headroom (`max - min`;
`"auto"` headroom is unbounded) and 40% goes to history. Layers with finite headroom take
their share first, at most their headroom, and the unbounded layers split what remains, so the
pool is conserved; pool a capped layer cannot use goes to history. No allocation exceeds a
layer's `max`. NaN inputs raise `INVALID_BUDGET_INPUT`; infinity means "uncapped".

`Projection` is the policy a model step uses (BG-5): step > harness > `DEFAULT_PROJECTION`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from noetic.errors import NoeticConfigError
from noetic.layers.contract import BudgetRange, budget_range
from noetic.numbers import as_float
from noetic.records import FrozenRecord, set_field

__all__ = ["DEFAULT_PROJECTION", "BudgetAllocation", "Projection", "allocate_budgets"]

#: The overflow modes of a projection.
OVERFLOW_MODES = ("sliding_window", "truncate", "summarize")
#: Share of the post-minimum remainder given to layers; the rest is history's.
LAYER_POOL_SHARE = 0.6


class Projection(FrozenRecord):
    """How big the view may get: `token_budget` minus `response_reserve` (tokens).

    `window_size` optionally caps the number of history items before the token pass.
    `overflow` says what becomes of history that does not fit (`noetic.layers.overflow`):
    dropped (`sliding_window`), cut short (`truncate`) or summarized by `overflow_model` (a
    model id or adapter; None: the step's model) (`summarize`).
    """

    __slots__ = ("overflow", "overflow_model", "response_reserve", "token_budget", "window_size")
    token_budget: float
    response_reserve: float
    overflow: Literal["truncate", "summarize", "sliding_window"]
    window_size: int | None
    overflow_model: Any

    def __init__(
        self,
        token_budget: float = 128_000,
        response_reserve: float = 4_000,
        overflow: Literal["truncate", "summarize", "sliding_window"] = "sliding_window",
        window_size: int | None = None,
        overflow_model: Any = None,
    ) -> None:
        if overflow not in OVERFLOW_MODES:
            raise NoeticConfigError(
                "INVALID_BUDGET_INPUT",
                f"projection overflow {overflow!r} is unknown",
                hint=f"Use one of {', '.join(OVERFLOW_MODES)}.",
            )
        set_field(self, "token_budget", token_budget)
        set_field(self, "response_reserve", response_reserve)
        set_field(self, "overflow", overflow)
        set_field(self, "window_size", window_size)
        set_field(self, "overflow_model", overflow_model)

    @classmethod
    def of(cls, value: Projection | Mapping[str, Any] | None) -> Projection | None:
        """A projection from an instance or a dict (None stays None)."""
        if value is None or isinstance(value, Projection):
            return value
        try:
            return cls(**dict(value))
        except TypeError as exc:
            raise NoeticConfigError(
                "INVALID_BUDGET_INPUT",
                f"not a projection policy: {exc}",
                hint="Use {'token_budget': 128000, 'response_reserve': 4000, 'window_size': None}.",
            ) from None


DEFAULT_PROJECTION = Projection()


class BudgetAllocation(FrozenRecord):
    """Tokens per layer (in input order, keyed by `ids`) and for history."""

    __slots__ = ("allocations", "history_budget", "ids")
    ids: tuple[str | None, ...]
    allocations: tuple[float, ...]
    history_budget: float

    def __init__(
        self, ids: tuple[str | None, ...], allocations: tuple[float, ...], history_budget: float
    ) -> None:
        set_field(self, "ids", ids)
        set_field(self, "allocations", allocations)
        set_field(self, "history_budget", history_budget)

    def by_id(self) -> dict[str, float]:
        """Allocations keyed by layer id (entries given as bare budgets are left out)."""
        return {i: a for i, a in zip(self.ids, self.allocations, strict=True) if i is not None}

    @property
    def total(self) -> float:
        """Everything allocated: the layers plus history."""
        return sum(self.allocations) + self.history_budget


def _check_input(name: str, value: float) -> None:
    number = as_float(value)
    if number is None or math.isnan(number):
        raise NoeticConfigError(
            "INVALID_BUDGET_INPUT",
            f"allocate_budgets: {name} is {value!r}, not a number",
            hint="Pass real numbers; math.inf is allowed for an uncapped budget.",
            field=name,
        )


def _range_of(entry: Any) -> tuple[str | None, BudgetRange]:
    if hasattr(entry, "id") and hasattr(entry, "slot"):
        return entry.id, budget_range(getattr(entry, "budget", "auto"))
    try:
        rng = budget_range(entry)
    except (KeyError, TypeError, ValueError):
        rng = BudgetRange(math.nan, math.nan)
    if math.isnan(rng.min) or math.isnan(rng.max):
        raise NoeticConfigError(
            "INVALID_BUDGET_INPUT",
            f"allocate_budgets: {entry!r} is not a budget",
            hint="Give budgets as numbers, {'min': m, 'max': n} or 'auto' (NaN is never a budget).",
        )
    return None, rng


def allocate_budgets(
    total_budget: float,
    layers: Sequence[Any],
    *,
    system_prompt_tokens: float = 0.0,
    response_reserve: float = 0.0,
) -> BudgetAllocation:
    """Split `total_budget` across `layers` and history; see the module docstring.

    `layers` holds layer objects (their `budget` is used) or bare budget specs
    (`1500`, `{"min": 200, "max": 1500}`, `"auto"`).
    """
    _check_input("total_budget", total_budget)
    _check_input("system_prompt_tokens", system_prompt_tokens)
    _check_input("response_reserve", response_reserve)
    ids, ranges = zip(*(_range_of(entry) for entry in layers), strict=True) if layers else ((), ())
    available = total_budget - response_reserve - system_prompt_tokens
    if available <= 0:
        return BudgetAllocation(tuple(ids), tuple(0.0 for _ in ranges), 0.0)
    minimums = [r.min for r in ranges]
    remaining = available - sum(minimums)
    if remaining < 0:  # the minimums alone overcommit: scale them down together
        scale = available / sum(minimums)
        return BudgetAllocation(tuple(ids), tuple(math.floor(m * scale) for m in minimums), 0.0)
    pool = remaining * LAYER_POOL_SHARE
    history = remaining * (1 - LAYER_POOL_SHARE)
    headrooms = [max(0.0, r.max - r.min) for r in ranges]
    shares = _pool_shares(headrooms, pool)
    allocations = tuple(m + s for m, s in zip(minimums, shares, strict=True))
    unused = pool - sum(shares) if math.isfinite(pool) else 0.0
    return BudgetAllocation(tuple(ids), allocations, history + max(0.0, unused))


def _pool_shares(headrooms: list[float], pool: float) -> list[float]:
    """Each layer's part of the pool: finite headroom first (at most the headroom), then an
    equal split of the rest among unbounded layers."""
    unbounded = sum(1 for h in headrooms if not math.isfinite(h))
    finite_total = sum(h for h in headrooms if math.isfinite(h))
    finite_pool = pool if unbounded == 0 else pool / 2
    shares = [
        min(h, h / finite_total * finite_pool) if math.isfinite(h) and finite_total > 0 else 0.0
        for h in headrooms
    ]
    if unbounded:
        spread = (pool - sum(shares)) / unbounded
        shares = [spread if not math.isfinite(h) else s for h, s in zip(headrooms, shares, strict=True)]
    return shares
