"""The guards: `before_tool_call` (LY-6) and `after_model_call` (LY-5) — order, decisions,
state, failure policy, cost of rejected responses."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import FunctionCallOutputItem, MessageItem
from noetic.layers import ContextLayer, LayerContext, ModelCallDecision, ToolCallDecision, ToolCallRequest
from noetic.model import ModelResponse
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


class Add(BaseModel):
    a: int
    b: int


def adder(seen: list[Any]) -> nt.Tool:
    async def add(args: Add) -> int:
        seen.append((args.a, args.b))
        return args.a + args.b

    return nt.tool("add", description="Add two numbers.", input=Add, execute=add)


class Guard(ContextLayer):
    """A tool guard: `decide(request)` answers; every call is recorded in `events`."""

    scope = "execution"

    def __init__(
        self, id: str, events: list[Any], decide: Any = None, *, slot: float = 100, **attributes: Any
    ):
        self.id = id
        self.slot = slot
        self.events = events
        self.decide = decide
        for name, value in attributes.items():
            setattr(self, name, value)

    async def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> ToolCallDecision | None:
        self.events.append((self.id, call.name, call.args, call.call_id))
        return self.decide(call) if self.decide is not None else None


class Judge(ContextLayer):
    """A response judge: `decide(response)` answers; calls are recorded in `events`."""

    scope = "execution"

    def __init__(self, id: str, events: list[Any], decide: Any, *, slot: float = 100):
        self.id = id
        self.slot = slot
        self.events = events
        self.decide = decide

    async def after_model_call(self, ctx: LayerContext, response: ModelResponse) -> ModelCallDecision | None:
        texts = [i.text for i in response.items if isinstance(i, MessageItem)]
        self.events.append((self.id, texts))
        return self.decide(response)


def tool_harness(layers: list[Any], seen: list[Any], *replies: Any) -> tuple[nt.AgentHarness, ScriptedModel]:
    model = ScriptedModel([*replies, text_reply("done")])
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[adder(seen)]), model=model, layers=layers)
    return h, model


def outputs(model: ScriptedModel, call: int) -> list[Any]:
    return [json.loads(i.output) for i in model.calls[call].items if isinstance(i, FunctionCallOutputItem)]


# --- before_tool_call ----------------------------------------------------------------------


async def test_ly_6_guards_run_in_slot_order_and_rewrite_arguments() -> None:
    """Slot 100 runs before slot 200 whatever the array order; its override_args is what the
    next guard and the tool see."""
    events: list[Any] = []
    seen: list[Any] = []
    late = Guard("late", events, slot=200)
    early = Guard("early", events, lambda call: ToolCallDecision(override_args={**call.args, "b": 40}))
    h, model = tool_harness([late, early], seen, tool_call_reply("add", {"a": 2, "b": 3}))
    async with h:
        await h.run("add")
    assert [(e[0], e[2]) for e in events] == [("early", {"a": 2, "b": 3}), ("late", {"a": 2, "b": 40})]
    assert seen == [(2, 40)]
    assert outputs(model, 1) == [42]
    assert events[0][3] == events[1][3]  # the call id of the pending call


async def test_ly_6_block_refuses_the_call_and_the_model_reads_why() -> None:
    """The first block stops the later guards; the tool never runs; the message is the output."""
    events: list[Any] = []
    seen: list[Any] = []
    blocker = Guard("gate", events, lambda call: ToolCallDecision(block="add is not allowed today"))
    after = Guard("after", events, slot=300)
    h, model = tool_harness([blocker, after], seen, tool_call_reply("add", {"a": 1, "b": 1}))
    async with h:
        response = await h.run("add")
    assert seen == []
    assert [e[0] for e in events] == ["gate"]
    assert outputs(model, 1) == [{"error": "add is not allowed today"}]
    assert response.text == "done"


async def test_ly_6_each_call_of_a_round_is_guarded_in_order() -> None:
    """Two calls in one round: each is guarded, in the order the model gave them."""
    events: list[Any] = []
    seen: list[Any] = []
    guard = Guard("g", events, lambda call: ToolCallDecision(block="no") if call.args["a"] == 1 else None)
    both = [tool_call_reply("add", {"a": 1, "b": 1}), tool_call_reply("add", {"a": 5, "b": 5})]
    h, model = tool_harness([guard], seen, both)
    async with h:
        await h.run("add")
    assert [e[2]["a"] for e in events] == [1, 5]
    assert seen == [(5, 5)]
    assert outputs(model, 1) == [{"error": "no"}, 10]


async def test_ly_6_a_failing_guard_abstains_unless_it_is_a_gate(caplog: pytest.LogCaptureFixture) -> None:
    """Raising or timing out: logged and abstains by default; `on_before_tool_call_error="deny"`
    fails closed and blocks the call."""

    def boom(call: ToolCallRequest) -> ToolCallDecision:
        raise RuntimeError("policy service down")

    for policy, ran in (("abstain", [(1, 2)]), ("deny", [])):
        seen: list[Any] = []
        guard = Guard("gate", [], boom, on_before_tool_call_error=policy)
        h, model = tool_harness([guard], seen, tool_call_reply("add", {"a": 1, "b": 2}))
        with caplog.at_level(logging.WARNING, logger="noetic.layers"):
            async with h:
                await h.run("add")
        assert seen == ran
        assert any("before_tool_call failed" in r.getMessage() for r in caplog.records)
        if policy == "deny":
            assert "policy service down" in outputs(model, 1)[0]["error"]

    class Slow(Guard):
        async def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> ToolCallDecision | None:
            await anyio.sleep(5)
            return None

    seen = []
    h, _ = tool_harness(
        [Slow("slow", [], timeouts={"before_tool_call": 0.05})],
        seen,
        tool_call_reply("add", {"a": 3, "b": 4}),
    )
    async with h:
        await h.run("add")
    assert seen == [(3, 4)]


async def test_ly_6_guard_state_is_kept() -> None:
    """A guard's `state=` replaces its state (here: a count of calls seen)."""
    counted: list[Any] = []

    class Counting(ContextLayer):
        id = "count"
        slot = 100
        scope = "execution"

        async def init(self, ctx: LayerContext) -> int:
            return 0

        async def before_tool_call(self, ctx: LayerContext, call: ToolCallRequest) -> ToolCallDecision:
            return ToolCallDecision(state=ctx.state + 1)

        async def on_complete(self, ctx: LayerContext, outcome: str) -> None:
            counted.append(ctx.state)

    h, _ = tool_harness(
        [Counting()], [], tool_call_reply("add", {"a": 1, "b": 1}), tool_call_reply("add", {"a": 1, "b": 2})
    )
    async with h:
        await h.run("add")
    assert counted == [2]


