"""Typed channels between steps, spawn children, parallel paths and the outside world
(rules CH-1..CH-13).

A channel is declared once (`channel(name, schema=..., mode=...)`) and identified by its name
within an execution: every context of one root execution (the turn, its spawn children and
parallel paths) shares one `ChannelStore`, and each root execution has its own (CH-13). A store
opens with the execution and closes when it completes; whatever was sent and not received is
dropped then, so a value sent during one turn — an aborted one included — never reaches the
next turn on the same harness, and a resumed execution starts with empty channels.

- `value`: `send` overwrites and wakes every waiting receiver; `recv` returns the current value
  (waiting for the first write); `try_recv` reads without consuming.
- `queue`: FIFO. A value goes to the oldest waiting receiver, else into the buffer while below
  `capacity`; at capacity the sender parks in a FIFO of senders. Each dequeue (`recv` or
  `try_recv`) moves the oldest parked value into the freed slot and releases its sender.
- `topic`: `send` reaches the receivers waiting at that moment and every subscription
  (`ctx.subscribe`, `harness.get_channel_stream`), and is dropped otherwise.

Waits time out after their per-call `timeout`, else the harness `channel_timeout` (30 s by
default; `timeout=0` waits forever), and are rejected with `cancelled` when the waiting context
is aborted. Values are validated against the channel schema on every send; a bad value raises
`channel_invalid_value`. Code outside the execution reaches its channels through
`harness.get_channel_handle` / `harness.get_channel_stream` (`ChannelHandle`, CH-10, CH-11).
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import anyio

from noetic.errors import NoeticConfigError, NoeticError
from noetic.logs import logger
from noetic.records import FrozenRecord, set_field
from noetic.schema import Schema, SchemaError

if TYPE_CHECKING:
    from noetic.execution_context import Context

__all__ = ["Channel", "ChannelHandle", "ChannelHub", "ChannelMode", "ChannelStore", "channel"]

T = TypeVar("T")
ChannelMode = Literal["queue", "value", "topic"]
log = logger("noetic.channels")
#: How many closed execution ids the hub remembers, so a late handle reports `closed`.
_CLOSED_MEMORY = 4096
#: How many executions that have not started yet may hold channels opened by a handle; past it
#: the oldest is closed, so handles for ids that never run (a typo, a hostile caller) stay bounded.
_PENDING_LIMIT = 1024


class Channel(FrozenRecord, Generic[T]):
    """A channel declaration: a name, a value schema, a mode and (queue only) a capacity."""

    __slots__ = ("capacity", "mode", "name", "schema")
    name: str
    schema: Schema
    mode: ChannelMode
    capacity: int

    def __init__(self, name: str, schema: Schema, mode: ChannelMode = "queue", capacity: int = 1000) -> None:
        set_field(self, "name", name)
        set_field(self, "schema", schema)
        set_field(self, "mode", mode)
        set_field(self, "capacity", capacity)


def channel(name: str, *, schema: Any, mode: ChannelMode = "queue", capacity: int = 1000) -> Channel[Any]:
    """Declare a channel; `schema` is a pydantic model, a Python type or a JSON Schema dict."""
    if not name:
        raise NoeticConfigError(
            "INVALID_CHANNEL", "a channel needs a non-empty name", hint="Pass name='...'."
        )
    if mode not in ("queue", "value", "topic"):
        raise NoeticConfigError(
            "INVALID_CHANNEL",
            f"channel {name!r} has unknown mode {mode!r}",
            hint="Use mode='queue', 'value' or 'topic'.",
        )
    if capacity < 1:
        raise NoeticConfigError(
            "INVALID_CHANNEL",
            f"channel {name!r} has capacity {capacity}",
            hint="Give a queue channel a capacity of at least 1.",
        )
    return Channel(name, Schema.of(schema), mode, capacity)


class _Closed:
    """Handed to every waiter when its store closes."""


_CLOSED = _Closed()


class _Waiter:
    """One blocked `recv` or parked `send`: resolved with a value (or `_CLOSED`), or pending."""

    __slots__ = ("done", "event", "value")

    def __init__(self, value: Any = None):
        self.event = anyio.Event()
        self.value = value
        self.done = False

    def resolve(self, value: Any = None) -> None:
        self.value = value
        self.done = True
        self.event.set()


class _Subscription:
    """A persistent tap on a topic or value channel: every value sent after it was opened,
    buffered up to the channel's capacity (the oldest is dropped, with a warning, past it)."""

    __slots__ = ("buffer", "capacity", "ended", "name", "wake")

    def __init__(self, name: str, capacity: int):
        self.name = name
        self.capacity = capacity
        self.buffer: deque[Any] = deque()
        self.ended = False
        self.wake: anyio.Event | None = None

    def push(self, value: Any) -> None:
        if len(self.buffer) >= self.capacity:
            self.buffer.popleft()
            log.warning("subscription to channel %r is full; dropped its oldest value", self.name)
        self.buffer.append(value)
        self._notify()

    def end(self) -> None:
        self.ended = True
        self._notify()

    def _notify(self) -> None:
        if self.wake is not None:
            self.wake.set()
            self.wake = None


