"""The shortcuts on the runtime's hot paths (bench/, issue 10) keep what the slow paths did.

Each test pins one behaviour a shortcut must not change: stream events stay immutable (HA-5), execution ids stay UUIDv7 (CTX-1), abort still cancels
every abortable of a context once its scope class is cached (CTX-9, CTX-10), a finished turn's
buffer is never replayed to a later subscriber (HA-5), and tool token estimates (LU-4) are the
same from the cache as computed afresh.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.model import ToolDefinition
from noetic.streams import StreamEvent, TurnStream
from noetic.testing import ScriptedModel, text_reply
from noetic.tokens import estimate_tool, estimate_value

pytestmark = pytest.mark.anyio


def test_ha_5_stream_events_are_immutable_named_tuples() -> None:
    event = StreamEvent("framework", "t:step_started", {"step_id": "a"})
    assert (event.source, event.type, event.data) == ("framework", "t:step_started", {"step_id": "a"})
    assert event == StreamEvent("framework", "t:step_started", {"step_id": "a"})
    with pytest.raises(AttributeError):
        event.type = "other"  # type: ignore[misc]


def test_ctx_1_execution_ids_are_time_ordered_uuid7() -> None:
    from noetic.ids import new_execution_id

    ids = [new_execution_id() for _ in range(200)]
    for value in ids:
        parsed = uuid.UUID(value)
        assert str(parsed) == value
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
    assert len(set(ids)) == len(ids)
    stamps = [uuid.UUID(v).int >> 80 for v in ids]
    assert stamps == sorted(stamps)


async def abort_inside_scope(ctx: nt.Context, seen: list[str]) -> None:
    """Abort `ctx` from another task while this one waits inside `ctx.abortable()`."""

    async def abort_soon() -> None:
        await anyio.sleep(0.01)
        ctx.abort("stop")

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_soon)
        try:
            with anyio.fail_after(5), ctx.abortable():
                await anyio.sleep(30)
        except nt.NoeticError as exc:
            seen.append(exc.code)


async def test_ctx_9_abort_cancels_every_abortable_after_the_first() -> None:
    """The first abortable caches the backend's scope class; later ones must still be cancelled."""
    seen: list[str] = []

    async def body(_: Any, ctx: nt.Context) -> str:
        with ctx.abortable():  # the first scope: looked up through anyio
            await anyio.lowlevel.checkpoint()
        await abort_inside_scope(ctx, seen)  # built from the cached class
        return "ignored: the context is aborted"

    async with nt.AgentHarness("t", agent_graph=nt.run_code("b", body)) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("go")
    assert seen == ["cancelled"]
    assert err.value.code == "cancelled"


async def test_ctx_10_child_contexts_inherit_a_working_scope_class() -> None:
    seen: list[str] = []

    async def parent_first(_: Any, ctx: nt.Context) -> str:
        with ctx.abortable():
            await anyio.lowlevel.checkpoint()
        return "go"

    async def child(_: Any, ctx: nt.Context) -> str:
        await abort_inside_scope(ctx, seen)
        return "ignored: the child is aborted"

    graph = nt.sequence("s", [nt.run_code("p", parent_first), nt.spawn("c", nt.run_code("child", child))])
    async with nt.AgentHarness("t", agent_graph=graph) as h:
        with pytest.raises(nt.NoeticError) as err:
            await h.run("go")
    assert seen == ["cancelled"]
    assert err.value.code == "cancelled"


async def test_ha_5_a_finished_turn_is_not_replayed_to_a_later_subscriber() -> None:
    stream = TurnStream("t")
    stream.start_turn()
    stream.publish(StreamEvent("framework", "t:turn_started", {}))
    stream.publish(StreamEvent("framework", "t:turn_completed", {}))
    assert not stream.active

    got: list[str] = []

    async def consume() -> None:
        async for event in stream.subscribe():
            got.append(event.type)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.sleep(0.01)
        stream.start_turn()
        stream.publish(StreamEvent("framework", "t:turn_started", {"n": 2}))
        stream.publish(StreamEvent("framework", "t:turn_completed", {"n": 2}))
    assert got == ["t:turn_started", "t:turn_completed"]


async def test_ha_5_late_subscriber_of_a_running_turn_still_sees_its_start() -> None:
    model = ScriptedModel([text_reply("hello there")])
    async with nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model) as h:
        await h.execute("hi")
        kinds = [e.type async for e in h.get_full_stream()]
    assert kinds[0] == "t:turn_started"
    assert kinds[-1] == "t:turn_completed"


def test_lu_4_cached_tool_tokens_equal_a_fresh_estimate() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    first = ToolDefinition("weather", "Current weather for a city", params)
    expected = estimate_value(
        {"name": "weather", "description": "Current weather for a city", "parameters": params}
    )
    assert estimate_tool(first) == expected
    assert estimate_tool(first) == expected  # served from the cache
    longer = ToolDefinition("weather", "Current weather for a city, in degrees Celsius", params)
    assert estimate_tool(longer) > expected  # another definition is measured, not looked up by name
