"""The SSE reader against the WHATWG event-stream grammar.

Property tests re-encode generated event streams with every line ending (LF, CR, CRLF),
an optional BOM, interleaved keep-alive comments, U+2028/U+0085 inside data, and arbitrary
chunk boundaries (mid-line, mid-UTF-8, between CR and LF); every encoding must decode to the
same events. Oversized input fails cleanly; a stream cut before its last event is a failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from noetic_adapters_openrouter.sse import SseDecoder, SseError, SseEvent, SseLimits, json_events

# Data and names never contain CR or LF (the grammar's only line breaks); anything else may
# appear, including U+2028, U+0085 and a leading colon or space.
_line_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=30
)
_ending = st.sampled_from(["\n", "\r", "\r\n"])


@dataclass(frozen=True)
class GenEvent:
    name: str | None
    data: tuple[str, ...]
    id: str | None
    comment: str | None


_events = st.lists(
    st.builds(
        GenEvent,
        name=st.one_of(st.none(), _line_text.filter(lambda s: s != "")),
        data=st.lists(_line_text, min_size=1, max_size=4).map(tuple),
        id=st.one_of(st.none(), _line_text.filter(lambda s: "\0" not in s)),
        comment=st.one_of(st.none(), _line_text),
    ),
    max_size=6,
)


def field(name: str, value: str) -> str:
    """A field line; the space after the colon is optional unless the value starts with one."""
    return f"{name}: {value}" if value.startswith(" ") or len(value) % 2 else f"{name}:{value}"


def encode(events: list[GenEvent], endings: list[str], bom: bool) -> tuple[bytes, list[SseEvent]]:
    """The stream text for `events` and the events a conforming reader must produce."""
    lines: list[str] = []
    expected: list[SseEvent] = []
    last_id: str | None = None
    for event in events:
        if event.comment is not None:
            lines += [":" + event.comment, ""]
        if event.name is not None:
            lines.append(field("event", event.name))
        if event.id is not None:
            lines.append(field("id", event.id))
            last_id = event.id
        lines += [field("data", d) for d in event.data]
        lines.append("")
        expected.append(SseEvent(data="\n".join(event.data), event=event.name or "message", id=last_id))
    text, previous = "", ""
    for i, line in enumerate(lines):
        ending = endings[i % len(endings)]
        if previous == "\r" and not line and ending == "\n":
            ending = "\r\n"  # CR then LF would be one CRLF break, swallowing this blank line
        text += line + ending
        previous = ending
    return (("\ufeff" if bom else "") + text).encode("utf-8"), expected


def decode(body: bytes, cuts: list[int]) -> tuple[list[SseEvent], bool]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    start = 0
    for cut in [*sorted({min(max(c, 0), len(body)) for c in cuts}), len(body)]:
        events += decoder.feed(body[start:cut])
        start = cut
    return events, decoder.finish()


@settings(max_examples=300, deadline=None)
@given(
    events=_events,
    endings=st.lists(_ending, min_size=1, max_size=5),
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=30),
)
def test_any_encoding_and_chunking_gives_the_same_events(
    events: list[GenEvent], endings: list[str], bom: bool, cuts: list[int]
) -> None:
    body, expected = encode(events, endings, bom)
    decoded, truncated = decode(body, cuts)
    assert decoded == expected
    assert truncated is False


@settings(max_examples=100, deadline=None)
@given(events=_events.filter(bool), endings=st.lists(_ending, min_size=1, max_size=3))
def test_one_byte_chunks_give_the_same_events(events: list[GenEvent], endings: list[str]) -> None:
    body, expected = encode(events, endings, bom=True)
    decoded, _ = decode(body, list(range(len(body))))
    assert decoded == expected


def test_cr_at_a_chunk_end_and_lf_at_the_next_start_are_one_line_break() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == [SseEvent("a")]
    assert decoder.feed(b"\ndata: b\r\r") == [SseEvent("b")]


def test_u2028_is_not_a_line_break() -> None:
    decoder = SseDecoder()
    assert decoder.feed('data: {"t":"a\u2028b\x85c"}\n\n'.encode()) == [SseEvent('{"t":"a\u2028b\x85c"}')]


def test_comments_only_dispatch_nothing_and_are_counted() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n") == []
    assert decoder.comments == 2


def test_a_cut_last_event_is_dropped_and_reported() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b'data: {"a":1}\n\ndata: {"b":') == [SseEvent('{"a":1}')]
    assert decoder.finish() is True


def test_an_oversized_line_is_a_clean_error() -> None:
    decoder = SseDecoder(SseLimits(max_line=64, max_event=1024))
    with pytest.raises(SseError, match="line exceeds 64"):
        decoder.feed(b"data: " + b"x" * 100)


def test_an_oversized_event_is_a_clean_error() -> None:
    decoder = SseDecoder(SseLimits(max_line=64, max_event=100))
    decoder.feed(b"data: " + b"y" * 40 + b"\n" + b"data: " + b"y" * 40 + b"\n")
    with pytest.raises(SseError, match="data exceeds 100"):
        decoder.feed(b"data: " + b"y" * 40 + b"\n")


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


@pytest.mark.anyio
async def test_json_events_stop_at_done() -> None:
    body = [
        b': keep-alive\n\ndata: {"n": 1}\n\n',
        b'data: {"n"',
        b': 2}\n\ndata: [DONE]\n\ndata: {"n": 3}\n\n',
    ]
    assert [e async for e in json_events(_chunks(*body))] == [{"n": 1}, {"n": 2}]


@pytest.mark.anyio
async def test_json_events_without_done_is_a_truncated_stream() -> None:
    with pytest.raises(SseError, match="ended before \\[DONE\\]") as info:
        async for _ in json_events(_chunks(b'data: {"n": 1}\n\n')):
            pass
    assert info.value.truncated


@pytest.mark.anyio
async def test_json_events_cut_mid_event_is_a_truncated_stream() -> None:
    with pytest.raises(SseError, match="middle of an event") as info:
        async for _ in json_events(_chunks(b'data: {"n": 1}\n\ndata: {"n": ')):
            pass
    assert info.value.truncated


@pytest.mark.anyio
async def test_json_events_reject_non_json_and_non_objects() -> None:
    with pytest.raises(SseError, match="not JSON"):
        async for _ in json_events(_chunks(b"data: {oops\n\n")):
            pass
    with pytest.raises(SseError, match="not a JSON object"):
        async for _ in json_events(_chunks(b"data: [1, 2]\n\n")):
            pass


@pytest.mark.anyio
async def test_json_events_decode_utf8_split_across_chunks() -> None:
    body = 'data: {"t": "héllo ✓ 你好"}\n\ndata: [DONE]\n\n'.encode()
    one_byte = [body[i : i + 1] for i in range(len(body))]
    assert [e async for e in json_events(_chunks(*one_byte))] == [{"t": "héllo ✓ 你好"}]
