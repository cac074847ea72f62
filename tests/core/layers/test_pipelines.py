"""The item pipelines: `on_item_append` (LY-2) and `project_history` (LY-4) — what they see,
slot order, state, failure policy, and that the log is never rewritten by a projection."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem, Item, MessageItem, developer_message, item_text, user_message
from noetic.layers import ContextLayer, ItemAppendResult, LayerContext
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Echo(BaseModel):
    text: str


ECHO = nt.tool("echo", description="Echo.", input=Echo, execute=lambda args: args.text)


class Appender(ContextLayer):
    """`on_item_append` through `change(items)`; every call is recorded in `events`."""

    scope = "execution"

    def __init__(self, id: str, events: list[Any], change: Any = None, *, slot: float = 100):
        self.id = id
        self.slot = slot
        self.events = events
        self.change = change

    async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> Any:
        self.events.append((self.id, [i.type for i in items]))
        return self.change(items) if self.change is not None else None


class Projector(ContextLayer):
    """`project_history` through `change(items)`; every call is recorded in `events`."""

    scope = "execution"

    def __init__(self, id: str, events: list[Any], change: Any, *, slot: float = 100):
        self.id = id
        self.slot = slot
        self.events = events
        self.change = change

    async def project_history(self, ctx: LayerContext, items: tuple[Item, ...]) -> Any:
        self.events.append((self.id, [item_text(i) for i in items]))
        return self.change(items)


def redact(items: Sequence[Item]) -> list[Item]:
    return [
        user_message(item_text(i).replace("hunter2", "[redacted]")) if isinstance(i, MessageItem) else i
        for i in items
    ]


# --- on_item_append ------------------------------------------------------------------------


async def test_ly_2_sees_user_input_and_tool_outputs_never_model_items() -> None:
    """The pipeline runs for the step's input and for each round's tool outputs only."""
    events: list[Any] = []
    model = ScriptedModel([tool_call_reply("echo", {"text": "x"}), text_reply("done")])
    h = nt.AgentHarness(
        "t", agent_graph=nt.call_model("m", tools=[ECHO]), model=model, layers=[Appender("a", events)]
    )
    async with h:
        await h.run("hi")
    assert events == [("a", ["message"]), ("a", ["function_call_output"])]


async def test_ly_2_rewrites_reach_the_log_and_the_model_in_slot_order() -> None:
    """Slot order; each layer gets the previous one's items; an injected item lands too."""
    events: list[Any] = []
    inject = Appender(
        "inject", events, lambda items: [*items, developer_message("note: user is on mobile")], slot=200
    )
    scrub = Appender("scrub", events, redact, slot=100)
    model = ScriptedModel.echo()
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=[inject, scrub])
    async with h:
        response = await h.run("my password is hunter2")
    assert [e[0] for e in events] == ["scrub", "inject"]
    sent = [item_text(i) for i in model.calls[0].items if isinstance(i, MessageItem)]
    assert "my password is [redacted]" in sent and "note: user is on mobile" in sent
    assert not any("hunter2" in t for t in sent)
    assert response.text == "my password is [redacted]"


async def test_ly_2_dropping_everything_skips_later_layers() -> None:
    """A layer returning [] drops the input; layers after it are not called."""
    events: list[Any] = []
    model = ScriptedModel.echo()
    layers = [Appender("drop", events, lambda items: [], slot=100), Appender("after", events, slot=200)]
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=layers)
    async with h:
        await h.run("secret")
    assert [e[0] for e in events] == ["drop"]
    assert not any(item_text(i) == "secret" for i in model.calls[0].items)


async def test_ly_2_failures_pass_items_through_and_state_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    """A raising layer (or one returning a non-list) passes its input on unchanged; an
    `ItemAppendResult` replaces the layer's state."""
    kept: list[Any] = []

    class Counting(ContextLayer):
        id = "count"
        slot = 300
        scope = "execution"

        async def init(self, ctx: LayerContext) -> int:
            return 0

        async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> ItemAppendResult:
            return ItemAppendResult(items, state=ctx.state + len(items))

        async def on_complete(self, ctx: LayerContext, outcome: str) -> None:
            kept.append(ctx.state)

    def boom(items: Sequence[Item]) -> list[Item]:
        raise RuntimeError("broken filter")

    model = ScriptedModel.echo()
    layers = [
        Appender("boom", [], boom),
        Appender("odd", [], lambda items: "not a list", slot=150),
        Counting(),
    ]
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=layers)
    with caplog.at_level(logging.WARNING, logger="noetic.layers"):
        async with h:
            response = await h.run("still here")
    assert response.text == "still here"
    assert kept == [1]
    failures = [r.getMessage() for r in caplog.records if "on_item_append failed" in r.getMessage()]
    assert len(failures) == 2


# --- project_history -----------------------------------------------------------------------


