"""The shortcuts on the runtime's hot paths (bench/, issue 10) keep what the slow paths did.

Each test pins one behaviour a shortcut must not change: stream events stay immutable (HA-5), execution ids stay UUIDv7 (CTX-1), abort still cancels
every abortable of a context once its scope class is cached (CTX-9, CTX-10), a finished turn's
buffer is never replayed to a later subscriber (HA-5), and tool token estimates (LU-4) are the
same from the cache as computed afresh. From issue 17: a model step's `StepMeta`, built on first
read, sums every round (TU-3); a subscriber arriving mid-turn still gets the events published
while nobody listened (HA-5); tools returning plain values or awaitables both work; a turn
without storage or layers still ends with its events and answer.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem
from noetic.model import ToolDefinition
from noetic.streams import StreamEvent, TurnStream
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic.tokens import estimate_tool, estimate_value
from noetic.usage import RoundUsage, StepMeta

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


async def test_tu_3_step_meta_built_on_first_read_sums_every_round() -> None:
    add = nt.tool(
        "add",
        description="add",
        input={"type": "object", "properties": {"a": {"type": "integer"}}},
        execute=lambda args: args["a"] + 1,
    )
    model = ScriptedModel(
        [
            tool_call_reply("add", {"a": 1}, usage={"input_tokens": 10, "output_tokens": 2}),
            text_reply("2", usage={"input_tokens": 15, "output_tokens": 3, "cached_tokens": 4}),
        ]
    )
    metas: list[Any] = []

    def read(value: Any, ctx: nt.Context) -> Any:
        assert callable(ctx._step_meta)  # not built until someone reads it
        metas.append(ctx.last_step_meta)
        assert ctx.last_step_meta is metas[0]  # built once
        return value

    graph = nt.sequence("s", [nt.call_model("m", tools=[add]), nt.run_code("read", read)])
    async with nt.AgentHarness("h", agent_graph=graph, model=model) as h:
        await h.run("go")
    meta = metas[0]
    assert isinstance(meta, StepMeta)
    assert (meta.step_id, meta.kind) == ("m", "call_model")
    assert meta.usage == RoundUsage(input_tokens=25, output_tokens=5, cached_tokens=4)
    assert [c.name for c in meta.tool_calls or ()] == ["add"]
    assert [type(i).__name__ for i in meta.response_items or ()] == [
        "FunctionCallItem",
        "FunctionCallOutputItem",
        "MessageItem",
    ]


async def test_ha_5_events_published_while_nobody_listens_reach_a_mid_turn_subscriber() -> None:
    seen: list[str] = []
    release = anyio.Event()

    async def wait(value: Any) -> Any:
        await release.wait()
        return value

    graph = nt.sequence("s", [nt.call_model("m"), nt.run_code("wait", wait)])
    async with nt.AgentHarness("h", agent_graph=graph, model=ScriptedModel([text_reply("hi")])) as h:
        await h.execute("go")
        for _ in range(5):  # the turn runs up to `wait` with nobody subscribed
            await anyio.lowlevel.checkpoint()

        async def watch() -> None:
            async for event in h.get_full_stream():
                seen.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.lowlevel.checkpoint()
            release.set()
    assert seen[:4] == ["h:turn_started", "h:step_started", "h:step_started", "h:item_appended"]
    assert "h:model_call_completed" in seen and seen[-1] == "h:turn_completed"


@pytest.mark.parametrize("awaited", [False, True])
async def test_a_tool_may_return_a_plain_value_or_an_awaitable(awaited: bool) -> None:
    async def later(args: Any) -> dict[str, int]:
        return {"sum": args["a"] + 1}

    def now(args: Any) -> dict[str, int]:
        return {"sum": args["a"] + 1}

    add = nt.tool(
        "add",
        description="add",
        input={"type": "object", "properties": {"a": {"type": "integer"}}},
        execute=later if awaited else now,
    )
    model = ScriptedModel([tool_call_reply("add", {"a": 1}), text_reply("done")])
    async with nt.AgentHarness("h", agent_graph=nt.call_model("m", tools=[add]), model=model) as h:
        response = await h.run("go")
    outputs = [i.output for i in response.items if isinstance(i, FunctionCallOutputItem)]
    assert outputs == ['{"sum": 2}']