# --- after_model_call ----------------------------------------------------------------------


async def test_ly_5_deny_fails_the_step_with_steering_denied_and_stops_later_judges() -> None:
    """The first deny (slot order) raises `steering_denied` carrying the reason."""
    events: list[Any] = []
    deny = Judge("policy", events, lambda r: ModelCallDecision.deny("leaks a secret"), slot=90)
    later = Judge("later", events, lambda r: None, slot=200)
    model = ScriptedModel([text_reply("the password is hunter2")])
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=[later, deny])
    async with h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run("tell me")
    assert info.value.code == "steering_denied"
    assert "leaks a secret" in str(info.value)
    assert [e[0] for e in events] == ["policy"]


async def test_ly_5_guide_retries_with_the_guidance_and_charges_every_response() -> None:
    """Guide drops the response, appends the guidance of every guiding judge as one developer
    message and calls the model again; both responses' cost is charged."""
    events: list[Any] = []

    def short(response: ModelResponse) -> ModelCallDecision | None:
        text = "".join(i.text for i in response.items if isinstance(i, MessageItem))
        return ModelCallDecision.guide("Answer in one word.") if " " in text else None

    def polite(response: ModelResponse) -> ModelCallDecision | None:
        text = "".join(i.text for i in response.items if isinstance(i, MessageItem))
        return ModelCallDecision.guide("Say please.") if " " in text else ModelCallDecision.allow()

    model = ScriptedModel([text_reply("well, it is blue", cost=0.01), text_reply("blue", cost=0.02)])
    layers = [Judge("short", events, short, slot=100), Judge("polite", events, polite, slot=110)]
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=layers)
    async with h:
        response = await h.run("sky colour?")
    assert response.text == "blue"
    assert len(model.calls) == 2
    guidance = [i for i in model.calls[1].items if isinstance(i, MessageItem) and i.role == "developer"]
    assert guidance[-1].text == "Answer in one word.\nSay please."
    assert not any(isinstance(i, MessageItem) and i.text == "well, it is blue" for i in response.items)
    assert response.cost == pytest.approx(0.03)
    assert response.billed_cost == pytest.approx(0.03)


