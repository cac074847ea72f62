"""The shortcuts of the bare tool round trip (bench S1, issue 17 target 4) give what the slow
paths gave.

Framework events of a turn nobody reads are kept unbuilt and built when a late subscriber
replays them (HA-5, HA-6): what that subscriber reads must equal what a subscriber present
from the start reads. The user message made from a string input and a tool call's output item
are assembled without pydantic's validation when their values are exact strings: each must be
the very item validation makes (fields, fields set, JSON, pickling), and anything else still
goes through validation and fails as it did. Tool results are encoded as `json.dumps` did.
"""

from __future__ import annotations

import datetime
import enum
import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic import framework_events
from noetic.items import FunctionCallOutputItem, InputText, MessageItem, dump_item, parse_item, user_message
from noetic.schema import to_jsonable
from noetic.streams import StreamEvent, TurnStream
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic.tools import encode_output, tool_output
from noetic.usage import RoundUsage, counted_usage
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

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


# --- items the framework builds itself ------------------------------------------------------

TEXTS = [
    "",
    "What is 1 + 2?",
    "héllo ✓ 日本語 🎉",
    "a\udfffb",  # a lone surrogate: validation keeps it, so the fast build must too
    '\x00\n\t"\\',
    "x" * 1_000_000,
    '{"type": "output_text", "text": "not parsed"}',
]


class _Text(str):
    pass


def _json(item: BaseModel) -> str:
    """The item's JSON with its id as `ID`, or the error that writing it raises."""
    try:
        return item.model_dump_json().replace(item.id, "ID")  # type: ignore[attr-defined]
    except PydanticSerializationError as exc:  # a lone surrogate is no UTF-8
        return f"error: {exc}"


def _same_item(fast: BaseModel, slow: BaseModel) -> None:
    """`fast` is what the validated `slow` is, but for its generated id."""
    assert type(fast) is type(slow)
    assert fast.id.split("_")[0] == slow.id.split("_")[0]  # type: ignore[attr-defined]
    assert len(fast.id) == len(slow.id)  # type: ignore[attr-defined]
    same_id = type(slow).model_validate({**slow.__dict__, "id": fast.id})  # type: ignore[attr-defined]
    assert fast == same_id
    assert list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_extra == slow.model_extra
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    assert {**fast.model_dump(), "id": None} == {**slow.model_dump(), "id": None}
    assert _json(fast) == _json(slow)
    for field in fast.__dict__:
        assert type(getattr(fast, field)) is type(getattr(slow, field))
    assert pickle.loads(pickle.dumps(fast)) == fast  # packed sessions pickle it (SE-5)
    with pytest.raises(ValidationError):
        fast.status = "failed"  # type: ignore[attr-defined]  # frozen like any item


def _same_outcome(
    fast: Callable[[], BaseModel],
    slow: Callable[[], BaseModel],
    same: Callable[[BaseModel, BaseModel], None] = _same_item,
) -> None:
    """Both builds give the same model (`same` checks it), or fail with the same errors."""
    try:
        expected = slow()
    except ValidationError as exc:
        refused = exc.errors()
    else:
        same(fast(), expected)
        return
    with pytest.raises(ValidationError) as raised:
        fast()
    assert raised.value.errors() == refused


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_il_3_user_message_is_the_validated_message(text: str) -> None:
    fast = user_message(text)
    slow = MessageItem(role="user", content=[InputText(text=text)])
    _same_item(fast, slow)
    assert fast.content[0].model_fields_set == slow.content[0].model_fields_set == {"text"}
    assert fast.text == text
    if text.isascii() or "\udfff" not in text:
        assert parse_item(dump_item(fast)) == fast


@pytest.mark.parametrize("value", [3, None, b"bytes", b"\xff", ["a"], _Text("hi")])
def test_il_3_user_message_validates_what_is_not_exact_text(value: Any) -> None:
    """Refused as validation refuses it, or (bytes, a `str` subclass) made as it makes it."""
    _same_outcome(
        lambda: user_message(value), lambda: MessageItem(role="user", content=[InputText(text=value)])
    )


def test_il_3_a_str_subclass_still_becomes_plain_text() -> None:
    message = user_message(_Text("hi"))
    assert type(message.content[0].text) is str
    _same_item(message, MessageItem(role="user", content=[InputText(text="hi")]))


@pytest.mark.parametrize("output", TEXTS, ids=range(len(TEXTS)))
def test_il_3_tool_output_is_the_validated_output(output: str) -> None:
    for call_id in ("call_1", "", "ç✓"):
        _same_item(tool_output(call_id, output), FunctionCallOutputItem(call_id=call_id, output=output))


@pytest.mark.parametrize(("call_id", "output"), [(3, "x"), ("c", 3), (None, "x"), (_Text("c"), _Text("o"))])
def test_il_3_tool_output_validates_what_it_did_not_make(call_id: Any, output: Any) -> None:
    _same_outcome(
        lambda: tool_output(call_id, output), lambda: FunctionCallOutputItem(call_id=call_id, output=output)
    )


class _Colour(enum.IntEnum):
    RED = 1


