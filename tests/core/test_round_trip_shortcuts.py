"""The shortcuts of the bare tool round trip (bench S1, issue 17 target 4) give what the slow
paths gave.

Framework events of a turn nobody reads are kept unbuilt and built when a late subscriber
replays them (HA-5, HA-6): what that subscriber reads must equal what a subscriber present
from the start reads.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic import framework_events
from noetic.streams import StreamEvent, TurnStream
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class AddArgs(BaseModel):
    a: int
    b: int


def _add_tool() -> nt.Tool:
    return nt.tool("add", description="add", input=AddArgs, execute=lambda args: args.a + args.b)


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            tool_call_reply("add", {"a": 1, "b": 2}, usage={"input_tokens": 7, "output_tokens": 2}),
            text_reply("3", usage={"input_tokens": 9, "output_tokens": 1, "cached_tokens": 4}),
        ]
    )


def _normalised(event: StreamEvent, ids: dict[str, str]) -> tuple[Any, ...]:
    """The event with its random ids and its duration replaced by stable placeholders."""

    def plain(key: str, value: Any) -> Any:
        if isinstance(value, BaseModel):
            dumped = value.model_dump()
            for name in ("id", "call_id"):
                if name in dumped:
                    dumped[name] = ids.setdefault(dumped[name], f"id{len(ids)}")
            return type(value).__name__, dumped, sorted(value.model_fields_set)
        if key in ("turn_id", "execution_id", "thread_id", "call_id"):
            return ids.setdefault(value, f"id{len(ids)}")
        if key == "duration_ms":
            return type(value)
        return value

    data = event.data
    if event.source == "sdk":  # a model delta: its text, and its item id as a placeholder
        return event.source, event.type, data.text, ids.setdefault(data.item_id, f"id{len(ids)}")
    shown = {key: plain(key, value) for key, value in data.items()}
    return event.source, event.type, list(data), shown


async def _turn_events(late: bool) -> list[StreamEvent]:
    """Every event of one tool round trip, read by a subscriber present from the start, or
    (`late`) by one that subscribes only once the turn has run up to its last step."""
    release = anyio.Event()
    events: list[StreamEvent] = []

    async def hold(value: Any) -> Any:
        await release.wait()
        return value

    graph = nt.sequence("s", [nt.call_model("m", tools=[_add_tool()]), nt.run_code("hold", hold)])
    async with nt.AgentHarness("h", agent_graph=graph, model=_script()) as h:

        async def watch() -> None:
            async for event in h.get_full_stream():
                events.append(event)

        async with anyio.create_task_group() as tg:
            if not late:
                tg.start_soon(watch)
                await anyio.lowlevel.checkpoint()
            await h.execute("What is 1 + 2?")
            for _ in range(10):  # the turn runs up to `hold`
                await anyio.lowlevel.checkpoint()
            if late:
                tg.start_soon(watch)
                await anyio.lowlevel.checkpoint()
            release.set()
    return events


async def test_ha_5_a_late_subscriber_reads_the_events_an_early_one_reads() -> None:
    early, late = await _turn_events(late=False), await _turn_events(late=True)
    assert [e.type for e in late] == [e.type for e in early]
    assert "h:tool_call_completed" in [e.type for e in late]
    late_ids: dict[str, str] = {}
    early_ids: dict[str, str] = {}
    assert [_normalised(e, late_ids) for e in late] == [_normalised(e, early_ids) for e in early]
    assert all(type(e) is StreamEvent for e in late)


async def test_ha_5_a_turn_nobody_reads_keeps_its_events_unbuilt() -> None:
    buffered: list[Any] = []

    def look(value: Any, ctx: nt.Context) -> Any:
        stream = ctx.harness._session(ctx.thread_id).stream
        buffered.extend(stream._buffer or ())
        return value

    graph = nt.sequence("s", [nt.call_model("m", tools=[_add_tool()]), nt.run_code("look", look)])
    async with nt.AgentHarness("h", agent_graph=graph, model=_script()) as h:
        await h.run("What is 1 + 2?")
    built = [entry for entry in buffered if isinstance(entry, StreamEvent)]
    assert [event.source for event in built] == ["sdk"]  # the answer's text delta
    # turn, 3 steps started, 4 items, 2 rounds started and completed, the tool call x 2, 1 step done
    assert len(buffered) - len(built) == 15


async def test_ha_5_late_subscribers_replay_the_same_built_events() -> None:
    stream = TurnStream("t")
    stream.start_turn()
    stream.deliver_later(framework_events.step_started, "a", "run_code", "/a#0")
    stream.deliver_later(framework_events.tool_call_completed, "c1", "add", False)
    stream.deliver(StreamEvent("framework", "t:custom", {"n": 1}))
    stream.publish(StreamEvent("framework", "t:turn_completed", {}))  # not read: the turn is over
    stream.start_turn()
    stream.deliver_later(framework_events.step_started, "a", "run_code", "/a#0")
    stream.deliver_later(framework_events.tool_call_completed, "c1", "add", False)
    stream.deliver(StreamEvent("framework", "t:custom", {"n": 1}))
    first: list[StreamEvent] = []
    second: list[StreamEvent] = []

    async def read(into: list[StreamEvent]) -> None:
        async for event in stream.subscribe():
            into.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, first)
        tg.start_soon(read, second)
        await anyio.sleep(0.01)
        stream.publish(StreamEvent("framework", "t:turn_completed", {}))
    assert first == [
        StreamEvent("framework", "t:step_started", {"step_id": "a", "kind": "run_code", "path": "/a#0"}),
        StreamEvent("framework", "t:tool_call_completed", {"call_id": "c1", "name": "add", "error": False}),
        StreamEvent("framework", "t:custom", {"n": 1}),
        StreamEvent("framework", "t:turn_completed", {}),
    ]
    assert all(a is b for a, b in zip(first, second, strict=True))  # built once, kept built


async def test_ha_6_a_tap_gets_every_event_built_as_it_happens() -> None:
    tapped: list[StreamEvent] = []
    stream = TurnStream("t")
    stream.tap = tapped.append
    stream.start_turn()
    stream.deliver_later(framework_events.model_call_started, "m", "fake", 0)
    assert tapped == [
        StreamEvent("framework", "t:model_call_started", {"step_id": "m", "model_id": "fake", "round": 0})
    ]
    assert stream._buffer is not None and list(stream._buffer) == tapped
