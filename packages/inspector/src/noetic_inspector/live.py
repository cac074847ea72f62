"""Live runs: events a harness pushes (`noetic.inspect_sink`), relayed to pages by SSE (IN-3).

A harness started with `inspect="http://127.0.0.1:8765"` (or `NOETIC_INSPECT`) POSTs its
stream events as JSON batches to `/api/live`; every page open on `/live` holds a
`text/event-stream` response and receives each event as one `data:` line. The relay keeps
the last `BUFFER` events, so a page opened mid-run sees what happened before it, and a
subscriber that falls behind by more than that loses the oldest (never unbounded memory).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio

__all__ = ["BUFFER", "LiveRelay"]

#: Events kept for late subscribers, and per subscriber.
BUFFER = 5000


class _Subscriber:
    """One open Live page: the frames it has not received yet, and how to wake it."""

    __slots__ = ("pending", "wake")

    def __init__(self, recent: deque[str]):
        self.pending: deque[str] = deque(recent, maxlen=BUFFER)
        self.wake = anyio.Event()


class LiveRelay:
    """The fan-out of pushed events to SSE subscribers."""

    def __init__(self) -> None:
        self._recent: deque[str] = deque(maxlen=BUFFER)
        self._subscribers: list[_Subscriber] = []

    def publish(self, events: list[Any]) -> None:
        """Add pushed events (each re-encoded as compact JSON) and wake every subscriber."""
        lines = [json.dumps(event, separators=(",", ":")) for event in events]
        self._recent.extend(lines)
        for sub in self._subscribers:
            sub.pending.extend(lines)
            sub.wake.set()

    async def subscribe(self) -> AsyncIterator[str]:
        """The buffered events, then each new one, as SSE `data:` frames (until cancelled)."""
        sub = _Subscriber(self._recent)
        self._subscribers.append(sub)
        try:
            yield ": connected\n\n"
            while True:
                while sub.pending:
                    yield f"data: {sub.pending.popleft()}\n\n"
                await sub.wake.wait()
                sub.wake = anyio.Event()
        finally:
            self._subscribers.remove(sub)