class _Point(BaseModel):
    x: int
    label: str = "é"


RESULTS = [
    0,
    -7,
    10**40,
    True,
    False,
    None,
    1.5,
    float("nan"),
    float("inf"),
    "plain",
    'ünï✓ \n "quoted"',
    {"sum": 3, "nested": [1, {"a": None}]},
    [1, "two", 3.0],
    _Colour.RED,
    _Point(x=1),
    datetime.date(2026, 1, 2),  # not JSON: written with str()
    {"when": datetime.date(2026, 1, 2)},
]


@pytest.mark.parametrize("value", RESULTS, ids=range(len(RESULTS)))
def test_tool_results_encode_as_json_dumps_did(value: Any) -> None:
    expected = json.dumps(to_jsonable(value), ensure_ascii=False, default=str)
    assert encode_output(value) == expected
    assert type(encode_output(value)) is str


def test_an_int_too_long_to_write_fails_as_json_dumps_did() -> None:
    huge = 10**5000
    with pytest.raises(ValueError) as slow:
        json.dumps(huge, ensure_ascii=False, default=str)
    with pytest.raises(ValueError) as fast:
        encode_output(huge)
    assert str(fast.value) == str(slow.value)


def test_il_3_items_assembled_before_any_validation_work_in_a_fresh_process() -> None:
    """The item classes build their validators on first use; an assembled item may come first."""
    script = """
import pickle
from noetic.items import FunctionCallOutputItem, dump_item, parse_item, user_message
from noetic.tools import tool_output
for item in (tool_output("c", "3"), user_message("hi")):
    assert pickle.loads(pickle.dumps(item)) == item
    assert parse_item(dump_item(item)) == item
    assert type(item).model_validate_json(item.model_dump_json()) == item
fast = tool_output("c", "3")
assert fast == FunctionCallOutputItem(id=fast.id, call_id="c", output="3")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --- what a model step keeps between runs ---------------------------------------------------


async def test_a_model_step_sees_tools_replaced_between_its_runs() -> None:
    """The step's table of tools is kept between runs only while neither tuple is replaced."""

    def named(name: str, result: str) -> nt.Tool:
        return nt.tool(name, description=name, input={"type": "object"}, execute=lambda args: result)

    step = nt.call_model("m", tools=[named("own", "first")])
    replies = [tool_call_reply("own", {}), text_reply("a"), tool_call_reply("own", {}), text_reply("b")]
    replies += [tool_call_reply("shared", {}), text_reply("c")]
    model = ScriptedModel(replies)
    async with nt.AgentHarness("h", agent_graph=step, model=model) as h:
        first = await h.run("go", thread_id="1")
        step.tools = (named("own", "second"),)
        second = await h.run("go", thread_id="2")
        h.tools = (named("shared", "third"),)
        third = await h.run("go", thread_id="3")
    outputs = [
        [i.output for i in r.items if isinstance(i, FunctionCallOutputItem)] for r in (first, second, third)
    ]
    assert outputs == [['"first"'], ['"second"'], ['"third"']]
    sent = [[t.name for t in request.tools] for request in model.calls]
    assert sent == [["own"]] * 4 + [["shared", "own"]] * 2


@pytest.mark.parametrize(
    ("given", "cached"),
    [((0, 0), None), ((12, 6), 0), ((10**30, 1), 10**20), ((True, 2), None), ((1, 2), True), ((-1, 2), None)],
)
def test_tu_2_the_turn_usage_is_the_validated_usage(given: tuple[Any, Any], cached: Any) -> None:
    _same_usage(
        counted_usage(given[0], given[1], cached),
        RoundUsage(input_tokens=given[0], output_tokens=given[1], cached_tokens=cached),
    )


def _same_usage(fast: BaseModel, slow: BaseModel) -> None:
    assert type(fast) is type(slow) is RoundUsage
    assert fast == slow
    assert list(fast.__dict__) == list(slow.__dict__)
    assert [type(v) for v in fast.__dict__.values()] == [type(v) for v in slow.__dict__.values()]
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_extra == slow.model_extra is None
    assert fast.model_dump_json() == slow.model_dump_json()
    assert pickle.loads(pickle.dumps(fast)) == fast
    assert hash(fast) == hash(slow)  # frozen: usable as a key as before


@pytest.mark.parametrize("counts", [("1", 2, None), (1.5, 2, None), (1, 2, "x")])
def test_tu_2_turn_usage_of_counts_that_are_not_ints_is_validated(counts: tuple[Any, Any, Any]) -> None:
    _same_outcome(
        lambda: counted_usage(*counts),
        lambda: RoundUsage(input_tokens=counts[0], output_tokens=counts[1], cached_tokens=counts[2]),
        _same_usage,
    )


async def test_ha_4_a_turn_response_carries_its_usage_as_before() -> None:
    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("m", tools=[_add_tool()]), model=_script()
    ) as h:
        response = await h.run("What is 1 + 2?")
    assert response.usage == RoundUsage(input_tokens=16, output_tokens=3, cached_tokens=4)
    assert response.usage.model_fields_set == {"input_tokens", "output_tokens", "cached_tokens"}
    assert response.text == "3"
