"""The two item pipelines of context layers: `on_item_append` (LY-2) and `project_history` (LY-4).

Both run the active layers that define the hook one after another in slot order (ties in array
order), each layer receiving what the previous one returned.

- **`on_item_append(ctx, items)`** sees user input and tool outputs on their way into the log
  (never the model's own items: `store` sees those). It returns the items to pass on — the same
  ones, fewer (dropped), rewritten or extra (injected) — as a list, or an `ItemAppendResult`
  that also replaces the layer state or asks for a **re-render**; None passes the items
  through. A layer that raises, times out or returns something else is logged and passes its
  input through unchanged. Once no items are left, later layers are not called. A re-render
  (`rerender=True`) recalls the layers of its scope — `"self"`, `"slot-after"` (the asking
  layer and every layer of a higher or equal slot, the default) or `"all"` — before the next
  model round: for the step's input that is the step's own recall (eventual layers of the
  scope skip their cache), for tool outputs the next round's. Recall never appends items, so
  a re-render cannot trigger another one.
- **`project_history(ctx, items)`** sees the history a model round is about to send (the log
  minus its system messages, before the token budget is applied) and returns the history to
  send instead — a window, a redaction, a summary. It runs for every round, never writes the
  log (IL-1), and a layer that raises, times out or returns something else is logged and
  skipped (the next layer gets the previous output).

Noetic's own `cancelled` error always propagates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from noetic.items import Item, parse_item
from noetic.layers.contract import UNSET, ItemAppendResult, RerenderScope
from noetic.layers.frame import LayerContext, commit_state, is_cancellation, report, run_hook

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.frame import LayerEntry, LayerFrame

__all__ = ["append_items", "project_history"]


async def append_items(ctx: Context, items: Sequence[Item]) -> set[str]:
    """Append `items` (user input or tool outputs) to the log through `on_item_append`.

    Returns the ids of the layers a re-render asked to recall (their cached recalls dropped).
    """
    frame = ctx._layers
    if frame is None or not frame.defining("on_item_append"):
        for item in items:
            ctx.item_log.append(item)
        return set()
    await frame.start()  # the pipeline sees initialized state
    current = tuple(items)
    stale: set[str] = set()
    for entry in frame.with_hook("on_item_append"):
        if not current:
            break
        current, scope = await _append_one(entry, ctx, current)
        if scope is not None:
            stale |= _rerendered(frame, entry, scope)
    for item in current:
        ctx.item_log.append(item)
    await frame.flush()
    recalls = ctx._exec.harness.layer_memory.recalls
    for entry in frame.entries:
        if entry.id in stale:
            recalls.invalidate(entry.cache_key)
    return stale


async def _append_one(
    entry: LayerEntry, ctx: Context, items: tuple[Item, ...]
) -> tuple[tuple[Item, ...], RerenderScope | None]:
    """The items one layer passes on, and the scope of the re-render it asked for."""
    try:
        value = await run_hook(entry, "on_item_append", LayerContext(entry, ctx), items)
        if value is None:
            return items, None
        state, scope = UNSET, None
        if isinstance(value, ItemAppendResult):
            if value.rerender and value.rerender_scope not in ("self", "slot-after", "all"):
                raise ValueError(f"unknown rerender_scope {value.rerender_scope!r}")
            state, scope = value.state, value.rerender_scope if value.rerender else None
            value = value.items
        passed = _items(value)
    except Exception as exc:
        if is_cancellation(exc):
            raise
        report(entry, "on_item_append", exc)
        return items, None
    commit_state(entry, ctx, state, "on_item_append")
    return passed, scope


def _rerendered(frame: LayerFrame, asking: LayerEntry, scope: RerenderScope) -> set[str]:
    """The ids of the layers a re-render of `scope` asked by `asking` recalls."""
    if scope == "self":
        return {asking.id}
    slot = asking.layer.slot
    return {e.id for e in frame.active() if scope == "all" or e.layer.slot >= slot}


async def project_history(
    entries: Sequence[LayerEntry], ctx: Context, items: Sequence[Item]
) -> tuple[Item, ...]:
    """`items` (the history of one round) through the `project_history` of `entries`."""
    current = tuple(items)
    for entry in entries:
        try:
            value = await run_hook(entry, "project_history", LayerContext(entry, ctx), current)
            if value is not None:
                current = _items(value)
        except Exception as exc:
            if is_cancellation(exc):
                raise
            report(entry, "project_history", exc)
    return current


def _items(value: Any) -> tuple[Item, ...]:
    """A hook's returned items, each a valid item (dicts are parsed); raises otherwise."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise TypeError(f"returned {type(value).__name__}; return a list of items or None")
    return tuple(parse_item(item) for item in value)
