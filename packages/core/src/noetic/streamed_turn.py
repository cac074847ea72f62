"""`StreamedTurn`: one turn run in the background while its caller reads the turn's events.

`AgentHarness.stream(input)` returns one. Entering it subscribes to the thread's stream
*before* the input is queued, so no event of the turn can be missed, whatever the scheduler
does; iterating gives every `StreamEvent` of that turn (`items()` gives item snapshots) and
ends when the turn ends — also when it fails or is aborted, so the loop cannot hang. After the
loop, `response` is the turn's `HarnessResponse` (a failed turn raises its `NoeticError`).

Leaving the block waits for the turn to finish (a loop left early with `break` does not abort
the turn); leaving it with an exception aborts the turn (cooperatively: it stops at its next
step boundary or Noetic wait) and propagates at once. Either way the subscription is closed,
and the turn's own error never replaces the block's exception.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Generic

from noetic.errors import NoeticConfigError
from noetic.items import Item
from noetic.steps.base import OutT
from noetic.streams import StreamEvent, items_from_events

if TYPE_CHECKING:
    from noetic.harness import AgentHarness, HarnessResponse, _Session, _Ticket
    from noetic.streams import Subscription

__all__ = ["StreamedTurn"]


class StreamedTurn(Generic[OutT]):
    """A turn started by `AgentHarness.stream`; see the module docstring."""

    __slots__ = ("_done", "_harness", "_queue", "_session", "_subscription", "_ticket")

    def __init__(self, harness: AgentHarness[OutT], session: _Session, queue: Callable[[], _Ticket]) -> None:
        self._harness = harness
        self._session = session
        self._queue = queue
        self._subscription: Subscription | None = None
        self._ticket: _Ticket | None = None
        self._done = False

    async def __aenter__(self) -> StreamedTurn[OutT]:
        if self._subscription is not None:
            raise NoeticConfigError(
                "HARNESS_NOT_STARTED",
                "this streamed turn was already entered",
                hint="Call harness.stream(input) again for each turn.",
            )
        from noetic.streams import Subscription

        # the thread's session now: the one seen when the turn was made may have been evicted
        self._session = self._harness._session(self._session.thread_id)
        self._subscription = Subscription(self._session.stream)
        try:
            self._ticket = self._queue()
        except BaseException:
            self._subscription.close()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ticket = self._ticket
        assert ticket is not None
        assert self._subscription is not None
        try:
            if exc_type is None:
                # Waiting keeps the caller's `response` readable and no work running behind
                # its back; the block's own exception must not wait for anything.
                await ticket.wait()
            elif not ticket.finished:
                current = self._session.current
                if ticket.turn_id is None:  # still queued behind another turn
                    self._harness._withdraw(self._session, ticket)
                elif current is not None:  # cooperative: the turn stops at its next boundary
                    current.abort("the streaming caller left with an error")
        finally:
            self._subscription.close()

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self.events()

    async def events(self) -> AsyncIterator[StreamEvent]:
        """Every event of this turn, from `turn_started` to the event that ends it."""
        ticket, subscription = self._ticket, self._subscription
        if ticket is None or subscription is None:
            raise NoeticConfigError(
                "HARNESS_NOT_STARTED",
                "a streamed turn is read inside its `async with` block",
                hint="Write `async with harness.stream(input) as turn: async for event in turn: ...`.",
            )
        if self._done:
            return
        stream = self._session.stream
        mine = False
        while True:
            event = await subscription.next()
            if event is None:  # the harness exited before this turn ended
                self._done = True
                return
            if not mine:
                # Events of a turn that was running when this one was queued come first: skip them.
                mine = event.type.endswith(":turn_started") and event.data.get("turn_id") == ticket.turn_id
                if not mine:
                    continue
            yield event
            if stream.is_turn_end(event):
                self._done = True
                return

    def items(self) -> AsyncIterator[Item]:
        """Item snapshots of this turn (in-progress ones have `is_complete` False)."""
        return items_from_events(self.events())

    @property
    def finished(self) -> bool:
        """Whether the turn has ended."""
        return self._ticket is not None and self._ticket.finished

    @property
    def response(self) -> HarnessResponse[OutT]:
        """The turn's response once it has ended; a failed turn raises its `NoeticError`."""
        ticket = self._ticket
        if ticket is None or not ticket.finished:
            raise NoeticConfigError(
                "TURN_NOT_FINISHED",
                "the streamed turn has not finished yet",
                hint="Read `response` after the `async for` loop over the turn, or after the `async with` block.",
            )
        if ticket.error is not None:
            raise ticket.error
        assert ticket.response is not None
        return ticket.response

    async def get_response(self) -> HarnessResponse[OutT]:
        """Wait for the turn to end and return its response (a failed turn raises its error)."""
        assert self._ticket is not None, "enter the streamed turn with `async with` first"
        await self._ticket.wait()
        return self.response
