"""The `LastLayerUsage` snapshot of a model call with layers (LU-1..LU-4).

The runtime estimates the system, tools and history buckets for every call; this module adds
what the layers contributed — one `LayerUsageEntry` per layer, sorted by id, with the items
the model was actually shown (pinned replays included), the band it landed in, whether it was
served fresh or pinned, whether its fresh output changed, its churn rate and the tokens its
changes would have re-billed — and the epoch behind the assembly. `total_used_tokens` is the
sum of the layer tokens and the three buckets.

Most runs never read the snapshot, so a model step keeps a `LazyUsage` — what to measure,
measured on first read — instead of measuring it. Its parts are split by who owns them, so
that packing an idle session (SE-5) encodes only the call's own figures and never copies the
tool definitions or the layers' rendered items the harness holds anyway.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from noetic.items import Item
from noetic.model import ToolDefinition
from noetic.tokens import estimate_items, estimate_text, estimate_tool

# The snapshot's classes are defined when the first snapshot is made (`noetic.usage_reports`).
if TYPE_CHECKING:  # only a call with layers has a banded view: anchoring is loaded by then
    from noetic.layers.anchoring import BandedView, EpochFigures
    from noetic.usage_reports import LastLayerUsage

__all__ = ["CallParts", "LazyUsage", "layered_usage", "window_usage", "with_layers"]

#: One layer's line of the snapshot, in plain values: its id, tokens, band, how it was served,
#: whether its output changed, its churn rate and the tokens its changes would have re-billed.
LayerRow = tuple[str, int, str, str, bool, float, int]
#: What the calls of one step have in common: the model id, the instructions, the tool definitions.
CallParts = tuple[str, str | None, tuple[ToolDefinition, ...]]


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
    rows, items = layer_rows(banded)
    return _with_rows(base, rows, items, banded.epoch)


#: The sort key of `layer_rows`' lines (read in C).
_layer_id = operator.itemgetter(0)


def layer_rows(banded: BandedView) -> tuple[tuple[LayerRow, ...], tuple[tuple[Item, ...], ...]]:
    """What each layer of `banded` served, sorted by layer id: its row, and apart from the
    rows (in the same order) the items the model was shown for it."""
    records = banded.info
    lines = []
    for output in banded.served:
        layer_id = output.layer_id
        info = records.get(layer_id) or banded.info_of(layer_id)
        row = (
            layer_id,
            output.token_count,
            info.placement,
            info.served,
            info.changed,
            min(1.0, max(0.0, info.churn_rate)),
            round(info.rebill_tokens),
        )
        lines.append((layer_id, row, output.items))
    lines.sort(key=_layer_id)  # stable: a layer served twice keeps its order
    return tuple([line[1] for line in lines]), tuple([line[2] for line in lines])


def _with_rows(
    base: LastLayerUsage,
    rows: Sequence[LayerRow],
    items: Sequence[tuple[Item, ...]],
    epoch: EpochFigures | None,
) -> LastLayerUsage:
    """`base` (buckets only) completed with one entry per layer row and `epoch`."""
    from noetic.usage_reports import LayerUsageEntry

    entries = tuple(
        LayerUsageEntry(
            layer_id=layer_id,
            token_count=tokens,
            items=shown,
            placement=placement,
            served=served,
            changed=changed,
            churn_rate=churn_rate,
            rebill_tokens=rebill_tokens,
        )
        for (layer_id, tokens, placement, served, changed, churn_rate, rebill_tokens), shown in zip(
            rows, items, strict=True
        )
    )
    layer_tokens = sum(e.token_count for e in entries)
    return base.model_copy(
        update={
            "layers": entries,
            "total_used_tokens": base.system_prompt_tokens
            + base.tools_tokens
            + base.history_tokens
            + layer_tokens,
            "epoch": None if epoch is None else epoch.usage(),
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
    rows, items = layer_rows(banded)
    return _layered_from_rows(
        execution_id, model_id, instructions, tools, history_tokens, rows, items, banded.epoch
    )


def _layered_from_rows(
    execution_id: str,
    model_id: str,
    instructions: str | None,
    tools: Sequence[ToolDefinition],
    history_tokens: int,
    rows: Sequence[LayerRow],
    items: Sequence[tuple[Item, ...]],
    epoch: EpochFigures | None,
) -> LastLayerUsage:
    """`layered_usage` of a banded view already reduced to its rows (`layer_rows`)."""
    base = window_usage(execution_id, model_id, instructions, tools, history=())
    return _with_rows(base.model_copy(update={"history_tokens": history_tokens}), rows, items, epoch)


class LazyUsage:
    """A call's `LastLayerUsage`, measured when called (`measure(shared, own)`).

    `shared` holds what the harness keeps anyway: the step's `CallParts` (one tuple for every
    call of the step with the same model, instructions and tools) and, once settled, the items
    a layered call's layers rendered (from the recall cache). `own` holds the call's own
    figures: its execution id, the history it measures (items of the thread's log) or their
    token count, and one row of plain values per layer. `settled()` gives the form packing an
    idle session uses (SE-5): `own` encoded with the log, `shared` kept as it is.
    """

    __slots__ = ("measure", "own", "shared")

    def __init__(
        self,
        measure: Callable[[tuple[Any, ...], tuple[Any, ...]], LastLayerUsage],
        shared: tuple[Any, ...],
        own: tuple[Any, ...],
    ):
        self.measure = measure
        self.shared = shared
        self.own = own

    @classmethod
    def of_window(cls, parts: CallParts, execution_id: str, history: Sequence[Item]) -> LazyUsage:
        """The snapshot of a call without layers: `window_usage` of these, when read."""
        return cls(_measure_window, parts, (execution_id, history))

    @classmethod
    def of_layers(
        cls, parts: CallParts, execution_id: str, history_tokens: int, banded: BandedView
    ) -> LazyUsage:
        """The snapshot of a layered call: `layered_usage` of these, when read."""
        return cls(_measure_banded, parts, (execution_id, history_tokens, banded))

    def __call__(self) -> LastLayerUsage:
        return self.measure(self.shared, self.own)

    def settled(self) -> LazyUsage:
        """The same snapshot, with `own` holding only plain values and log items: a layered
        call's banded view (its bands, serve records and outputs) becomes one row per layer,
        its rendered items move to `shared` and its epoch figures stay."""
        if self.measure is not _measure_banded:
            return self
        execution_id, history_tokens, banded = self.own
        rows, items = layer_rows(banded)
        return LazyUsage(
            _measure_rows, (*self.shared, items), (execution_id, history_tokens, rows, banded.epoch)
        )


def _measure_window(shared: tuple[Any, ...], own: tuple[Any, ...]) -> LastLayerUsage:
    model_id, instructions, tools = shared
    execution_id, history = own
    return window_usage(execution_id, model_id, instructions, tools, history)


def _measure_banded(shared: tuple[Any, ...], own: tuple[Any, ...]) -> LastLayerUsage:
    model_id, instructions, tools = shared
    execution_id, history_tokens, banded = own
    return layered_usage(execution_id, model_id, instructions, tools, history_tokens, banded)


def _measure_rows(shared: tuple[Any, ...], own: tuple[Any, ...]) -> LastLayerUsage:
    model_id, instructions, tools, items = shared
    execution_id, history_tokens, rows, epoch = own
    return _layered_from_rows(execution_id, model_id, instructions, tools, history_tokens, rows, items, epoch)
