"""AgentHarness: turns, sessions, streams and responses (HA-2..HA-8)."""

from __future__ import annotations

from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.custom_items import CustomItem
from noetic.items import MessageItem, user_message
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio


def echo_agent() -> nt.AgentHarness:
    return nt.AgentHarness("echo", agent_graph=nt.call_model("reply"), model=ScriptedModel.echo())


async def test_ha_2_execute_returns_once_accepted_and_get_agent_response_waits_for_idle() -> None:
    gate = anyio.Event()

    async def wait_gate(value: str) -> str:
        await gate.wait()
        return value.upper()

    async with nt.AgentHarness("h", agent_graph=nt.run_code("w", wait_gate)) as h:
        await h.execute("hello")
        with anyio.move_on_after(0.05) as scope:
            await h.get_agent_response()
        assert scope.cancelled_caught  # still running
        gate.set()
        resp = await h.get_agent_response()
        assert resp.output == "HELLO" and resp.text == "HELLO"


async def test_ha_3_history_carries_across_turns_and_threads_are_separate() -> None:
    async with echo_agent() as h:
        await h.run("one")
        second = await h.run("two")
        other = await h.run("three", thread_id="other")
    assert [i.text for i in second.items if isinstance(i, MessageItem)] == ["one", "one", "two", "two"]
    assert [i.text for i in other.items if isinstance(i, MessageItem)] == ["three", "three"]
    assert second.thread_id == "default" and other.thread_id == "other"


async def test_ha_3_queued_inputs_drain_into_one_turn() -> None:
    gate = anyio.Event()
    inputs: list[Any] = []

    async def body(value: Any, ctx: nt.Context) -> int:
        inputs.append(value)
        await gate.wait()
        return len(ctx.item_log)

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        await h.execute("first")
        await anyio.wait_all_tasks_blocked()
        await h.execute("second")
        await h.execute([user_message("third")])
        gate.set()
        resp = await h.get_agent_response()
    assert inputs == ["first", ""]
    assert resp.output == 2  # both queued inputs became items of the second turn


async def test_ha_4_failed_turn_surfaces_its_error_and_the_session_stays_usable() -> None:
    model = ScriptedModel([text_reply("ok")])

    def maybe_fail(value: str) -> str:
        if value == "bad":
            raise ValueError("bad input")
        return value

    graph = nt.sequence("s", [nt.run_code("check", maybe_fail), nt.call_model("m")])
    async with nt.AgentHarness("h", agent_graph=graph, model=model) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("bad")
        assert err.value.code == "step_failed"
        with pytest.raises(nt.NoeticError):
            await h.get_agent_response()
        resp = await h.run("good")
        assert resp.text == "ok" and (await h.get_agent_response()).text == "ok"