class _State:
    __slots__ = ("buffer", "has_value", "receivers", "senders", "subscriptions", "value")

    def __init__(self) -> None:
        self.buffer: deque[Any] = deque()
        self.receivers: deque[_Waiter] = deque()
        self.senders: deque[_Waiter] = deque()
        self.subscriptions: list[_Subscription] = []
        self.value: Any = None
        self.has_value = False


class ChannelStore:
    """The channels of one root execution, keyed by channel name (CH-13)."""

    def __init__(self, default_timeout: float = 30.0):
        self.default_timeout = default_timeout
        self.closed = False
        self._states: dict[str, _State] = {}

    def _state(self, ch: Channel[Any]) -> _State:
        if self.closed:
            raise _closed_error(ch)
        state = self._states.get(ch.name)
        if state is None:
            state = self._states[ch.name] = _State()
        return state

    def close(self) -> None:
        """Close every channel: waiters get `channel_closed`, subscriptions end (after what
        they buffered), values not received are dropped."""
        if self.closed:
            return
        self.closed = True
        for state in self._states.values():
            for waiter in (*state.receivers, *state.senders):
                waiter.resolve(_CLOSED)
            for subscription in state.subscriptions:
                subscription.end()
        self._states.clear()

    # --- send -------------------------------------------------------------------------------

    async def send(
        self, ctx: Context | None, ch: Channel[Any], value: Any, timeout: float | None = None
    ) -> None:
        """Deliver `value` following the channel's mode (CH-2, CH-3, CH-7); a sender parked on
        a full queue waits up to `timeout` seconds (default: the store's; 0 = forever)."""
        value = _validated(ch, value)
        state = self._state(ch)
        if self._deliver(ch, state, value):
            return
        parked = _Waiter(value)
        state.senders.append(parked)
        limit = self.default_timeout if timeout is None else timeout
        await self._wait(ctx, ch, parked, state.senders, limit, state=None)

    def send_nowait(self, ch: Channel[Any], value: Any) -> None:
        """An external send: never parks; on a full queue the oldest value is dropped (CH-10)."""
        value = _validated(ch, value)
        state = self._state(ch)
        if self._deliver(ch, state, value):
            return
        state.buffer.popleft()
        log.warning(
            "channel %r is at capacity (%d); dropped its oldest value for an external send",
            ch.name,
            ch.capacity,
        )
        state.buffer.append(value)

    def _deliver(self, ch: Channel[Any], state: _State, value: Any) -> bool:
        """Deliver without waiting; False when a queue is at capacity (nothing was done)."""
        if ch.mode == "queue":
            if state.receivers:
                state.receivers.popleft().resolve(value)
                return True
            if len(state.buffer) < ch.capacity:
                state.buffer.append(value)
                return True
            return False
        if ch.mode == "value":
            state.value, state.has_value = value, True
        while state.receivers:
            state.receivers.popleft().resolve(value)
        for subscription in state.subscriptions:
            subscription.push(value)
        return True

    # --- receive ----------------------------------------------------------------------------

    async def recv(self, ctx: Context | None, ch: Channel[Any], timeout: float | None) -> Any:
        """Receive one value, waiting up to `timeout` seconds (0 = forever) (CH-6)."""
        state = self._state(ch)
        if ch.mode == "value" and state.has_value:
            return state.value
        if ch.mode == "queue" and state.buffer:
            return self._dequeue(state)
        waiter = _Waiter()
        state.receivers.append(waiter)
        limit = self.default_timeout if timeout is None else timeout
        return await self._wait(ctx, ch, waiter, state.receivers, limit, state=state)

    def try_recv(self, ch: Channel[Any]) -> Any:
        """The next value without blocking, or None (never raises, CH-8)."""
        state = self._states.get(ch.name)
        if state is None:
            return None
        if ch.mode == "value":
            return state.value if state.has_value else None
        if ch.mode == "queue" and state.buffer:
            return self._dequeue(state)
        return None

    def _dequeue(self, state: _State) -> Any:
        """Pop the oldest buffered value and move the oldest parked sender into the slot (CH-4)."""
        value = state.buffer.popleft()
        if state.senders:
            parked = state.senders.popleft()
            state.buffer.append(parked.value)
            parked.resolve()
        return value

    # --- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, ctx: Context | None, ch: Channel[Any]) -> AsyncIterator[Any]:
        """Every value of `ch` from now until the store closes (CH-11).

        `topic`: each value sent after subscribing, none missed while the consumer is busy
        (up to `capacity` buffered). `value`: the current value if there is one, then each new
        one. `queue`: values taken in turn with the other receivers. An aborted `ctx` ends the
        iteration with `cancelled`.
        """
        if self.closed:
            return
        if ch.mode == "queue":
            while not self.closed:
                try:
                    yield await self.recv(ctx, ch, math.inf)  # a stream never times out (CH-11)
                except NoeticError as exc:
                    if exc.code == "channel_closed":
                        return
                    raise
            return
        state = self._state(ch)
        tap = _Subscription(ch.name, ch.capacity)
        if ch.mode == "value" and state.has_value:
            tap.push(state.value)
        state.subscriptions.append(tap)
        try:
            while True:
                if tap.buffer:
                    yield tap.buffer.popleft()
                    continue
                if tap.ended:
                    return
                tap.wake = anyio.Event()
                if ctx is None:
                    await tap.wake.wait()
                else:
                    with ctx.abortable():
                        await tap.wake.wait()
        finally:
            with contextlib.suppress(ValueError):
                state.subscriptions.remove(tap)

    # --- waiting ----------------------------------------------------------------------------

    async def _wait(
        self,
        ctx: Context | None,
        ch: Channel[Any],
        waiter: _Waiter,
        queue: deque[_Waiter],
        timeout: float,
        *,
        state: _State | None,
    ) -> Any:
        """Wait for `waiter`; `state` is given for a receiver, whose value is put back if the
        wait is cancelled after a value was already handed to it."""
        if timeout == 0:
            log.warning("waiting on channel %r with no timeout", ch.name)
        limit = math.inf if timeout == 0 else timeout
        try:
            with contextlib.ExitStack() as scopes:
                if ctx is not None:
                    scopes.enter_context(ctx.abortable())
                scopes.enter_context(anyio.move_on_after(limit))
                await waiter.event.wait()
        except BaseException:
            if waiter.done and state is not None and ch.mode == "queue" and waiter.value is not _CLOSED:
                state.buffer.appendleft(waiter.value)
            raise
        finally:
            if not waiter.done:
                with contextlib.suppress(ValueError):
                    queue.remove(waiter)
        if not waiter.done:
            raise NoeticError(
                "channel_timeout",
                f"channel {ch.name!r}: nothing arrived within {timeout} s",
                channel_name=ch.name,
                timeout=timeout,
            )
        if waiter.value is _CLOSED:
            raise _closed_error(ch)
        return waiter.value


