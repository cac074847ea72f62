"""How long one model call may take: an idle timeout between events and a total deadline.

Three clocks bound a call, so neither a silent server nor a chatty one can hold it forever:

- the HTTP client's `read` timeout (`OpenRouterProvider(timeout=...)`, 120 s by default) ends
  a connection on which no byte at all arrives;
- `idle` (180 s by default) ends a stream in which no *event* arrives: keep-alive comments
  (`: OPENROUTER PROCESSING`) prove the connection is up, not that the model is working, so
  they do not reset it;
- `total` (600 s by default) ends the whole call — sending, retry waits and the full answer.

A call that runs out of time before its answer started fails with `model_error`; one that runs
out while streaming fails with `model_stream_error` (retryable), and its ceiling is held and
reconciled like any cut-off call. `None` switches a clock off.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio

__all__ = ["CallClock", "Deadlines", "OutOfTime"]

_FOREVER = float("inf")


class OutOfTime(Exception):
    """A call's idle timeout or total deadline ran out; the message says which."""


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Seconds: the longest wait between two stream events, and the longest whole call."""

    idle: float | None = 180.0
    total: float | None = 600.0

    def start(self) -> CallClock:
        """The clock of one call, started now."""
        return CallClock(self)


class CallClock:
    """The running clock of one call (see the module docstring)."""

    __slots__ = ("_deadlines", "_ends")

    def __init__(self, deadlines: Deadlines):
        self._deadlines = deadlines
        total = deadlines.total
        self._ends = _FOREVER if total is None else anyio.current_time() + total

    def remaining(self) -> float:
        """Seconds left before the total deadline (infinite when there is none)."""
        return self._ends - anyio.current_time()

    def next_event(self) -> float:
        """Seconds to wait for the next stream event."""
        idle = self._deadlines.idle
        remaining = self.remaining()
        return remaining if idle is None else min(idle, remaining)

    def expired(self) -> OutOfTime:
        """The error for a wait that ran out: the total deadline if it has passed, else idle."""
        if self.remaining() <= 0:
            return OutOfTime(f"the call exceeded its total deadline of {self._deadlines.total:g} s")
        return OutOfTime(
            f"no event arrived for {self._deadlines.idle:g} s (keep-alive comments do not count)"
        )
