"""The harness streams: framework and model events of one turn, delivered to subscribers.

Every event is a `StreamEvent(source, type, data)`: `source="framework"` for runtime events
typed `{harness name}:{event}` (`turn_started`, `item_appended`, `step_started`, …) and
`source="sdk"` for model deltas (`response.output_text.delta`, …). A `TurnStream` belongs to one
thread; it keeps the events of the running turn (up to 10,000, dropped when it ends) so a
subscriber that arrives mid-turn sees them, and ends each subscription when the turn ends.
Publishing costs one append per event plus one append per subscriber; a waiting subscriber is
woken once per batch.

Most turns have no reader at all (`run()` with nobody subscribed): the framework events of
such a turn are kept in the buffer as the function that builds each one and its arguments
(`deliver_later`), and built only if a subscriber arrives mid-turn and replays them, so a turn
nobody watches never makes their payload dicts. What a subscriber reads is the same either way.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from functools import lru_cache
from typing import Any, Literal, NamedTuple

import anyio

from noetic.empty_lists import MaybeList, added, removed
from noetic.items import Item
from noetic.model import ReasoningDelta, TextDelta

__all__ = ["DELTA_BATCH", "TURN_END_EVENTS", "StreamEvent", "Subscription", "TurnStream", "items_from_events"]

#: Event names (after the `{name}:` prefix) that end a turn.
TURN_END_EVENTS = frozenset({"turn_completed", "turn_failed", "turn_aborted"})
_BUFFER = 10_000
#: The full-stream event type of each model delta.
_DELTA_TYPES: dict[type, str] = {
    TextDelta: "response.output_text.delta",
    ReasoningDelta: "response.reasoning_text.delta",
}
_new_tuple = tuple.__new__
#: A framework event kept unbuilt in a turn's buffer: the function that builds it from the
#: stream's `{harness name}:` prefix and the arguments, and those arguments (`deliver_later`).
_Unbuilt = tuple[Callable[..., "StreamEvent"], tuple[Any, ...]]
#: A model step lets the event loop run after this many deltas in a row (ST-2): a model stream
#: that never suspends (an in-memory adapter, a burst already buffered) would otherwise run
#: to its end before any subscriber read a delta, holding every event of the round in memory.
DELTA_BATCH = 1024


class StreamEvent(NamedTuple):
    """One event of the full stream (an immutable named tuple: cheap on the hot path)."""

    source: Literal["sdk", "framework"]
    type: str
    data: Any


class Subscription:
    """One subscriber's queue of events, registered when it is made (nothing published after
    that is missed). `next()` waits for the next event; `close()` unregisters it."""

    __slots__ = ("_stream", "pending", "wake")

    def __init__(self, stream: TurnStream) -> None:
        self._stream = stream
        self.pending: deque[StreamEvent] = deque()
        self.wake: anyio.Event | None = None
        stream._subscribe(self)

    async def next(self) -> StreamEvent | None:
        """The next event, waiting until one is published; None once the stream is closed."""
        await self.next_batch()
        return self.pending.popleft() if self.pending else None

    async def next_batch(self) -> None:
        """Return once at least one event is pending, or the stream is closed."""
        while not self.pending and not self._stream.closed:
            wake = self.wake = anyio.Event()
            await wake.wait()

    def close(self) -> None:
        """Stop receiving events (idempotent)."""
        self._stream._unsubscribe(self)


@lru_cache(maxsize=64)
def _end_types(harness_name: str) -> frozenset[str]:
    """The full event types that end a turn of harness `harness_name` (shared by its threads)."""
    return frozenset(f"{harness_name}:{name}" for name in TURN_END_EVENTS)


class TurnStream:
    """The events of one thread's turns and their subscribers."""

    __slots__ = ("_buffer", "_end_types", "_prefix", "_subscribers", "active", "closed", "tap")

    def __init__(self, harness_name: str):
        #: The running turn's events so far, for late subscribers (framework events nobody has
        #: read yet unbuilt, `deliver_later`); None between turns, so an idle thread holds no
        #: buffer.
        self._buffer: deque[StreamEvent | _Unbuilt] | None = None
        #: What every framework event type of this stream starts with.
        self._prefix = f"{harness_name}:"
        #: The subscriptions; `()` when there are none (most threads, between their turns,
        #: keep no empty list).
        self._subscribers: MaybeList[Subscription] = ()
        self._end_types = _end_types(harness_name)
        self.active = False
        #: Called with every event as it is delivered (the inspector's `EventSink`), or None.
        self.tap: Callable[[StreamEvent], None] | None = None
        #: Set when the harness has exited: no turn will come, so subscriptions end.
        self.closed = False

    @property
    def subscribed(self) -> bool:
        """Whether anyone is subscribed to this stream now."""
        return bool(self._subscribers)

    def _subscribe(self, sub: Subscription) -> None:
        self._subscribers = added(self._subscribers, sub)

    def _unsubscribe(self, sub: Subscription) -> None:
        rest = removed(self._subscribers, sub)
        if rest is not None:
            self._subscribers = rest

    def close(self) -> None:
        """End every subscription that is waiting for a turn (the harness is gone)."""
        self.closed = True
        for sub in self._subscribers:
            wake = sub.wake
            if wake is not None:
                sub.wake = None
                wake.set()

    def start_turn(self) -> None:
        """Begin buffering a new turn."""
        self._buffer = deque(maxlen=_BUFFER)
        self.active = True

    def publish_delta(self, delta: TextDelta | ReasoningDelta) -> None:
        """Publish one model delta (`source="sdk"`): the per-delta path, kept to one call.

        The event tuple is made with `tuple.__new__` (the named tuple's own `__new__` is a
        Python function: a second call per delta), and delivery is `deliver` inlined.
        """
        event = _new_tuple(StreamEvent, ("sdk", _DELTA_TYPES[type(delta)], delta))
        buffer = self._buffer
        if buffer is not None:  # None only between turns, when no delta is published
            buffer.append(event)
        if self.tap is not None:
            self.tap(event)
        for sub in self._subscribers:
            sub.pending.append(event)
            wake = sub.wake
            if wake is not None:
                sub.wake = None
                wake.set()

    def deliver(self, event: StreamEvent) -> None:
        """Deliver one event that cannot end the turn to the buffer and every subscriber; a
        waiting subscriber is woken once (`publish` also ends the turn's buffering on a turn-end
        event)."""
        buffer = self._buffer
        if buffer is not None:
            buffer.append(event)
        if self.tap is not None:
            self.tap(event)
        for sub in self._subscribers:
            sub.pending.append(event)
            wake = sub.wake
            if wake is not None:
                sub.wake = None
                wake.set()

    def deliver_later(self, build: Callable[..., StreamEvent], *args: Any) -> None:
        """Deliver the framework event `build(prefix, *args)` makes (`prefix` is
        `"{harness name}:"`), an event that cannot end the turn.

        While nobody reads the stream (no subscriber, no tap) the buffer keeps only `build`
        and `args`; a subscriber arriving later in the turn gets the event built then
        (`subscribe`), equal to the one built now. `args` must be values that do not change
        afterwards (ids, numbers, items, usage).
        """
        if self._subscribers or self.tap is not None:
            self.deliver(build(self._prefix, *args))
            return
        buffer = self._buffer
        if buffer is not None:
            buffer.append((build, args))

    def publish(self, event: StreamEvent) -> None:
        """Deliver one event, ending the turn's buffering when it is a turn-end event."""
        self.deliver(event)
        if event.type in self._end_types:
            self.active = False
            self._buffer = None  # only subscribers of a running turn read it

    def is_turn_end(self, event: StreamEvent) -> bool:
        """True for the event that ends a turn of this stream."""
        return event.type in self._end_types

    def _built_buffer(self) -> deque[StreamEvent]:
        """The running turn's buffer with every unbuilt event built, kept built in it (so a
        second late subscriber replays the very same event objects)."""
        buffer = self._buffer
        assert buffer is not None
        if any(type(entry) is tuple for entry in buffer):  # a `StreamEvent` is a tuple subclass
            buffer = self._buffer = deque(map(self._built, buffer), maxlen=_BUFFER)
        return buffer  # type: ignore[return-value]  # every entry is a StreamEvent now

    def _built(self, entry: StreamEvent | _Unbuilt) -> StreamEvent:
        """A buffered entry as its event (an unbuilt one is built now)."""
        if isinstance(entry, StreamEvent):
            return entry
        build, args = entry
        return build(self._prefix, *args)

    async def subscribe(self) -> AsyncIterator[StreamEvent]:
        """Events of the running turn (from its start) or of the next one, until it ends."""
        sub = Subscription(self)
        if self.active and self._buffer is not None:
            sub.pending.extend(self._built_buffer())
        pending, end_types = sub.pending, self._end_types
        try:
            while True:
                while pending:  # drained inline: one wake-up per batch, not one await per event
                    event = pending.popleft()
                    yield event
                    if event.type in end_types:
                        return
                await sub.next_batch()
                if not pending:  # closed
                    return
        finally:
            sub.close()