async def test_ly_5_guide_retries_at_most_three_times_then_accepts() -> None:
    """A judge that always guides gets three retries; the fourth response is accepted."""
    events: list[Any] = []
    model = ScriptedModel([text_reply(f"try {n}") for n in range(4)])
    judge = Judge("nag", events, lambda r: ModelCallDecision.guide("again"))
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=[judge])
    async with h:
        response = await h.run("go")
    assert len(model.calls) == 4
    assert response.text == "try 3"


async def test_ly_5_a_failing_judge_abstains_and_state_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    """A raising judge is logged and abstains; a judge's `state=` replaces its state."""
    kept: list[Any] = []

    class Tally(ContextLayer):
        id = "tally"
        slot = 100
        scope = "execution"

        async def init(self, ctx: LayerContext) -> int:
            return 0

        async def after_model_call(self, ctx: LayerContext, response: ModelResponse) -> ModelCallDecision:
            return ModelCallDecision.allow(state=ctx.state + 1)

        async def on_complete(self, ctx: LayerContext, outcome: str) -> None:
            kept.append(ctx.state)

    def boom(response: ModelResponse) -> ModelCallDecision:
        raise RuntimeError("judge crashed")

    model = ScriptedModel([tool_call_reply("add", {"a": 1, "b": 1}), text_reply("2")])
    layers = [Judge("broken", [], boom, slot=50), Tally()]
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m", tools=[adder([])]), model=model, layers=layers)
    with caplog.at_level(logging.WARNING, logger="noetic.layers"):
        async with h:
            response = await h.run("go")
    assert response.text == "2"
    assert kept == [2]  # one judgement per model response
    assert any("after_model_call failed" in r.getMessage() for r in caplog.records)


async def test_ly_6_invoke_tool_steps_are_guarded_too() -> None:
    """A direct `invoke_tool` step: the guard sees the arguments (call id = step id) and may
    rewrite them; a block fails the step with `steering_denied`."""
    events: list[Any] = []
    seen: list[Any] = []
    rewrite = Guard("rewrite", events, lambda call: ToolCallDecision(override_args={"a": 1, "b": 1}))
    h = nt.AgentHarness(
        "t", agent_graph=nt.invoke_tool("direct", adder(seen), {"a": 9, "b": 9}), layers=[rewrite]
    )
    async with h:
        response = await h.run(None)
    assert response.output == 2 and seen == [(1, 1)]
    assert events == [("rewrite", "add", {"a": 9, "b": 9}, "direct")]

    block = Guard("gate", [], lambda call: ToolCallDecision(block="not from this graph"))
    h = nt.AgentHarness(
        "t", agent_graph=nt.invoke_tool("direct", adder(seen), {"a": 2, "b": 2}), layers=[block]
    )
    async with h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run(None)
    assert info.value.code == "steering_denied" and "not from this graph" in str(info.value)
    assert seen == [(1, 1)]


def test_on_before_tool_call_error_is_validated() -> None:
    """Only "abstain" and "deny" are failure policies of a guard (LY-13)."""
    with pytest.raises(nt.NoeticConfigError) as info:
        nt.AgentHarness("t", layers=[Guard("g", [], on_before_tool_call_error="allow")])
    assert info.value.code == "INVALID_LAYER"
    assert "on_before_tool_call_error" in str(info.value)


async def test_ly_5_guidance_is_sent_last_after_the_layers() -> None:
    """The retry's view ends with the guidance — after history and the live band — and the
    guidance is not sent twice; the log keeps it where it was added."""

    class Live(ContextLayer):
        id = "live"
        slot = 100
        scope = "execution"
        placement = "live"

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            return "live notes"

    judge = Judge("j", [], lambda r: ModelCallDecision.guide("shorter") if r.items[0].text != "ok" else None)
    model = ScriptedModel([text_reply("far too long"), text_reply("ok")])
    h = nt.AgentHarness("t", agent_graph=nt.call_model("m"), model=model, layers=[Live(), judge])
    async with h:
        response = await h.run("hi")
    retry = [i.text for i in model.calls[1].items if isinstance(i, MessageItem)]
    assert retry == ["hi", "live notes", "shorter"]
    assert [i.text for i in response.items if isinstance(i, MessageItem)] == ["hi", "shorter", "ok"]
