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


class LiveRelay:
    """The fan-out of pushed events to SSE subscribers."""

    def __init__(self) -> None:
        self._recent: deque[str] = deque(maxlen=BUFFER)
        self._subscribers: list[tuple[deque[str], anyio.Event]] = []
        self._events: list[anyio.Event] = []

    def publish(self, events: list[Any]) -> None:
        """Add pushed events (each re-encoded as compact JSON) and wake every subscriber."""
        for event in events:
            line = json.dumps(event, separators=(",", ":"))
            self._recent.append(line)
            for pending, _ in self._subscribers:
                pending.append(line)
        for i, (pending, wake) in enumerate(self._subscribers):
            wake.set()
            self._subscribers[i] = (pending, anyio.Event())

    async def subscribe(self) -> AsyncIterator[str]:
        """The buffered events, then each new one, as SSE `data:` frames (until cancelled)."""
        pending: deque[str] = deque(self._recent, maxlen=BUFFER)
        entry = (pending, anyio.Event())
        self._subscribers.append(entry)
        try:
            yield ": connected\n\n"
            while True:
                while pending:
                    yield f"data: {pending.popleft()}\n\n"
                for queued, wake in self._subscribers:
                    if queued is pending:
                        await wake.wait()
                        break
        finally:
            self._subscribers = [s for s in self._subscribers if s[0] is not pending]
