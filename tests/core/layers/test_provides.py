"""`ctx.context[layer_id]` and layer tools (CTX-5, LY-15)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem
from noetic.layers import ContextLayer, LayerContext, LayerResult, layer_data, layer_function
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Add(BaseModel):
    n: int


class Counter(ContextLayer):
    """State: an int in storage; provides `value` (data) and `add` / `peek` (functions)."""

    id = "counter"
    slot = 300
    scope = "thread"

    def __init__(self) -> None:
        self.provides = {
            "value": layer_data(lambda state: state),
            "add": layer_function(self._add, input=Add, description="Add n to the counter."),
            "peek": layer_function(self._peek, input={"type": "object"}),
        }

    async def _add(self, args: Add, ctx: LayerContext) -> LayerResult:
        await anyio.lowlevel.checkpoint()  # give a concurrent caller the chance to interleave
        return LayerResult(result=ctx.state + args.n, state=ctx.state + args.n)

    async def _peek(self, args: dict[str, Any], ctx: LayerContext) -> int:
        return int(ctx.state)

    async def init(self, ctx: LayerContext) -> int:
        return int(await ctx.storage.get("state") or 0)

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"counter={ctx.state}"


class Silent(ContextLayer):
    id = "silent"
    slot = 100


def harness(graph: nt.Step, model: Any = None, layers: Any = None) -> nt.AgentHarness:
    return nt.AgentHarness(
        "h", agent_graph=graph, model=model or ScriptedModel.echo(), layers=layers or [Counter(), Silent()]
    )


async def test_ctx_5_data_reads_live_and_functions_update_state() -> None:
    """CTX-5: data entries read the current state on every access; functions validate input,
    return their result, replace the state and write it through to storage."""
    seen: list[Any] = []

    async def body(value: Any, ctx: nt.Context) -> Any:
        handle = ctx.context["counter"]
        seen.append(handle.value)
        seen.append(await handle.add({"n": 2}))
        seen.append(handle.value)
        seen.append(await handle.add(n=3))  # keyword form
        seen.append(handle["value"])
        seen.append(await ctx.harness.layer_store.get("layers/counter/default/state"))
        with pytest.raises(nt.NoeticError) as info:
            await handle.add({"n": "many"})
        seen.append(info.value.code)
        seen.append(handle.value)
        return value

    async with harness(nt.run_code("b", body)) as h:
        await h.run("go")
    assert seen == [0, 2, 2, 5, 5, 5, "INVALID_LAYER_INPUT", 5]


async def test_ctx_5_a_layer_without_provides_has_an_empty_handle() -> None:
    """CTX-5: no provides gives {}; unknown names raise AttributeError naming what exists."""
    seen: list[Any] = []

    def body(value: Any, ctx: nt.Context) -> Any:
        seen.append(ctx.context["silent"] == {})
        seen.append(sorted(ctx.context))
        seen.append(sorted(ctx.context["counter"]))
        with pytest.raises(AttributeError, match="provides: value, add, peek"):
            ctx.context["counter"].nothing  # noqa: B018
        with pytest.raises(KeyError):
            ctx.context["missing"]
        return value

    async with harness(nt.run_code("b", body)) as h:
        await h.run("go")
    assert seen == [True, ["counter", "silent"], ["add", "peek", "value"]]


async def test_ctx_5_no_layers_means_an_empty_mapping() -> None:
    """Without layers ctx.context is an empty mapping."""
    seen: list[Any] = []
    async with nt.AgentHarness(
        "h", agent_graph=nt.run_code("b", lambda v, ctx: seen.append(dict(ctx.context)))
    ) as h:
        await h.run("go")
    assert seen == [{}]


async def test_ly_15_functions_are_model_tools_named_layer_slash_fn() -> None:
    """LY-15: provided functions are offered as `counter/add`, `counter/peek`; a model call
    runs them against the layer state; a bad argument is an error the model reads."""
    model = ScriptedModel(
        [
            [tool_call_reply("counter/add", {"n": 4}), tool_call_reply("counter/add", {"n": 6})],
            tool_call_reply("counter/add", {"n": "x"}),
            tool_call_reply("counter/peek", {}),
            text_reply("done"),
        ]
    )
    async with harness(nt.call_model("a"), model) as h:
        response = await h.run("count")
        assert await h.layer_store.get("layers/counter/default/state") == 10
    definitions = {t.name: t for t in model.calls[0].tools}
    assert set(definitions) == {"counter/add", "counter/peek"}
    assert definitions["counter/add"].description == "Add n to the counter."
    assert definitions["counter/add"].parameters["properties"]["n"]["type"] == "integer"
    outputs = [json.loads(i.output) for i in response.items if isinstance(i, FunctionCallOutputItem)]
    assert sorted(outputs[:2]) in ([4, 10], [6, 10])  # concurrent calls never lose an update
    assert "error" in outputs[2]
    assert outputs[3] == 10


async def test_ly_15_step_tools_win_over_layer_tools_of_the_same_name() -> None:
    """A tool the step declares under a layer tool's name replaces the layer's."""
    mine = nt.tool("counter/add", description="mine", input={"type": "object"}, execute=lambda args: "mine")
    model = ScriptedModel([tool_call_reply("counter/add", {"n": 1}), text_reply("ok")])
    async with harness(nt.call_model("a", tools=[mine]), model) as h:
        response = await h.run("go")
    assert [i.output for i in response.items if isinstance(i, FunctionCallOutputItem)] == ['"mine"']
