"""Typed channels between steps, spawn children and parallel paths (rules CH-1..CH-9).

A channel is declared once (`channel(name, schema=..., mode=...)`) and identified by its name
within a harness; every context of the harness shares one `ChannelStore`.

- `value`: `send` overwrites and wakes every waiting receiver; `recv` returns the current value
  (waiting for the first write); `try_recv` reads without consuming.
- `queue`: FIFO. A value goes to the oldest waiting receiver, else into the buffer while below
  `capacity`; at capacity the sender parks in a FIFO of senders. Each dequeue (`recv` or
  `try_recv`) moves the oldest parked value into the freed slot and releases its sender.
- `topic`: `send` reaches the receivers waiting at that moment and is dropped otherwise.

Waits time out with `channel_timeout` (the harness default is 30 s; `timeout=0` waits forever)
and are rejected with `cancelled` when the waiting context is aborted. Values are validated
against the channel schema on `send`; a bad value raises `channel_invalid_value`.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import anyio

from noetic.errors import NoeticConfigError, NoeticError
from noetic.schema import Schema, SchemaError

if TYPE_CHECKING:
    from noetic.execution_context import Context

__all__ = ["Channel", "ChannelMode", "ChannelStore", "channel"]

T = TypeVar("T")
ChannelMode = Literal["queue", "value", "topic"]
log = logging.getLogger("noetic.channels")


@dataclass(frozen=True, slots=True)
class Channel(Generic[T]):
    """A channel declaration: a name, a value schema, a mode and (queue only) a capacity."""

    name: str
    schema: Schema
    mode: ChannelMode = "queue"
    capacity: int = 1000


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


class _Waiter:
    """One blocked `recv` or parked `send`: resolved with a value, or left pending."""

    __slots__ = ("done", "event", "value")

    def __init__(self, value: Any = None):
        self.event = anyio.Event()
        self.value = value
        self.done = False

    def resolve(self, value: Any = None) -> None:
        self.value = value
        self.done = True
        self.event.set()


@dataclass(slots=True)
class _State:
    buffer: deque[Any] = field(default_factory=deque)
    receivers: deque[_Waiter] = field(default_factory=deque)
    senders: deque[_Waiter] = field(default_factory=deque)
    value: Any = None
    has_value: bool = False


class ChannelStore:
    """Per-harness channel state, keyed by channel name."""

    def __init__(self, default_timeout: float = 30.0):
        self.default_timeout = default_timeout
        self._states: dict[str, _State] = {}

    def _state(self, ch: Channel[Any]) -> _State:
        state = self._states.get(ch.name)
        if state is None:
            state = self._states[ch.name] = _State()
        return state

    # --- send -------------------------------------------------------------------------------

    async def send(self, ctx: Context, ch: Channel[Any], value: Any) -> None:
        """Deliver `value` following the channel's mode (CH-2, CH-3, CH-7)."""
        try:
            value = ch.schema.validate(value)
        except SchemaError as exc:
            raise NoeticError(
                "channel_invalid_value",
                f"value sent to channel {ch.name!r} does not match its schema: {exc}",
                channel_name=ch.name,
            ) from None
        state = self._state(ch)
        if ch.mode == "value":
            state.value, state.has_value = value, True
            while state.receivers:
                state.receivers.popleft().resolve(value)
            return
        if ch.mode == "topic":
            while state.receivers:
                state.receivers.popleft().resolve(value)
            return
        if state.receivers:
            state.receivers.popleft().resolve(value)
            return
        if len(state.buffer) < ch.capacity:
            state.buffer.append(value)
            return
        parked = _Waiter(value)
        state.senders.append(parked)
        await self._wait(ctx, ch, parked, state.senders, self.default_timeout, state=None)

    # --- receive ----------------------------------------------------------------------------

    async def recv(self, ctx: Context, ch: Channel[Any], timeout: float | None) -> Any:
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

    # --- waiting ----------------------------------------------------------------------------

    async def _wait(
        self,
        ctx: Context,
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
            with ctx.abortable(), anyio.move_on_after(limit):
                await waiter.event.wait()
        except BaseException:
            if waiter.done and state is not None and ch.mode == "queue":
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
        return waiter.value
