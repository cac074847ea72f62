"""What a harness remembers about its layers across turns (`LayerMemory`: hook tables and hook
indexes, budget splits, string renders, pins that serve their own output) must never outlive
what it was worked out from. Each test runs turns through one harness and changes one thing
between them — a layer's state, a layer replaced by another of the same id, the thread, a
layer's budget, a layer's slot — and would fail if a remembered value went stale."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.items import Item, developer_message, item_text
from noetic.layers import CallResult, ContextLayer, LayerContext
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


def _harness(layers: list[Any], graph: nt.Step | None = None) -> tuple[nt.AgentHarness, ScriptedModel]:
    model = ScriptedModel(default=lambda request: text_reply("ok"))
    graph = graph or nt.call_model("a", instructions="be brief")
    return nt.AgentHarness("h", agent_graph=graph, model=model, layers=layers), model


def _texts(items: tuple[Item, ...] | list[Item]) -> list[str]:
    return [item_text(i) for i in items if getattr(i, "role", None) == "developer"]


class Counter(ContextLayer):
    """Thread-scoped state, shown by `recall` and advanced by `store` after every step."""

    id = "counter"
    slot = 10
    placement = "live"

    async def init(self, ctx: LayerContext) -> dict[str, int]:
        saved: dict[str, int] | None = await ctx.storage.get("state")
        return saved or {"steps": 0}

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"steps so far: {ctx.state['steps']}"

    async def store(self, ctx: LayerContext, response: CallResult) -> dict[str, int]:
        return {"steps": ctx.state["steps"] + 1}


class Fixed(ContextLayer):
    """Recalls a fixed `text`, recording the budget each recall received."""

    def __init__(self, id: str, text: str, *, slot: float = 100, placement: str = "anchor"):
        self.id = id
        self.text = text
        self.slot = slot
        self.placement = placement  # type: ignore[assignment]
        self.budgets: list[float] = []

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        self.budgets.append(budget)
        return self.text


class ThreadNote(ContextLayer):
    """An anchored paragraph naming the thread it is shown on."""

    id = "thread-note"
    slot = 10
    placement = "anchor"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"thread {ctx.thread_id}"


async def test_changed_state_is_shown_on_the_next_turn() -> None:
    """The counter's state advances each turn of one thread; each turn shows the new value,
    though its text render and pin of the turn before are remembered."""
    h, model = _harness([Counter()])
    async with h:
        for _ in range(3):
            await h.run("hi", thread_id="t")
    assert [_texts(call.items) for call in model.calls] == [
        ["steps so far: 0"],
        ["steps so far: 1"],
        ["steps so far: 2"],
    ]


async def test_a_layer_replaced_in_a_scope_is_the_one_that_runs() -> None:
    """A step's `layers=` replaces the harness layer of the same id: the step's frame sees
    the replacement's hooks and text, not the harness layer's remembered ones — and the next
    harness-only step sees the harness layer again."""
    scoped = nt.call_model(
        "scoped", instructions="be brief", layers=[Fixed("note", "replacement", placement="live")]
    )
    plain = nt.call_model("plain", instructions="be brief")
    h, model = _harness(
        [Fixed("note", "harness layer", placement="live")], nt.sequence("both", [scoped, plain])
    )
    async with h:
        await h.run("hi", thread_id="t")
        await h.run("again", thread_id="t")
    assert [_texts(call.items) for call in model.calls] == [
        ["replacement"],
        ["harness layer"],
        ["replacement"],
        ["harness layer"],
    ]


async def test_each_thread_sees_its_own_render() -> None:
    """Pins are per thread: going back to a thread after another one shows that thread's
    paragraph again, not the render the other thread left behind."""
    h, model = _harness([ThreadNote()])
    async with h:
        for thread in ("t1", "t2", "t1", "t2"):
            await h.run("hi", thread_id=thread)
    assert [_texts(call.items) for call in model.calls] == [
        ["thread t1"],
        ["thread t2"],
        ["thread t1"],
        ["thread t2"],
    ]


async def test_a_changed_budget_reaches_the_next_recall() -> None:
    """The budget split is remembered per layer set, but a layer whose budget changes gets
    the new split on its next recall."""
    layer = Fixed("note", "a note")
    layer.budget = 40
    h, _ = _harness([layer])
    async with h:
        await h.run("hi", thread_id="t")
        layer.budget = 7
        await h.run("hi", thread_id="t")
    assert layer.budgets == [40, 7]


class Marker(ContextLayer):
    """Projects the history with its `mark` appended: the marks show the pipeline's order."""

    placement = "live"

    def __init__(self, mark: str, slot: float):
        self.id = mark
        self.mark = mark
        self.slot = slot

    async def project_history(self, ctx: LayerContext, items: list[Item]) -> list[Item]:
        return [*items, developer_message(self.mark)]


async def test_a_changed_slot_reorders_the_next_turn() -> None:
    """The hook index (which layers define which hook, slot ascending) is remembered per list
    of layer objects and their slots: moving a layer's slot reorders the next pipeline."""
    first, second = Marker("first", 10), Marker("second", 20)
    h, model = _harness([first, second])
    async with h:
        await h.run("hi", thread_id="t1")
        first.slot = 30
        await h.run("hi", thread_id="t2")
    assert [_texts(call.items) for call in model.calls] == [["first", "second"], ["second", "first"]]


async def test_a_layer_without_a_hook_is_not_indexed_under_it() -> None:
    """Two harness layer lists with a layer of the same id but different hooks: each frame's
    index lists only the hooks its own layer objects define."""

    class Quiet(ContextLayer):
        id = "note"
        slot = 10

    h1, model1 = _harness([Fixed("note", "spoken")])
    h2, model2 = _harness([Quiet()])
    async with h1, h2:
        await h1.run("hi", thread_id="t")
        await h2.run("hi", thread_id="t")
        await h1.run("hi", thread_id="t")
    assert [_texts(c.items) for c in model1.calls] == [["spoken"], ["spoken"]]
    assert [_texts(c.items) for c in model2.calls] == [[]]
