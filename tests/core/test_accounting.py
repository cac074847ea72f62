"""Accepting what adapters report (AC-1..AC-4): a broken or hostile model cannot corrupt
accounting or slip past `until.max_cost`, whichever adapter it runs behind."""

from __future__ import annotations

import logging
import math
from typing import Any

import noetic as nt
import pytest
from noetic.errors import NoeticError
from noetic.model import ModelRequest
from noetic.testing import ScriptedModel, text_reply
from noetic.usage import RoundUsage

pytestmark = pytest.mark.anyio


async def run_one(reply: Any) -> tuple[nt.AgentHarness, Any]:
    seen: dict[str, nt.Context] = {}

    def grab(value: Any, ctx: nt.Context) -> Any:
        seen["ctx"] = ctx
        return value

    graph = nt.sequence("turn", [nt.run_code("grab", grab), nt.call_model("answer")])
    async with nt.AgentHarness("acct", agent_graph=graph, model=ScriptedModel([reply])) as harness:
        await harness.run("hi")
    return harness, seen["ctx"]


@pytest.mark.parametrize("cost", [-1000.0, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["cost", "billed_cost"])
async def test_ac_2_an_unusable_cost_rejects_the_round(cost: float, field: str) -> None:
    figures = {"cost": 0.001, "billed_cost": 0.001, field: cost}
    reply = text_reply("hello", **figures)
    with pytest.raises(NoeticError) as err:
        await run_one(reply)
    assert err.value.code == "model_error"
    assert err.value.details["field"] == field
    assert field in err.value.message


async def test_ac_1_negative_token_counts_are_clamped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="noetic.accounting")
    usage = RoundUsage(input_tokens=-500, output_tokens=7, cached_tokens=-3)
    _, ctx = await run_one(text_reply("hello", usage=usage, cost=0.002))
    assert (ctx.tokens.input, ctx.tokens.output, ctx.tokens.cached) == (0, 7, 0)
    assert ctx.cost == pytest.approx(0.002)
    assert "negative token counts" in caplog.text


async def test_ac_3_holds_and_settlements_are_sanitised(caplog: pytest.LogCaptureFixture) -> None:
    holds: dict[str, Any] = {}

    def hold_things(request: ModelRequest) -> Any:
        billing = request.billing
        assert billing is not None
        holds["negative"] = billing.hold(-5.0)
        holds["nan"] = billing.hold(math.nan)
        holds["good"] = billing.hold(0.25)
        holds["good"].settle(math.nan, math.nan)  # unusable: the hold stays
        return text_reply("ok")

    seen: dict[str, nt.Context] = {}

    def grab(value: Any, ctx: nt.Context) -> Any:
        seen["ctx"] = ctx
        return value

    graph = nt.sequence("turn", [nt.run_code("grab", grab), nt.call_model("answer")])
    async with nt.AgentHarness("acct", agent_graph=graph, model=ScriptedModel([hold_things])) as harness:
        await harness.run("hi")
        ctx = seen["ctx"]
        assert holds["negative"].amount == 0.0
        assert holds["nan"].amount == math.inf
        assert ctx.held_cost == math.inf  # an unknown ceiling bounds nothing
        assert ctx.cost == 0.0  # the NaN settlement was refused
        holds["nan"].release()
        assert ctx.held_cost == pytest.approx(0.25)
        holds["good"].settle(0.1, 0.1)
        assert (ctx.held_cost, ctx.cost) == (0.0, pytest.approx(0.1))
    assert "unusable" in caplog.text


async def test_ac_4_max_cost_counts_what_is_held() -> None:
    """A loop whose calls are all held (no bill yet) still stops at its budget."""

    def held_call(request: ModelRequest) -> Any:
        assert request.billing is not None
        request.billing.hold(0.4)  # a cut-off call's ceiling, never reconciled
        return text_reply("again")

    graph = nt.loop("spend", [nt.call_model("answer")], until=nt.until.max_cost(1.0), max_iterations=20)
    model = ScriptedModel(default=held_call)
    async with nt.AgentHarness("acct", agent_graph=graph, model=model) as harness:
        await harness.run("go")
    assert len(model.calls) == 3  # 0.4, 0.8, 1.2 >= 1.0
