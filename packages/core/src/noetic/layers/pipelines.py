"""The two item pipelines of context layers: `on_item_append` (LY-2) and `project_history` (LY-4).

Both run the active layers that define the hook one after another in slot order (ties in array
order), each layer receiving what the previous one returned.

- **`on_item_append(ctx, items)`** sees user input and tool outputs on their way into the log
  (never the model's own items: `store` sees those). It returns the items to pass on — the same
  ones, fewer (dropped), rewritten or extra (injected) — as a list, or an `ItemAppendResult`
  that also replaces the layer state; None passes the items through. A layer that raises, times
  out or returns something else is logged and passes its input through unchanged. Once no
  items are left, later layers are not called.
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
from noetic.layers.contract import UNSET, ItemAppendResult
from noetic.layers.frame import LayerContext, commit_state, is_cancellation, report, run_hook

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.frame import LayerEntry

__all__ = ["append_items", "project_history"]


async def append_items(ctx: Context, items: Sequence[Item]) -> None:
    """Append `items` (user input or tool outputs) to the log through `on_item_append`."""
    frame = ctx._layers
    entries = frame.with_hook("on_item_append") if frame is not None else ()
    if entries:
        assert frame is not None
        await frame.start()
        entries = frame.with_hook("on_item_append")  # init may have disabled some
    current = tuple(items)
    for entry in entries:
        if not current:
            break
        current = await _append_one(entry, ctx, current)
    for item in current:
        ctx.item_log.append(item)
    if entries and frame is not None:
        await frame.flush()


async def _append_one(entry: LayerEntry, ctx: Context, items: tuple[Item, ...]) -> tuple[Item, ...]:
    try:
        value = await run_hook(entry, "on_item_append", LayerContext(entry, ctx), items)
        if value is None:
            return items
        state = UNSET
        if isinstance(value, ItemAppendResult):
            state, value = value.state, value.items
        passed = _items(value)
    except Exception as exc:
        if is_cancellation(exc):
            raise
        report(entry, "on_item_append", exc)
        return items
    commit_state(entry, ctx, state)
    return passed


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