def _validated(ch: Channel[Any], value: Any) -> Any:
    try:
        return ch.schema.validate(value)
    except SchemaError as exc:
        raise NoeticError(
            "channel_invalid_value",
            f"value sent to channel {ch.name!r} does not match its schema: {exc}",
            channel_name=ch.name,
        ) from None


def _closed_error(ch: Channel[Any]) -> NoeticError:
    return NoeticError(
        "channel_closed",
        f"channel {ch.name!r}: its execution has completed, so its channels are closed",
        channel_name=ch.name,
    )


class ChannelHub:
    """The harness's channel stores, one per live root execution (CH-13)."""

    def __init__(self, default_timeout: float = 30.0):
        self.default_timeout = default_timeout
        self._stores: dict[str, ChannelStore] = {}
        self._pending: OrderedDict[str, ChannelStore] = OrderedDict()
        self._closed: OrderedDict[str, ChannelStore] = OrderedDict()

    def for_execution(self, execution_id: str) -> ChannelStore:
        """The store of a starting execution: the one a handle opened early, else a new one
        (a resumed execution id gets fresh channels)."""
        self._closed.pop(execution_id, None)
        store = self._stores.get(execution_id) or self._pending.pop(execution_id, None)
        if store is None:
            store = ChannelStore(self.default_timeout)
        self._stores[execution_id] = store
        return store

    def for_handle(self, execution_id: str) -> ChannelStore:
        """The store a handle binds to: the live one, a closed one still remembered, or one
        opened for an execution that has not started yet (at most `_PENDING_LIMIT` of those)."""
        store = self._stores.get(execution_id) or self._closed.get(execution_id)
        if store is None:
            store = self._pending.get(execution_id)
        if store is None:
            store = self._pending[execution_id] = ChannelStore(self.default_timeout)
            while len(self._pending) > _PENDING_LIMIT:
                _, evicted = self._pending.popitem(last=False)
                evicted.close()
                log.warning("closed the channels of an execution that never started (too many pending)")
        return store

    def close(self, execution_id: str) -> None:
        """Close the store of a completed execution (if it has one)."""
        store = self._stores.pop(execution_id, None)
        if store is None:
            return
        store.close()
        self._closed[execution_id] = store
        while len(self._closed) > _CLOSED_MEMORY:
            self._closed.popitem(last=False)

    def close_all(self) -> None:
        """Close every store (the harness is shutting down)."""
        for execution_id in tuple(self._stores):
            self.close(execution_id)
        for store in self._pending.values():
            store.close()
        self._pending.clear()


