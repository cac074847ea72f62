"""Token usage, step metadata and the per-layer usage breakdown (rules TU-1..TU-3, LU-1..LU-4).

A model round's `RoundUsage` is defined here; the reports read only on demand (totals, step
metadata, the layer-usage snapshot) live in `noetic.usage_reports` and are imported from here
the first time one is named.

The cache figures (`cached_tokens`, `cache_write_tokens`) are `None` when the provider said
nothing and `0` only when it said zero; nothing here ever coerces one into the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from noetic.assembled import assembled
from noetic.lazy import lazy_attribute, lazy_dir

if TYPE_CHECKING:
    from noetic.usage_reports import (
        DecisionMeta,
        EpochUsage,
        LastLayerUsage,
        LayerUsageEntry,
        ReanchorReason,
        StepMeta,
        TokenUsage,
    )

__all__ = [
    "DecisionMeta",
    "EpochUsage",
    "LastLayerUsage",
    "LayerUsageEntry",
    "ReanchorReason",
    "RoundUsage",
    "StepMeta",
    "TokenUsage",
    "add_optional",
    "counted_usage",
]


class _Frozen(BaseModel):
    # Validators are built when a model is first used rather than at `import noetic`: a plain
    # tool round trip makes round usage only (the layer-usage snapshot is made when someone
    # reads it, and for calls with layers; step metadata and execution totals when read).
    model_config = ConfigDict(frozen=True, defer_build=True)


class RoundUsage(_Frozen):
    """Token usage of one model round (TU-2); cache fields are `None` when not reported."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


def counted_usage(input_tokens: int, output_tokens: int, cached_tokens: int | None) -> RoundUsage:
    """`RoundUsage(input_tokens=..., output_tokens=..., cached_tokens=...)` for the counts a
    context summed (exact ints, assembled without validation; anything else validated)."""
    if (
        type(input_tokens) is int
        and type(output_tokens) is int
        and (cached_tokens is None or type(cached_tokens) is int)
    ):
        values = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cached_tokens": cached_tokens,
            "cache_write_tokens": None,
            "reasoning_tokens": None,
        }
        return assembled(RoundUsage, values, {"input_tokens", "output_tokens", "cached_tokens"}, None)
    return RoundUsage(input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached_tokens)


def add_optional(a: int | None, b: int | None) -> int | None:
    """Sum two optional counts, keeping `None` only when both are `None`."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


# The reports a run builds only when someone reads them are defined on first use (see
# `noetic.usage_reports`); `noetic.usage.StepMeta` and the rest still import from here.
_LAZY = dict.fromkeys(
    (
        "DecisionMeta",
        "EpochUsage",
        "LastLayerUsage",
        "LayerUsageEntry",
        "ReanchorReason",
        "StepMeta",
        "TokenUsage",
    ),
    "noetic.usage_reports",
)


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(globals(), _LAZY)
