"""Step primitives: run_code bodies, call_model's tool loop, tools, conditional (IL-6)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


async def run_graph(graph: nt.Step, input: Any = "", **harness: Any) -> nt.HarnessResponse:
    async with nt.AgentHarness("t", agent_graph=graph, **harness) as h:
        return await h.run(input)


async def test_run_code_accepts_plain_async_generator_and_async_generator_bodies() -> None:
    async def async_body(x: int, ctx: nt.Context) -> int:
        await anyio.lowlevel.checkpoint()
        return x * 2

    def gen_body(x: int) -> Iterator[int]:
        yield 1
        return x + 1

    async def agen_body(x: int) -> AsyncIterator[Any]:
        yield 1
        yield nt.Return(x - 1)

    for body, expected in ((lambda x: x, 5), (async_body, 10), (gen_body, 6), (agen_body, 4)):
        assert (await run_graph(nt.run_code("b", body), 5)).output == expected


async def test_run_code_retry_reruns_until_success_and_wraps_the_last_error() -> None:
    attempts: list[int] = []

    def flaky(_: Any) -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("flaky")
        return "ok"

    assert (await run_graph(nt.run_code("f", flaky, retry=2))).output == "ok"
    attempts.clear()
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.run_code("f", flaky, retry=1))
    assert err.value.code == "step_failed" and err.value.retries_exhausted
    assert isinstance(err.value.cause, ConnectionError) and err.value.step_id == "f"


async def test_user_exception_surfaces_as_step_failed_with_cause_and_noetic_errors_pass_unwrapped() -> None:
    def bad(_: Any) -> None:
        raise KeyError("missing")

    with pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.sequence("s", [nt.run_code("bad", bad)]))
    assert err.value.code == "step_failed" and isinstance(err.value.cause, KeyError)

    def own(_: Any) -> None:
        raise nt.NoeticError("budget_exceeded", "too much", field="cost")

    with pytest.raises(nt.NoeticError) as err2:
        await run_graph(nt.run_code("own", own))
    assert err2.value.code == "budget_exceeded" and err2.value.field == "cost"


def test_steps_need_non_empty_ids() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.run_code("  ", lambda x: x)
    assert err.value.code == "EMPTY_STEP_ID" and err.value.hint


class Weather(BaseModel):
    city: str


async def test_call_model_tool_loop_three_rounds_with_two_concurrent_calls_in_one_round() -> None:
    running: list[str] = []
    overlap: list[bool] = []

    async def weather(args: Weather, ctx: nt.Context) -> dict[str, Any]:
        running.append(args.city)
        await anyio.sleep(0.02)
        overlap.append(len(running) == 2)
        return {"city": args.city, "temp": 20}

    def clock(args: dict[str, Any]) -> str:
        return "12:00"

    tools = [
        nt.tool("weather", description="Weather for a city", input=Weather, execute=weather),
        nt.tool("clock", description="Current time", input={"type": "object"}, execute=clock),
    ]
    model = ScriptedModel(
        [
            [tool_call_reply("weather", {"city": "Paris"}), tool_call_reply("weather", {"city": "Rome"})],
            tool_call_reply("clock", {}),
            text_reply("Paris and Rome are 20 degrees at 12:00."),
        ]
    )
    resp = await run_graph(nt.call_model("agent", tools=tools), "weather?", model=model)
    assert resp.text == "Paris and Rome are 20 degrees at 12:00."
    assert len(model.calls) == 3 and overlap == [True, True]
    kinds = [type(i).__name__ for i in resp.items]
    assert kinds == [
        "MessageItem",
        "FunctionCallItem",
        "FunctionCallItem",
        "FunctionCallOutputItem",
        "FunctionCallOutputItem",
        "FunctionCallItem",
        "FunctionCallOutputItem",
        "MessageItem",
    ]
    calls = [i for i in resp.items if isinstance(i, FunctionCallItem)]
    outputs = [i for i in resp.items if isinstance(i, FunctionCallOutputItem)]
    assert [o.call_id for o in outputs] == [c.call_id for c in calls]
    assert json.loads(outputs[0].output) == {"city": "Paris", "temp": 20}
    assert json.loads(outputs[2].output) == "12:00"
    # the third request saw every earlier item, and the tool definitions
    assert len(model.calls[2].items) == 7 and [t.name for t in model.calls[0].tools] == ["weather", "clock"]


async def test_call_model_bad_arguments_unknown_tool_and_raising_tool_become_error_outputs() -> None:
    def explode(args: Weather) -> None:
        raise RuntimeError("service down")

    tools = [nt.tool("weather", description="w", input=Weather, execute=explode)]
    model = ScriptedModel(
        [
            [
                tool_call_reply("weather", {"town": "x"}),
                tool_call_reply("nope", {}),
                tool_call_reply("weather", '{"city": '),
                tool_call_reply("weather", {"city": "Oslo"}),
            ],
            text_reply("sorry"),
        ]
    )
    resp = await run_graph(nt.call_model("agent", tools=tools), "go", model=model)
    errors = [json.loads(i.output)["error"] for i in resp.items if isinstance(i, FunctionCallOutputItem)]
    assert "city" in errors[0] and "unknown tool 'nope'" in errors[1]
    assert "Invalid JSON" in errors[2] and "service down" in errors[3]
    assert resp.text == "sorry"


async def test_call_model_arguments_nested_too_deeply_become_an_error_output() -> None:
    # found by a fresh-eyes run: a RecursionError from the JSON parser ended the whole turn
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    tools = [
        nt.tool("plain", description="p", input={"type": "object"}, execute=lambda a: "ran"),
        nt.tool("typed", description="t", input=Weather, execute=lambda a: "ran"),
    ]
    model = ScriptedModel(
        [[tool_call_reply("plain", deep), tool_call_reply("typed", deep)], text_reply("ok")]
    )
    resp = await run_graph(nt.call_model("agent", tools=tools), "go", model=model)
    errors = [json.loads(i.output)["error"] for i in resp.items if isinstance(i, FunctionCallOutputItem)]
    assert "nests too deeply" in errors[0]
    assert "invalid arguments for tool 'typed'" in errors[1]
    assert resp.text == "ok"


async def test_call_model_structured_output_is_validated() -> None:
    class Answer(BaseModel):
        value: int

    model = ScriptedModel([text_reply('{"value": 7}'), text_reply("not json")])
    graph = nt.call_model("a", output=Answer)
    assert (await run_graph(graph, "q", model=model)).output == Answer(value=7)
    assert model.calls[0].output_schema is not None
    with pytest.raises(nt.NoeticError) as err:  # no re-ask: the bounded retries are tested elsewhere
        await run_graph(nt.call_model("a", output=Answer, output_retries=0), "q", model=model)
    assert err.value.code == "model_parse_error" and err.value.raw == "not json"


async def test_il_6_call_model_appends_input_and_response_items_and_sets_step_meta() -> None:
    metas: list[Any] = []

    def keep(value: Any, ctx: nt.Context) -> Any:
        metas.append(ctx.last_step_meta)
        return value

    model = ScriptedModel(
        [text_reply("hello there", usage={"input_tokens": 5, "output_tokens": 2}, cost=0.001)]
    )
    resp = await run_graph(
        nt.sequence("s", [nt.call_model("m", instructions="Be kind."), nt.run_code("k", keep)]),
        "hi",
        model=model,
    )
    assert [(i.role, i.text) for i in resp.items if isinstance(i, MessageItem)] == [
        ("user", "hi"),
        ("assistant", "hello there"),
    ]
    meta = metas[0]
    assert meta.step_id == "m" and meta.tool_calls == () and meta.cost == pytest.approx(0.001)
    assert meta.usage.input_tokens == 5 and len(meta.response_items) == 1  # produced items only
    assert model.calls[0].instructions == "Be kind."
    assert resp.last_layer_usage is not None and resp.last_layer_usage.system_prompt_tokens > 0


async def test_call_model_fails_clearly_without_a_model() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        await run_graph(nt.call_model("m"), "hi")
    assert err.value.code == "MISSING_MODEL" and "model=" in err.value.hint


async def test_scripted_model_reports_an_exhausted_script() -> None:
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.call_model("m"), "hi", model=ScriptedModel([]))
    assert err.value.code == "script_exhausted"


async def test_invoke_tool_merges_input_with_args_and_validates() -> None:
    def greet(args: dict[str, Any], ctx: nt.Context) -> str:
        return f"{args['greeting']}, {args['name']}"

    schema = {
        "type": "object",
        "required": ["greeting", "name"],
        "properties": {"greeting": {"type": "string"}, "name": {"type": "string"}},
    }
    greet_tool = nt.tool("greet", description="Greet", input=schema, execute=greet)
    graph = nt.invoke_tool("g", greet_tool, {"greeting": "Hello"})
    assert (await run_graph(graph, {"name": "Ada"})).output == "Hello, Ada"
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(graph, {"name": 3})
    assert err.value.code == "step_failed" and "name" in err.value.message


async def test_conditional_routes_or_passes_through() -> None:
    upper = nt.run_code("upper", lambda s: s.upper())
    graph = nt.conditional("c", lambda s, ctx: upper if s.startswith("a") else None)
    assert (await run_graph(graph, "abc")).output == "ABC"
    assert (await run_graph(graph, "xyz")).output == "xyz"


def test_tool_needs_a_name_and_a_valid_schema() -> None:
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.tool("", description="d", input={"type": "object"}, execute=lambda a: a)
    assert err.value.code == "EMPTY_TOOL_NAME"
    with pytest.raises(nt.NoeticConfigError) as err:
        nt.tool("t", description="d", input={"type": 12}, execute=lambda a: a)
    assert err.value.code == "INVALID_TOOL_SCHEMA"


async def test_an_9_requests_carry_cache_control_unless_the_context_cache_is_disabled() -> None:
    on, off = ScriptedModel([text_reply("a")]), ScriptedModel([text_reply("b")])
    await run_graph(nt.call_model("m"), "hi", model=on)
    await run_graph(nt.call_model("m"), "hi", model=off, context_cache={"enabled": False})
    assert on.calls[0].cache_control is True and off.calls[0].cache_control is False
