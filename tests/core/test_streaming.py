"""Streaming a turn without a race (issue 13, point 2): `h.stream(input)` and the
subscribe-then-run pattern, both of which must end with the turn and never hang."""

from __future__ import annotations

from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import MessageItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio


def lookup_tool() -> nt.Tool:
    return nt.tool("lookup", description="Look up", input={"type": "object"}, execute=lambda a: "data")


async def test_stream_yields_the_turns_events_then_its_response() -> None:
    """Issue 13, point 2: one call streams the turn and ends with it; `response` follows."""
    model = ScriptedModel([tool_call_reply("lookup", {}), text_reply("the answer is 42")], delta_size=4)
    graph = nt.call_model("m", tools=[lookup_tool()])
    with anyio.fail_after(5):
        async with nt.AgentHarness("s", agent_graph=graph, model=model) as h:
            async with h.stream("question") as turn:
                types = [event.type async for event in turn]
            response = turn.response
    assert types[0] == "s:turn_started" and types[-1] == "s:turn_completed"
    assert "response.output_text.delta" in types and "s:item_appended" in types
    assert response.text == "the answer is 42"


async def test_stream_items_show_text_as_it_grows() -> None:
    """Issue 13, point 2: `turn.items()` gives in-progress message snapshots, then the item."""
    model = ScriptedModel([text_reply("hello there")], delta_size=3)
    with anyio.fail_after(5):
        async with (
            nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h,
            h.stream("hi") as turn,
        ):
            texts = [(i.text, i.is_complete) async for i in turn.items() if isinstance(i, MessageItem)]
    assert texts[0] == ("hi", True)  # the user message
    assert texts[1] == ("hel", False) and texts[-1] == ("hello there", True)
    assert turn.response.text == "hello there"


async def test_stream_of_a_failed_turn_ends_and_response_raises_its_error() -> None:
    """Issue 13, point 2: a failing turn ends the loop; `response` raises the real error."""

    def boom(_: Any) -> None:
        raise ValueError("no")

    with anyio.fail_after(5):
        async with nt.AgentHarness("s", agent_graph=nt.run_code("f", boom)) as h:
            async with h.stream("x") as turn:
                types = [event.type async for event in turn]
            with pytest.raises(nt.NoeticError) as err:
                _ = turn.response
    assert types[-1] == "s:turn_failed" and err.value.code == "step_failed"


async def test_stream_response_before_the_end_is_a_clear_error() -> None:
    """Issue 13, point 2: reading `response` mid-turn fails at once instead of blocking."""
    gate = anyio.Event()

    async def wait(_: Any) -> str:
        await gate.wait()
        return "done"

    with anyio.fail_after(5):
        async with nt.AgentHarness("s", agent_graph=nt.run_code("w", wait)) as h, h.stream("x") as turn:
            with pytest.raises(nt.NoeticConfigError) as err:
                _ = turn.response
            gate.set()
            assert (await turn.get_response()).output == "done"
    assert err.value.code == "TURN_NOT_FINISHED"


async def test_stream_skips_the_turn_already_running_on_the_thread() -> None:
    """Issue 13, point 2: a turn queued behind another streams only its own events."""
    gate, running = anyio.Event(), anyio.Event()

    async def step(value: str) -> str:
        if value == "first":
            running.set()
            await gate.wait()
        return value.upper()

    with anyio.fail_after(5):
        async with nt.AgentHarness("s", agent_graph=nt.run_code("c", step)) as h:
            await h.execute("first")
            await running.wait()
            async with h.stream("second") as turn:
                gate.set()
                ended = [event async for event in turn if event.type == "s:turn_completed"]
            assert turn.response.output == "SECOND" and len(ended) == 1


async def test_leaving_a_stream_with_an_error_aborts_the_turn() -> None:
    """Issue 13, point 2: an exception in the block aborts the turn instead of leaving it running."""
    started = anyio.Event()

    async def forever(_: Any, ctx: nt.Context) -> None:
        started.set()
        await ctx.wait_aborted()  # abort is cooperative: user code notices it

    with anyio.fail_after(5):
        async with nt.AgentHarness("s", agent_graph=nt.run_code("f", forever)) as h:
            with pytest.raises(KeyError):
                async with h.stream("x") as turn:
                    await started.wait()
                    raise KeyError("caller bug")
            with pytest.raises(nt.NoeticError) as err:
                await turn.get_response()
    assert err.value.code == "cancelled"


async def test_subscribe_then_run_sees_the_whole_turn() -> None:
    """Issue 13, point 2: the pattern that used to hang — a watcher started with `start_soon`
    and then `await h.run(...)` — sees the turn and ends with it."""
    model = ScriptedModel([text_reply("hi back")])
    seen: list[Any] = []
    with anyio.fail_after(5):
        async with (
            nt.AgentHarness("s", agent_graph=nt.call_model("m"), model=model) as h,
            anyio.create_task_group() as tg,
        ):

            async def watch() -> None:
                async for item in h.get_item_stream():
                    seen.append(item)

            tg.start_soon(watch)
            response = await h.run("hi")
    assert response.text == "hi back"
    assert [i.text for i in seen if isinstance(i, MessageItem) and i.is_complete] == ["hi", "hi back"]


async def test_subscribe_then_execute_sees_the_whole_turn() -> None:
    """Issue 13, point 2: the same with `execute` (the worker runs the turn)."""
    seen: list[str] = []
    with anyio.fail_after(5):
        async with (
            nt.AgentHarness("s", agent_graph=nt.run_code("c", lambda x: x)) as h,
            anyio.create_task_group() as tg,
        ):

            async def watch() -> None:
                async for event in h.get_full_stream():
                    seen.append(event.type)

            tg.start_soon(watch)
            await h.execute("go")
    assert seen[0] == "s:turn_started" and seen[-1] == "s:turn_completed"


async def test_a_watcher_outside_the_harness_ends_when_the_harness_exits() -> None:
    """Issue 13, point 2: a subscription still waiting for a turn when the harness exits ends
    instead of hanging its task group."""
    seen: list[str] = []
    with anyio.fail_after(5):
        async with (
            anyio.create_task_group() as tg,
            nt.AgentHarness("s", agent_graph=nt.run_code("c", lambda x: x)) as h,
        ):
            await h.run("before the watcher")

            async def watch() -> None:
                async for event in h.get_full_stream():
                    seen.append(event.type)

            tg.start_soon(watch)
            await anyio.sleep(0.05)  # the watcher now waits for a next turn that never comes
    assert seen == []