async def test_ly_4_projection_shapes_each_round_and_never_the_log() -> None:
    """The model sees the projected history on every round; the log keeps everything."""
    events: list[Any] = []
    model = ScriptedModel([tool_call_reply("echo", {"text": "x"}), text_reply("done")])
    last_two = Projector("window", events, lambda items: list(items[-2:]))
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[ECHO]), model=model, layers=[last_two])
    async with h:
        response = await h.run("first")
    assert len(events) == 2  # once per round
    assert events[1][1] == ["first", "", ""]  # the whole history: input, call, output
    assert [i.type for i in model.calls[1].items] == ["function_call", "function_call_output"]
    assert [i.type for i in response.items][-1] == "message"
    assert item_text(response.items[0]) == "first"  # the log still holds the input


async def test_ly_4_pipeline_in_slot_order_and_failures_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    """Each projector gets the previous one's output; a raising one is logged and skipped."""
    events: list[Any] = []

    def boom(items: Sequence[Item]) -> list[Item]:
        raise RuntimeError("projector crashed")

    layers = [
        Projector(
            "upper", events, lambda items: [user_message(item_text(i).upper()) for i in items], slot=200
        ),
        Projector("broken", events, boom, slot=150),
        Projector("tag", events, lambda items: [user_message(f"<{item_text(i)}>") for i in items], slot=100),
    ]
    model = ScriptedModel.echo()
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=layers)
    with caplog.at_level(logging.WARNING, logger="noetic.layers"):
        async with h:
            response = await h.run("hi")
    assert events == [("tag", ["hi"]), ("broken", ["<hi>"]), ("upper", ["<hi>"])]
    assert response.text == "<HI>"
    assert any("project_history failed" in r.getMessage() for r in caplog.records)


# --- re-render -----------------------------------------------------------------------------


class Watcher(ContextLayer):
    """Counts tool outputs in its state and asks for a re-render of `scope` when one lands."""

    scope = "execution"
    placement = "live"

    def __init__(
        self, id: str, recalls: list[str], *, slot: float, rerender: str | None = None, **attrs: Any
    ):
        self.id = id
        self.slot = slot
        self.recalls = recalls
        self.rerender = rerender
        for name, value in attrs.items():
            setattr(self, name, value)

    async def init(self, ctx: LayerContext) -> int:
        return 0

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        self.recalls.append(self.id)
        return f"{self.id}: {ctx.state} tool outputs"

    async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> ItemAppendResult | None:
        if self.rerender is None:
            return None
        outputs = sum(isinstance(i, FunctionCallOutputItem) for i in items)
        return ItemAppendResult(items, state=ctx.state + outputs, rerender=True, rerender_scope=self.rerender)  # type: ignore[arg-type]


def developer_texts(request: Any) -> list[str]:
    return [item_text(i) for i in request.items if isinstance(i, MessageItem) and i.role == "developer"]


async def test_ly_2_a_rerender_after_tool_outputs_recalls_before_the_next_round() -> None:
    """`rerender_scope="slot-after"` from slot 200: layers at slot >= 200 recall again before
    round 2 (which sees the new count); the slot-100 layer keeps its first render."""
    recalls: list[str] = []
    layers = [
        Watcher("low", recalls, slot=100),
        Watcher("asker", recalls, slot=200, rerender="slot-after"),
        Watcher("high", recalls, slot=300),
    ]
    model = ScriptedModel([tool_call_reply("echo", {"text": "x"}), text_reply("done")])
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[ECHO]), model=model, layers=layers)
    async with h:
        await h.run("go")
    assert recalls == ["low", "asker", "high", "asker", "high"]
    assert "asker: 0 tool outputs" in developer_texts(model.calls[0])
    assert "asker: 1 tool outputs" in developer_texts(model.calls[1])


async def test_ly_2_rerender_scopes_self_and_all() -> None:
    """`"self"` recalls only the asking layer; `"all"` recalls every layer."""
    for scope, expected in (("self", ["b"]), ("all", ["a", "b", "c"])):
        recalls: list[str] = []
        layers = [
            Watcher("a", recalls, slot=100),
            Watcher("b", recalls, slot=200, rerender=scope),
            Watcher("c", recalls, slot=300),
        ]
        model = ScriptedModel([tool_call_reply("echo", {"text": "x"}), text_reply("done")])
        h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[ECHO]), model=model, layers=layers)
        async with h:
            await h.run("go")
        assert recalls[3:] == expected, scope


async def test_ly_2_a_rerender_on_input_refreshes_an_eventual_layer() -> None:
    """An eventual layer is served from its cache on the next turn, unless an input pipeline
    asked for a re-render that covers it."""

    class Asker(ContextLayer):
        id = "asker"
        slot = 50
        scope = "execution"

        def __init__(self, ask: bool):
            self.ask = ask

        async def on_item_append(self, ctx: LayerContext, items: tuple[Item, ...]) -> ItemAppendResult:
            return ItemAppendResult(items, rerender=self.ask, rerender_scope="all")

    for ask, expected in ((False, 1), (True, 2)):
        recalls: list[str] = []
        lazy = Watcher("lazy", recalls, slot=100, recall_mode="eventual", scope="thread")
        h = nt.AgentHarness(
            "t", agent_graph=nt.call_model("m"), model=ScriptedModel.echo(), layers=[Asker(ask), lazy]
        )
        async with h:
            await h.run("one")
            await h.run("two")
        assert len(recalls) == expected, ask
