"""The live relay (IN-3): pushed events reach every open page, late pages see the recent ones,
and nothing grows without bound."""

from __future__ import annotations

import json

import anyio
import pytest
from noetic_inspector.live import BUFFER, LiveRelay


@pytest.mark.anyio
async def test_a_subscriber_gets_buffered_then_new_events_in_order() -> None:
    relay = LiveRelay()
    relay.publish([{"type": "a"}])
    frames = relay.subscribe()
    assert await frames.__anext__() == ": connected\n\n"
    assert json.loads((await frames.__anext__()).removeprefix("data: ")) == {"type": "a"}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def later() -> None:
                await anyio.sleep(0.01)
                relay.publish([{"type": "b"}, {"type": "c"}])

            tg.start_soon(later)
            got = [json.loads((await frames.__anext__()).removeprefix("data: "))["type"] for _ in range(2)]
    assert got == ["b", "c"]
    await frames.aclose()
    assert not relay._subscribers  # a closed page is no longer fed


@pytest.mark.anyio
async def test_the_buffer_keeps_only_the_newest_events() -> None:
    relay = LiveRelay()
    relay.publish([{"n": i} for i in range(BUFFER + 10)])
    frames = relay.subscribe()
    await frames.__anext__()
    first = json.loads((await frames.__anext__()).removeprefix("data: "))
    assert first == {"n": 10}
    await frames.aclose()
