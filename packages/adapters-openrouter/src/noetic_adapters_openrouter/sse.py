"""A server-sent-events reader that follows the WHATWG `text/event-stream` grammar.

Why our own: OpenRouter streams depend on details that generic readers have got wrong —
comment keep-alives (`: OPENROUTER PROCESSING`), bare-CR and CRLF line endings, a leading
byte-order mark, events and UTF-8 sequences split across network reads, U+2028 inside JSON
(which is *not* a line break) — and we need hard size caps and a clear signal when a stream
ends without its final event.

`SseDecoder` is the incremental core: `feed(bytes)` returns the events completed by those
bytes; `finish()` reports whether the stream ended in the middle of an event (that event is
dropped, as the grammar says). `json_events(chunks)` is what the endpoints use: it yields each
event's data parsed as a JSON object, stops at `data: [DONE]`, and raises `SseError` on a
malformed payload, an oversized line or event, or a stream that ended before `[DONE]`.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DONE", "SseDecoder", "SseError", "SseEvent", "SseLimits", "json_events"]

#: The data payload OpenRouter sends as its last event on both endpoints.
DONE = "[DONE]"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


class SseError(Exception):
    """The byte stream is not a usable event stream (oversized, malformed or cut short).

    `truncated` is True when the stream ended before its final event.
    """

    def __init__(self, message: str, *, truncated: bool = False):
        super().__init__(message)
        self.truncated = truncated


@dataclass(frozen=True, slots=True)
class SseLimits:
    """Size caps, in characters: one line, and the data of one event."""

    max_line: int = 4 * 1024 * 1024
    max_event: int = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its type (`message` unless named), data, and last event id."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SseDecoder:
    """Incremental decoder: bytes in, complete events out (see the module docstring).

    `comments` counts comment lines seen (keep-alives); callers may treat any input as a
    sign of life.
    """

    __slots__ = (
        "_data",
        "_data_size",
        "_decoder",
        "_event",
        "_last_id",
        "_limits",
        "_line",
        "_retry",
        "_skip_lf",
        "_started",
        "comments",
    )

    def __init__(self, limits: SseLimits | None = None):
        self._limits = limits or SseLimits()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line = ""  # the unterminated tail of the text seen so far
        self._skip_lf = False  # the last chunk ended in CR: a leading LF belongs to it
        self._started = False  # a leading BOM has been checked for
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Decode `chunk` and return the events it completes."""
        return self._take(self._decoder.decode(chunk))

    def finish(self) -> bool:
        """End of stream. Returns True if it cut an event short (the event is discarded)."""
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._take(tail)
        truncated = bool(self._line) or bool(self._data) or bool(self._event)
        self._line = ""
        self._data = []
        self._data_size = 0
        self._event = ""
        return truncated

    def _take(self, text: str) -> list[SseEvent]:
        if not self._started and text:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        if self._skip_lf and text:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        # Split on CRLF, CR or LF only (never str.splitlines: U+2028 and friends are data).
        lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
        if text.endswith("\r"):
            self._skip_lf = True  # a CR just ended a line; an LF opening the next chunk is its pair
        rest = lines.pop()
        events: list[SseEvent] = []
        for line in lines:
            if self._line:
                line, self._line = self._line + line, ""
            if len(line) > self._limits.max_line:
                raise self._too_long()
            event = self._process(line)
            if event is not None:
                events.append(event)
        if rest:
            self._line += rest
            if len(self._line) > self._limits.max_line:
                raise self._too_long()
        return events

    def _too_long(self) -> SseError:
        return SseError(f"an event-stream line exceeds {self._limits.max_line} characters")

    def _process(self, line: str) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            self.comments += 1
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > self._limits.max_event:
                raise SseError(f"an event's data exceeds {self._limits.max_event} characters")
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        data, event = self._data, self._event
        self._data, self._data_size, self._event = [], 0, ""
        if not data:
            return None
        return SseEvent(data="\n".join(data), event=event or "message", id=self._last_id, retry=self._retry)


async def json_events(
    chunks: AsyncIterator[bytes], *, limits: SseLimits | None = None
) -> AsyncGenerator[dict[str, Any], None]:
    """Yield each event's JSON object until `data: [DONE]`; see the module docstring.

    `chunks` is closed (when it has `aclose`) as soon as this generator ends or is closed.
    """
    decoder = SseDecoder(limits)
    try:
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                if event.data == DONE:
                    return
                yield _parse(event.data)
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
    cut = decoder.finish()
    raise SseError(
        "the event stream ended in the middle of an event" if cut else "the event stream ended before [DONE]",
        truncated=True,
    )


def _parse(data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise SseError(f"an event's data is not JSON: {data[:120]!r}") from None
    except RecursionError:  # the decoder recurses per nesting level
        raise SseError("an event's data is nested too deeply to decode") from None
    if not isinstance(value, dict):
        raise SseError(f"an event's data is not a JSON object: {data[:120]!r}")
    return value
