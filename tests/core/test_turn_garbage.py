"""A finished turn leaves no cyclic garbage: reference counting alone frees it (GC-1).

Each test runs a warm-up turn, then one more turn with the cyclic GC switched off, and checks
that a collection afterwards finds nothing, and that the turn's root context is gone. The model
here records nothing (`ScriptedModel` keeps every request, so it would keep every context).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import noetic as nt
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem, MessageItem, OutputText
from noetic.layers import ContextLayer, LayerContext
from noetic.model import AbortSignal, ModelEvent, ModelRequest, ModelResponse, TextDelta
from noetic.usage import RoundUsage

pytestmark = pytest.mark.anyio

_USAGE = RoundUsage(input_tokens=10, output_tokens=5)


class ForgetfulModel:
    """Calls `add` once, then answers "3" (streamed as two deltas); keeps nothing of a call."""

    model_id = "forgetful"

    async def stream(self, request: ModelRequest, *, cancel: AbortSignal) -> AsyncIterator[ModelEvent]:
        if request.tools and type(request.items[-1]) is not FunctionCallOutputItem:
            call = FunctionCallItem(call_id="c1", name="add", arguments='{"a": 1, "b": 2}')
            yield ModelResponse(items=(call,), usage=_USAGE, model_id=self.model_id)
            return
        yield TextDelta("3", "m1")
        yield TextDelta("", "m1")
        message = MessageItem(role="assistant", content=[OutputText(text="3")])
        yield ModelResponse(items=(message,), usage=_USAGE, model_id=self.model_id)


class Notes(ContextLayer):
    """A layer with state and every common hook: it renders a note and counts calls."""

    id = "notes"
    slot = 100

    async def init(self, ctx: LayerContext) -> Any:
        return {"calls": 0}

    async def recall(self, ctx: LayerContext, budget: float) -> str | None:
        return f"calls so far: {ctx.state['calls']}"

    async def on_complete(self, ctx: LayerContext, outcome: str) -> Any:
        return {"calls": ctx.state["calls"] + 1}


#: Weak references to the root context of each turn, taken by `observe`.
roots: list[weakref.ref[nt.Context]] = []


def _observe(value: Any, ctx: nt.Context) -> Any:
    roots.append(weakref.ref(ctx.root))
    return value


def _add(args: dict[str, int], ctx: nt.Context) -> int:
    roots.append(weakref.ref(ctx.root))
    return args["a"] + args["b"]


add = nt.tool(
    "add",
    description="Add two integers",
    input={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    execute=_add,
)


@contextmanager
def gc_disabled() -> Iterator[None]:
    """The cyclic GC off inside the block (on again after it, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


async def measured_turn(h: nt.AgentHarness, *, streamed: bool = False) -> tuple[nt.HarnessResponse, int]:
    """A warm-up turn, then one turn with the GC off: its response and what a collection found."""
    await h.run("1 + 2?", thread_id="warm-up")
    gc.collect()
    roots.clear()
    with gc_disabled():
        if streamed:
            async with h.stream("1 + 2?", thread_id="measured") as turn:
                deltas = [event async for event in turn if event.source == "sdk"]
                assert len(deltas) == 2
            response = turn.response
        else:
            response = await h.run("1 + 2?", thread_id="measured")
        assert roots and all(ref() is None for ref in roots), "the turn's root context is still alive"
        found = gc.collect()
    return response, found


def harness(graph: nt.Step, **options: Any) -> nt.AgentHarness:
    return nt.AgentHarness("garbage", agent_graph=graph, model=ForgetfulModel(), **options)


def answering() -> nt.Step:
    return nt.sequence("turn", [nt.run_code("observe", _observe), nt.call_model("answer")])


async def test_gc_1_a_plain_turn_leaves_no_cyclic_garbage() -> None:
    async with harness(answering()) as h:
        response, found = await measured_turn(h)
    assert response.text == "3"
    assert found == 0


async def test_gc_1_a_turn_with_a_tool_leaves_no_cyclic_garbage() -> None:
    graph = nt.loop("react", nt.call_model("think", tools=[add]), until=nt.until.no_tool_calls())
    async with harness(graph) as h:
        response, found = await measured_turn(h)
    assert response.text == "3"
    assert [item.type for item in response.items][-3:] == ["function_call", "function_call_output", "message"]
    assert found == 0


async def test_gc_1_a_turn_with_a_layer_leaves_no_cyclic_garbage() -> None:
    async with harness(answering(), layers=[Notes()]) as h:
        response, found = await measured_turn(h)
    assert response.text == "3"
    assert response.last_layer_usage is not None
    assert found == 0


async def test_gc_1_a_durable_turn_leaves_no_cyclic_garbage(tmp_path: Path) -> None:
    graph = nt.loop("react", nt.call_model("think", tools=[add]), until=nt.until.no_tool_calls())
    async with harness(graph, storage=f"sqlite:///{tmp_path / 'turns.db'}") as h:
        response, found = await measured_turn(h)
    assert response.text == "3"
    assert found == 0


async def test_gc_1_a_streamed_turn_leaves_no_cyclic_garbage() -> None:
    async with harness(answering()) as h:
        response, found = await measured_turn(h, streamed=True)
    assert response is not None and response.text == "3"
    assert found == 0


def _read_layers(value: Any, ctx: nt.Context) -> Any:
    assert list(ctx.context) == ["notes"]
    assert len(ctx.context["notes"]) == 0  # `Notes` provides nothing; the handle still exists
    return value


async def test_gc_1_a_turn_reading_its_layer_handles_leaves_no_cyclic_garbage() -> None:
    graph = nt.sequence("turn", [nt.run_code("read", _read_layers), answering()])
    async with harness(graph, layers=[Notes()]) as h:
        response, found = await measured_turn(h)
    assert response.text == "3"
    assert found == 0


@pytest.mark.parametrize(
    "shape",
    [
        lambda: nt.spawn("child", answering(), layers=[Notes()]),
        lambda: nt.in_parallel("paths", [answering(), nt.run_code("other", lambda value, ctx: value)]),
        lambda: nt.with_context("scoped", answering(), layers=[Notes()]),
    ],
    ids=["spawn", "in_parallel", "with_context"],
)
async def test_gc_1_child_contexts_and_scoped_layers_leave_no_cyclic_garbage(shape: Any) -> None:
    async with harness(shape(), layers=[Notes()]) as h:
        _, found = await measured_turn(h)
    assert found == 0
