"""Pushing a harness's stream events to a running `noetic inspect` page (the Live view, IN-3).

`AgentHarness(..., inspect="http://127.0.0.1:8765")`, or the `NOETIC_INSPECT` environment
variable when `inspect=` is not given, makes every event of the full stream go to an
`EventSink`: the event is turned into JSON on the spot (items and other models as their JSON
dump, anything else as its `repr`), queued, and POSTed in batches to `{url}/api/live` by a
daemon thread that runs while there is something to send, so the run never waits on the network. The queue holds at most `QUEUE` events
(the oldest go first); a failing POST drops its batch and is logged once. Only `http` URLs to
a loopback host are accepted (`INSPECT_URL_INVALID` otherwise), so events never leave the
machine. Written on the standard library (urllib, threading): the core takes no dependency.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from noetic.errors import NoeticConfigError
from noetic.logs import logger
from noetic.streams import StreamEvent

__all__ = ["QUEUE", "EventSink", "inspect_url"]

log = logger("noetic.inspect")

#: Events waiting to be sent, at most.
QUEUE = 10_000
_BATCH = 500
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def inspect_url(value: Any) -> str | None:
    """The checked `inspect=` URL (None turns the sink off)."""
    if value is None or value == "":
        return None
    parts = urlsplit(value) if isinstance(value, str) else None
    if (
        parts is None
        or not isinstance(value, str)
        or parts.scheme != "http"
        or parts.hostname not in _LOOPBACK
    ):
        raise NoeticConfigError(
            "INSPECT_URL_INVALID",
            f"inspect= must be an http URL on this machine (127.0.0.1 or localhost), got {value!r}",
            hint="Start `noetic inspect STORE --port 8765` and pass inspect='http://127.0.0.1:8765'.",
        )
    return value.rstrip("/")


def _plain(value: Any) -> Any:
    """A JSON-able form of an event's data (the `default=` of `json.dumps`)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    as_dict = getattr(value, "_asdict", None)
    if callable(as_dict):
        return as_dict()
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return repr(value)


class EventSink:
    """Queues events and sends them to one inspector from a background thread."""

    def __init__(self, url: str):
        self.url = f"{url}/api/live"
        self._queue: deque[str] = deque(maxlen=QUEUE)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._sending = False
        self._warned = False

    def __call__(self, event: StreamEvent) -> None:
        """Queue one event (never blocks, never raises)."""
        import json  # on first use: `import json` compiles its regexes (5 M instructions)

        try:
            text = json.dumps(
                {"source": event.source, "type": event.type, "data": event.data}, default=_plain
            )
        except (TypeError, ValueError, RecursionError):
            text = json.dumps({"source": event.source, "type": event.type, "data": None})
        with self._lock:
            self._queue.append(text)
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain, name="noetic-inspect", daemon=True)
                self._thread.start()

    def _drain(self) -> None:
        """Send batches until the queue is empty, then end (the next event starts a new thread)."""
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None
                    return
                batch = [self._queue.popleft() for _ in range(min(_BATCH, len(self._queue)))]
                self._sending = True
            try:
                self._post(f"[{','.join(batch)}]".encode())
            finally:
                with self._lock:
                    self._sending = False

    def _post(self, body: bytes) -> None:
        import urllib.request  # here: importing it costs the core's import time when unused

        request = urllib.request.Request(
            self.url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("could not send events to the inspector at %s: %s", self.url, exc)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait (blocking) until every queued event was sent; False when `timeout` ran out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._queue and not self._sending:
                    return True
            time.sleep(0.01)
        return False
