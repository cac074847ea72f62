"""View assembly: the items a model call sees, in the band order of AN-1 and within budget.

    [system] [anchor layers, slot asc] [history] [live layers, slot asc] [supersedes] [tail]

With a token cap (BG-6) the parts claim the budget in priority order: system items, the tail
and the supersedes are always kept; the anchor band, then the live band, fill item by item in
slot order (an item that does not fit is skipped, later ones may still fit); history takes
what is left, newest first, stopping at the first item that does not fit. Function calls and
outputs left without their partner in the kept history are stripped, so a provider never sees
an orphan. The log itself is never touched (IL-1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from noetic.items import FunctionCallItem, FunctionCallOutputItem, Item
from noetic.records import FrozenRecord, set_field
from noetic.tokens import estimate_item_tokens

__all__ = ["View", "assemble_view", "strip_orphans"]


class View(FrozenRecord):
    """An assembled view: every item in order, and the part of it that is history."""

    __slots__ = ("history", "items")
    items: tuple[Item, ...]
    history: tuple[Item, ...]

    def __init__(self, items: tuple[Item, ...], history: tuple[Item, ...]) -> None:
        set_field(self, "items", items)
        set_field(self, "history", history)


def strip_orphans(items: Sequence[Item]) -> list[Item]:
    """`items` without function calls lacking their output, and outputs lacking their call."""
    calls = {i.call_id for i in items if isinstance(i, FunctionCallItem)}
    outputs = {i.call_id for i in items if isinstance(i, FunctionCallOutputItem)}
    if calls == outputs:
        return list(items)
    return [
        i
        for i in items
        if not (isinstance(i, FunctionCallItem) and i.call_id not in outputs)
        and not (isinstance(i, FunctionCallOutputItem) and i.call_id not in calls)
    ]


def _fill(items: Iterable[Item], left: float, tokens: Callable[[Item], int]) -> tuple[list[Item], float]:
    kept: list[Item] = []
    for item in items:
        cost = tokens(item)
        if cost <= left:
            kept.append(item)
            left -= cost
    return kept, left


def _newest(items: Sequence[Item], left: float, tokens: Callable[[Item], int]) -> list[Item]:
    start = len(items)
    while start > 0:
        cost = tokens(items[start - 1])
        if cost > left:
            break
        left -= cost
        start -= 1
    return list(items[start:])


def assemble_view(
    *,
    system: Sequence[Item] = (),
    anchor: Sequence[Item] = (),
    history: Sequence[Item] = (),
    live: Sequence[Item] = (),
    supersedes: Sequence[Item] = (),
    tail: Sequence[Item] = (),
    token_budget: float | None = None,
    window_size: int | None = None,
    tokens: Callable[[Item], int] = estimate_item_tokens,
) -> View:
    """Assemble a view; see the module docstring. `token_budget=None` means uncapped."""
    if window_size is not None:
        history = history[-window_size:] if window_size > 0 else ()
    if token_budget is None:
        kept_history = strip_orphans(history)
        return View((*system, *anchor, *kept_history, *live, *supersedes, *tail), tuple(kept_history))
    left = token_budget - sum(tokens(i) for i in (*system, *tail, *supersedes))
    kept_anchor, left = _fill(anchor, left, tokens)
    kept_live, left = _fill(live, left, tokens)
    kept_history = strip_orphans(_newest(history, left, tokens))
    return View(
        (*system, *kept_anchor, *kept_history, *kept_live, *supersedes, *tail),
        tuple(kept_history),
    )
