"""The `LastLayerUsage` snapshot of a model call with layers (LU-1..LU-4).

The runtime estimates the system, tools and history buckets for every call; this module adds
what the layers contributed — one `LayerUsageEntry` per layer, sorted by id, with the items
the model was actually shown (pinned replays included), the band it landed in, whether it was
served fresh or pinned, whether its fresh output changed, its churn rate and the tokens its
changes would have re-billed — and the epoch behind the assembly. `total_used_tokens` is the
sum of the layer tokens and the three buckets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from noetic.items import Item
from noetic.model import ToolDefinition
from noetic.tokens import estimate_items, estimate_text, estimate_tool

# The snapshot's classes are defined when the first snapshot is made (`noetic.usage_reports`).
if TYPE_CHECKING:  # only a call with layers has a banded view: anchoring is loaded by then
    from noetic.layers.anchoring import BandedView
    from noetic.usage_reports import LastLayerUsage

__all__ = ["layered_usage", "window_usage", "with_layers"]


def window_usage(
    execution_id: str,
    model_id: str,
    instructions: str | None,
    tools: Sequence[ToolDefinition],
    history: Sequence[Item],
) -> LastLayerUsage:
    """The system, tools and history buckets of one call (the whole snapshot without layers)."""
    from noetic.usage_reports import LastLayerUsage

    system = estimate_text(instructions) if instructions else 0
    tools_tokens = sum(estimate_tool(t) for t in tools)
    history_tokens = estimate_items(history)
    return LastLayerUsage(
        execution_id=execution_id,
        model_id=model_id,
        system_prompt_tokens=system,
        tools_tokens=tools_tokens,
        history_tokens=history_tokens,
        total_used_tokens=system + tools_tokens + history_tokens,
    )


def with_layers(base: LastLayerUsage, banded: BandedView) -> LastLayerUsage:
    """`base` (buckets only) completed with the layers and epoch of `banded`."""
    from noetic.usage_reports import LayerUsageEntry

    entries = []
    for output in banded.served:
        info = banded.info_of(output.layer_id)
        entries.append(
            LayerUsageEntry(
                layer_id=output.layer_id,
                token_count=output.token_count,
                items=output.items,
                placement=info.placement,
                served=info.served,
                changed=info.changed,
                churn_rate=min(1.0, max(0.0, info.churn_rate)),
                rebill_tokens=round(info.rebill_tokens),
            )
        )
    entries.sort(key=lambda e: e.layer_id)
    layer_tokens = sum(e.token_count for e in entries)
    return base.model_copy(
        update={
            "layers": tuple(entries),
            "total_used_tokens": base.system_prompt_tokens
            + base.tools_tokens
            + base.history_tokens
            + layer_tokens,
            "epoch": banded.epoch,
        }
    )


def layered_usage(
    execution_id: str,
    model_id: str,
    instructions: str | None,
    tools: Sequence[ToolDefinition],
    history_tokens: int,
    banded: BandedView,
) -> LastLayerUsage:
    """The snapshot of a layered call: its window's buckets, `history_tokens` of the last
    round's history, and the layers and epoch of `banded`."""
    base = window_usage(execution_id, model_id, instructions, tools, history=())
    return with_layers(base.model_copy(update={"history_tokens": history_tokens}), banded)
