"""The overflow modes of a projection: what happens to history that does not fit the window.

The token pass of view assembly (BG-6) always keeps the newest history that fits; the mode
decides what the model learns about the rest.

- **`sliding_window`** (the default): older items are dropped, oldest first.
- **`truncate`** (BG-7): every turn stays, but the text of the oldest items is cut — a message's
  text or a tool's output keeps its first `TRUNCATE_FLOOR_CHARS` characters and a marker saying
  how much was cut — from the oldest item forward until the history fits. The newest item is
  never cut. What still does not fit is dropped as in `sliding_window`.
- **`summarize`** (BG-8): the items that do not fit are replaced by one developer message
  holding a summary written by a model — `projection.overflow_model` or the step's own model —
  in a real call through its adapter. Its tokens and cost are charged to the context like any
  model round (`cost`, `billed_cost`). The summary is kept to a reserve of the window (at most
  `SUMMARY_MAX_TOKENS`) so the newest history still fits beside it. Summaries are remembered by
  the last item they cover, so a later round only summarizes what newly fell out, together with
  the previous summary. A summary call that fails (other than by cancellation) is logged and
  the round falls back to `sliding_window`.

Neither mode ever writes the log (IL-1): they shape one request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING

from noetic.errors import NoeticError
from noetic.execution_context import to_decimal
from noetic.ids import new_item_id
from noetic.items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    Item,
    MessageItem,
    OutputText,
    developer_message,
    user_message,
)
from noetic.layers.frame import is_cancellation
from noetic.logs import logger
from noetic.model import ModelRequest, ModelResponse
from noetic.tokens import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from noetic.execution_context import Context
    from noetic.layers.memory import SummaryMemory
    from noetic.model import ModelAdapter

__all__ = [
    "SUMMARY_MAX_TOKENS",
    "TRUNCATE_FLOOR_CHARS",
    "summarize_history",
    "truncate_history",
]

log = logger("noetic.layers")

#: Characters of an item's text that `truncate` always keeps.
TRUNCATE_FLOOR_CHARS = 200
#: Room the "characters truncated" marker takes.
_MARKER_CHARS = 40
#: The largest summary `summarize` makes room for (tokens).
SUMMARY_MAX_TOKENS = 1024
SUMMARY_INSTRUCTIONS = (
    "You compress the earlier part of a conversation so an assistant can continue it. Write a "
    "concise summary of the transcript you are given: the user's goals, decisions made, facts "
    "learned, tool results that still matter and open questions. Output only the summary."
)
SUMMARY_TAG = "conversation_summary"


def _room_for(history: Sequence[Item], room: float, tokens: Callable[[Item], int]) -> int:
    """How many of the newest items of `history` fit in `room` tokens."""
    count = 0
    for item in reversed(history):
        room -= tokens(item)
        if room < 0:
            break
        count += 1
    return count


# --- truncate ------------------------------------------------------------------------------


def truncate_history(history: Sequence[Item], room: float, tokens: Callable[[Item], int]) -> list[Item]:
    """`history` with the text of its oldest items cut until it fits `room` tokens (BG-7)."""
    excess = sum(map(tokens, history)) - room
    if excess <= 0:
        return list(history)
    kept: list[Item] = []
    for index, item in enumerate(history):
        if excess > 0 and index < len(history) - 1:
            cut = _cut(item, int(excess))
            if cut is not None:
                excess -= tokens(item) - tokens(cut)
                item = cut
        kept.append(item)
    return kept


def _cut(item: Item, excess_tokens: int) -> Item | None:
    """`item` with about `excess_tokens` of text removed (never below the floor), or None."""
    text = _text_of(item)
    if text is None or len(text) <= TRUNCATE_FLOOR_CHARS:
        return None
    keep = max(TRUNCATE_FLOOR_CHARS, len(text) - excess_tokens * CHARS_PER_TOKEN - _MARKER_CHARS)
    shortened = f"{text[:keep]}\n[… {len(text) - keep} characters truncated]"
    if len(shortened) >= len(text):
        return None
    if isinstance(item, FunctionCallOutputItem):
        return item.model_copy(update={"id": new_item_id("fco"), "output": shortened})
    assert isinstance(item, MessageItem)
    part = OutputText(text=shortened) if item.role == "assistant" else InputText(text=shortened)
    return item.model_copy(update={"id": new_item_id("msg"), "content": [part]})


def _text_of(item: Item) -> str | None:
    """The text `truncate` may cut: a tool output, or a message made only of text parts."""
    if isinstance(item, FunctionCallOutputItem):
        return item.output
    if isinstance(item, MessageItem) and all(isinstance(p, InputText | OutputText) for p in item.content):
        return item.text
    return None


# --- summarize -----------------------------------------------------------------------------


async def summarize_history(
    history: Sequence[Item],
    room: float,
    tokens: Callable[[Item], int],
    *,
    model: ModelAdapter,
    ctx: Context,
    memory: SummaryMemory,
) -> list[Item]:
    """`history` with what does not fit `room` replaced by a model-written summary (BG-8)."""
    if sum(map(tokens, history)) <= room:
        return list(history)
    reserve = max(0, min(SUMMARY_MAX_TOKENS, int(room // 4)))
    fitting = _room_for(history, room - reserve, tokens)
    dropped = history[: len(history) - fitting]
    if not dropped or reserve == 0:
        return list(history)
    covered, previous = memory.find(dropped)
    summary = previous
    if covered < len(dropped):
        try:
            summary = await _summarize(previous, dropped[covered:], model, ctx, room)
        except Exception as exc:
            if is_cancellation(exc):
                raise
            log.warning("summarize overflow: the summary call failed, dropping old history: %s", exc)
            return list(history)
        memory.remember(dropped[-1], summary)
    assert summary is not None
    text = summary[: reserve * CHARS_PER_TOKEN - 64]  # the tags and the message take the rest
    return [developer_message(f"<{SUMMARY_TAG}>\n{text}\n</{SUMMARY_TAG}>"), *history[len(dropped) :]]


async def _summarize(
    previous: str | None, items: Sequence[Item], model: ModelAdapter, ctx: Context, room: float
) -> str:
    """One summary call on `model`; its usage and cost are charged to `ctx`."""
    transcript = _transcript(items)
    limit = int(room) * CHARS_PER_TOKEN
    if len(transcript) > limit:  # the summary model sees at most one window
        transcript = "[earlier part omitted]\n" + transcript[-limit:]
    if previous:
        transcript = f"Summary so far:\n{previous}\n\nThen:\n{transcript}"
    request = ModelRequest(
        model_id=model.model_id,
        items=(user_message(transcript),),
        instructions=SUMMARY_INSTRUCTIONS,
        execution_id=ctx.id,
        thread_id=ctx.thread_id,
        billing=ctx._exec.billing(ctx),
    )
    response: ModelResponse | None = None
    async with aclosing(model.stream(request, cancel=ctx)) as stream:  # type: ignore[type-var]
        async for event in stream:
            if isinstance(event, ModelResponse):
                response = event
    if response is None:
        raise NoeticError(
            "model_stream_error", f"model {model.model_id!r} ended the summary without a response"
        )
    cost = to_decimal(response.cost)
    ctx._record_round(
        response.usage, cost, cost if response.billed_cost is None else to_decimal(response.billed_cost)
    )
    text = "".join(i.text for i in response.items if isinstance(i, MessageItem) and i.role == "assistant")
    if not text.strip():
        raise NoeticError("model_stream_error", f"model {model.model_id!r} wrote an empty summary")
    return text.strip()


def _transcript(items: Sequence[Item]) -> str:
    """The items as plain text lines for the summary model."""
    lines = []
    for item in items:
        if isinstance(item, MessageItem):
            lines.append(f"{item.role}: {item.text}")
        elif isinstance(item, FunctionCallItem):
            lines.append(f"tool call {item.name}({item.arguments})")
        elif isinstance(item, FunctionCallOutputItem):
            lines.append(f"tool result: {item.output}")
        else:
            lines.append(f"[{item.type}] {json.dumps(item.model_dump(mode='json'), default=str)[:500]}")
    return "\n".join(lines)