class ChannelHandle(Generic[T]):
    """One channel of one execution, for code outside it (a web handler, a person approving a
    step): `send` never blocks (CH-10), `recv` waits like a step's, `closed` is True once the
    execution has completed (then `send` raises `channel_closed`)."""

    __slots__ = ("_store", "channel", "execution_id")

    def __init__(self, store: ChannelStore, ch: Channel[T], execution_id: str):
        self._store = store
        self.channel = ch
        self.execution_id = execution_id

    @property
    def closed(self) -> bool:
        """Whether the execution has completed (its channels are closed)."""
        return self._store.closed

    def send(self, value: T) -> None:
        """Send without waiting; a full queue drops its oldest value (with a warning)."""
        self._store.send_nowait(self.channel, value)

    async def recv(self, *, timeout: float | None = None) -> T:
        """Receive one value (default timeout: the harness channel timeout; 0 = forever)."""
        value: T = await self._store.recv(None, self.channel, timeout)
        return value

    def try_recv(self) -> T | None:
        """The next value without blocking, or None."""
        value: T | None = self._store.try_recv(self.channel)
        return value

    def stream(self) -> AsyncIterator[T]:
        """Every value from now until the execution completes; see `ChannelStore.subscribe`."""
        return self._store.subscribe(None, self.channel)

    def __repr__(self) -> str:
        return (
            f"<ChannelHandle {self.channel.name!r} of {self.execution_id}{' closed' if self.closed else ''}>"
        )