async def items_from_events(events: AsyncIterator[StreamEvent]) -> AsyncIterator[Item]:
    """Item snapshots from full-stream events (HA-5).

    Appended items arrive complete; streaming assistant text arrives as in-progress message
    snapshots carrying the text so far (`noetic.snapshots`: each costs O(1) to make, whatever
    the length so far, and keeps its own text); custom-item events arrive as in-progress custom items
    whose `.event` is the latest payload. A later snapshot with the same id replaces earlier ones.
    """
    from noetic.snapshots import TextSoFar  # here: only item streams make snapshots

    texts: dict[str, TextSoFar] = {}
    async for event in events:
        data = event.data
        if event.source == "sdk":
            if type(data) is TextDelta and data.item_id is not None:
                text = texts.get(data.item_id)
                if text is None:
                    text = texts[data.item_id] = TextSoFar(data.item_id)
                yield text.add(data.text)  # O(1): the text is joined when read (ST-1)
        elif event.type.endswith(":item_appended"):
            item = data["item"]
            texts.pop(item.id, None)
            yield item
        else:
            snapshot = _custom_item_snapshot(data)
            if snapshot is not None:
                yield snapshot


def _custom_item_snapshot(data: Any) -> Item | None:
    """The in-progress custom item of a custom-item event's data (None for any other data).

    Only `noetic.custom_items` publishes such events, so while it is not imported (a program
    that declares no custom item) there is none to look for, and it is not imported for that.
    """
    custom = sys.modules.get("noetic.custom_items")
    if custom is None or not isinstance(data, custom.CustomItemEvent):
        return None
    snapshot: Item = custom.CustomItem.snapshot(data.id, data.type, data.declaration, data.event)
    return snapshot
