"""A watcher of `get_item_stream()` that subscribes after a short turn has ended (the late
watcher of docs/streaming.md): it waits for the next turn, and ends when the harness exits if
none comes, so a task group opened outside the harness block always finishes."""

from __future__ import annotations

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


async def test_a_late_watcher_ends_when_the_harness_exits() -> None:
    seen: list[str] = []
    turn_over = anyio.Event()
    with anyio.fail_after(10):  # a hang fails the test instead of stalling the suite
        async with anyio.create_task_group() as tg:
            harness = nt.AgentHarness(
                "s", agent_graph=nt.call_model("m"), model=ScriptedModel([text_reply("hi back")])
            )
            async with harness as h:

                async def watch() -> None:
                    await turn_over.wait()  # subscribes only after the turn has ended
                    async for item in h.get_item_stream():
                        seen.append(type(item).__name__)
                    seen.append("ended")

                tg.start_soon(watch)
                response = await h.run("hi")
                turn_over.set()
                await anyio.sleep(0.05)  # the watcher is now waiting for a next turn
                assert seen == []
    assert response.text == "hi back"
    assert seen == ["ended"]


async def test_a_late_watcher_sees_the_next_turn_in_full() -> None:
    seen: list[tuple[str, bool]] = []
    model = ScriptedModel([text_reply("one"), text_reply("two")])
    with anyio.fail_after(10):
        harness = nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model)
        async with anyio.create_task_group() as tg, harness as h:
            await h.run("first")

            async def watch() -> None:
                async for item in h.get_item_stream():
                    seen.append((getattr(item, "text", ""), item.is_complete))

            tg.start_soon(watch)
            await h.run("second")
    assert seen[0] == ("second", True) and seen[-1] == ("two", True)