async def test_ha_5_item_stream_subscribed_before_execute_yields_snapshots_then_ends() -> None:
    lookup = nt.tool("lookup", description="Look up", input={"type": "object"}, execute=lambda a: 1)
    model = ScriptedModel([tool_call_reply("lookup", {}), text_reply("the answer is one")], delta_size=5)
    async with nt.AgentHarness("h", agent_graph=nt.call_model("m", tools=[lookup]), model=model) as h:
        stream = h.get_item_stream()
        collected: list[Any] = []

        async def consume() -> None:
            async for item in stream:
                collected.append(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            await h.execute("q")
    kinds = [(i.type, i.is_complete) for i in collected]
    assert kinds[:3] == [("message", True), ("function_call", True), ("function_call_output", True)]
    partial = [i for i in collected if not i.is_complete]
    assert [p.text for p in partial] == ["the a", "the answer", "the answer is o", "the answer is one"]
    assert collected[-1].is_complete and collected[-1].text == "the answer is one"
    assert collected[-1].id == partial[0].id  # snapshots replace one another


async def test_ha_5_subscriber_arriving_mid_turn_sees_the_turn_from_its_start() -> None:
    gate = anyio.Event()

    async def body(value: str, ctx: nt.Context) -> str:
        ctx.item_log.append(user_message("early"))
        await gate.wait()
        ctx.item_log.append(user_message("late"))
        return value

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        await h.execute("x")
        await anyio.wait_all_tasks_blocked()
        texts: list[str] = []

        async def consume() -> None:
            async for item in h.get_item_stream():
                texts.append(item.text)  # type: ignore[union-attr]

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert texts == ["early", "late"]


async def test_ha_6_full_stream_carries_turn_step_model_and_tool_events() -> None:
    lookup = nt.tool("lookup", description="Look up", input={"type": "object"}, execute=lambda a: 1)
    model = ScriptedModel([tool_call_reply("lookup", {}), text_reply("done")])
    async with nt.AgentHarness("agent", agent_graph=nt.call_model("m", tools=[lookup]), model=model) as h:
        events: list[nt.StreamEvent] = []

        async def consume() -> None:
            async for event in h.get_full_stream():
                events.append(event)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            await h.run("q")
    types = [e.type for e in events if e.source == "framework"]
    assert types[0] == "agent:turn_started" and types[-1] == "agent:turn_completed"
    for expected in (
        "agent:step_started",
        "agent:step_completed",
        "agent:model_call_started",
        "agent:model_call_completed",
        "agent:tool_call_started",
        "agent:tool_call_completed",
        "agent:item_appended",
    ):
        assert expected in types
    deltas = [e for e in events if e.source == "sdk"]
    assert deltas and all(e.type == "response.output_text.delta" for e in deltas)
    assert "".join(e.data.text for e in deltas) == "done"


async def test_ha_6_failed_turn_ends_the_stream_with_turn_failed() -> None:
    async with nt.AgentHarness("a", agent_graph=nt.run_code("x", lambda v: 1 / 0)) as h:
        events: list[str] = []

        async def consume() -> None:
            async for event in h.get_full_stream():
                events.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            await h.execute("go")
    assert events[-1] == "a:turn_failed"


async def test_ha_7_abort_stops_the_running_turn_and_the_thread_keeps_working() -> None:
    async def hang(value: str, ctx: nt.Context) -> str:
        if value == "hang":
            await ctx.wait_aborted()  # abort is cooperative: user code is never cut (CTX-17)
        return value

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", hang)) as h:
        await h.execute("hang")
        await anyio.wait_all_tasks_blocked()
        h.abort(reason="user stop")
        with pytest.raises(nt.NoeticError) as err:
            await h.get_agent_response()
        assert err.value.code == "cancelled" and err.value.reason == "user stop"
        assert (await h.run("fine")).output == "fine"


async def test_harness_requires_async_with_and_a_graph() -> None:
    h = nt.AgentHarness("h", agent_graph=nt.run_code("x", lambda v: v))
    with pytest.raises(nt.NoeticConfigError) as err:
        await h.run("x")
    assert err.value.code == "HARNESS_NOT_STARTED"
    async with nt.AgentHarness("h") as empty:
        with pytest.raises(nt.NoeticConfigError) as err:
            await empty.execute("x")
        assert err.value.code == "NO_STEP_CONFIGURED"


async def test_nothing_of_the_harness_is_left_running_after_exit() -> None:
    before = {t.id for t in anyio.get_running_tasks()}

    async def slow(value: str) -> str:
        await anyio.sleep(0.01)
        return value

    async with nt.AgentHarness("h", agent_graph=nt.run_code("s", slow)) as h:
        for thread in ("a", "b", "c"):
            await h.execute("x", thread_id=thread)
        stream = h.get_full_stream(thread_id="a")
        assert (await stream.__anext__()).type == "h:turn_started"
    after = {t.id for t in anyio.get_running_tasks()}
    assert after <= before
    for thread in ("a", "b", "c"):
        assert (await h.get_agent_response(thread_id=thread)).output == "x"


async def test_an_exception_in_the_body_propagates_unwrapped_and_aborts_turns() -> None:
    seen: list[nt.Context] = []

    async def hang(value: str, ctx: nt.Context) -> None:
        seen.append(ctx)
        await anyio.sleep(30)

    with anyio.fail_after(5), pytest.raises(KeyError):
        async with nt.AgentHarness("h", agent_graph=nt.run_code("b", hang)) as h:
            await h.execute("x")
            await anyio.wait_all_tasks_blocked()
            raise KeyError("user bug")
    assert seen[0].aborted


async def test_custom_item_final_items_are_in_the_response() -> None:
    progress = nt.custom_item(
        "myapp:progress", output={"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    graph = nt.run_code(
        "p",
        lambda v: 3,
        custom_items={"progress": progress},
        emit_items={"item": "progress", "on_done": lambda out: {"n": out}},
    )
    async with nt.AgentHarness("h", agent_graph=graph) as h:
        resp = await h.run("x")
    finals = [i for i in resp.items if isinstance(i, CustomItem)]
    assert len(finals) == 1 and finals[0].n == 3  # type: ignore[attr-defined]


async def test_cancelling_the_caller_of_run_aborts_its_turn_and_keeps_the_thread_usable() -> None:
    seen: list[nt.Context] = []

    async def hang(value: str, ctx: nt.Context) -> str:
        seen.append(ctx)
        if value == "hang":
            await anyio.sleep(30)
        return value

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", hang)) as h:
        events: list[str] = []

        async def consume() -> None:
            async for event in h.get_full_stream():
                events.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            with anyio.move_on_after(0.05):
                await h.run("hang")
        assert seen[0].aborted and events[-1] == "h:turn_aborted"
        with pytest.raises(nt.NoeticError) as err:
            await h.get_agent_response()
        assert err.value.code == "cancelled"
        assert (await h.run("next")).output == "next"


async def test_input_queued_behind_an_inline_run_still_gets_its_turn() -> None:
    gate = anyio.Event()

    async def body(value: str) -> str:
        if value == "first":
            await gate.wait()
        return value

    async with nt.AgentHarness("h", agent_graph=nt.run_code("b", body)) as h:
        results: list[str] = []

        async def first() -> None:
            results.append((await h.run("first")).output)

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()
            await h.execute("second")
            gate.set()
        assert results == ["first"]
        assert (await h.get_agent_response()).output == "second"
