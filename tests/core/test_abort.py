"""Abort is cooperative (CTX-17): it sets the flag and rejects Noetic's own waits, never cuts
user code; spawn timeouts abort before they raise (SP-7); a parent abort reaches every live
parallel path (LC-2); a tool call cut short still gets an output (IL-8)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem
from noetic.testing import ScriptedModel, text_reply, tool_call_reply

pytestmark = pytest.mark.anyio

NEVER = nt.channel("never", schema=str)


async def run_graph(graph: nt.Step, input: Any = "", **harness: Any) -> nt.HarnessResponse:
    async with nt.AgentHarness("t", agent_graph=graph, **harness) as h:
        return await h.run(input)


async def test_sp_7_spawn_timeout_aborts_the_child_before_its_recv_fails() -> None:
    seen: dict[str, Any] = {}

    async def wait(_: Any, ctx: nt.Context) -> None:
        try:
            await ctx.recv(NEVER, timeout=0)
        except BaseException as exc:
            seen["error"], seen["aborted"], seen["reason"] = exc, ctx.aborted, ctx.abort_reason
            raise

    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.spawn("sp", nt.run_code("wait", wait), timeout=0.05))
    assert err.value.code == "cancelled" and err.value.reason == "spawn timeout"
    assert isinstance(seen["error"], nt.NoeticError) and seen["error"].code == "cancelled"
    assert seen["aborted"] is True and seen["reason"] == "spawn timeout"


async def test_sp_7_a_spawn_that_finishes_in_time_is_not_aborted() -> None:
    seen: list[nt.Context] = []

    def quick(value: str, ctx: nt.Context) -> str:
        seen.append(ctx)
        return value.upper()

    with anyio.fail_after(5):
        resp = await run_graph(nt.spawn("sp", nt.run_code("q", quick), timeout=5), "hi")
    assert resp.output == "HI" and not seen[0].aborted


async def test_ctx_17_abort_never_cuts_a_run_code_body_but_discards_its_result() -> None:
    trace: list[str] = []

    async def body(_: Any, ctx: nt.Context) -> str:
        ctx.abort("stop")
        try:
            await anyio.sleep(0.02)  # the user's own await runs to its end
        except BaseException as exc:
            trace.append(type(exc).__name__)
            raise
        trace.append(f"finished aborted={ctx.aborted}")
        return "result"

    after: list[str] = []
    graph = nt.sequence("s", [nt.run_code("b", body), nt.run_code("next", lambda v: after.append(v))])
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "cancelled" and err.value.reason == "stop"
    assert trace == ["finished aborted=True"]
    assert after == []  # the next step never starts


async def test_ctx_17_a_parent_abort_lets_a_path_finish_its_own_await() -> None:
    trace: list[str] = []

    async def busy(_: Any, ctx: nt.Context) -> str:
        await anyio.sleep(0.05)
        trace.append(f"busy done aborted={ctx.aborted}")
        return "busy"

    async def stopper(_: Any, ctx: nt.Context) -> None:
        await anyio.sleep(0.01)
        assert ctx.parent is not None
        ctx.parent.abort("halt")

    graph = nt.in_parallel("p", [nt.run_code("busy", busy), nt.run_code("stop", stopper)])
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "cancelled" and err.value.reason == "halt"
    assert trace == ["busy done aborted=True"]


async def test_lc_2_a_self_aborting_path_does_not_hide_the_parent_abort() -> None:
    def quitter(_: Any, ctx: nt.Context) -> None:
        ctx.abort("path gave up")

    async def halter(_: Any, ctx: nt.Context) -> None:
        await anyio.sleep(0.02)
        assert ctx.parent is not None
        ctx.parent.abort("halt")

    graph = nt.in_parallel("p", [nt.run_code("quit", quitter), nt.run_code("halt", halter)])
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "cancelled" and err.value.reason == "halt"


async def test_lc_2_a_parent_abort_reaches_every_live_path() -> None:
    reasons: list[str | None] = []

    async def blocked(_: Any, ctx: nt.Context) -> None:
        try:
            await ctx.recv(NEVER, timeout=0)
        except nt.NoeticError as exc:
            reasons.append(exc.reason)
            raise

    async def stopper(_: Any, ctx: nt.Context) -> None:
        await anyio.sleep(0.02)
        assert ctx.parent is not None
        ctx.parent.abort("halt")

    paths = [nt.run_code(f"w{i}", blocked) for i in range(3)] + [nt.run_code("stop", stopper)]
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.in_parallel("p", paths))
    assert err.value.code == "cancelled" and err.value.reason == "halt"
    assert reasons == ["halt", "halt", "halt"]


async def test_lc_1_a_self_aborted_path_alone_still_gives_fork_partial() -> None:
    def quitter(_: Any, ctx: nt.Context) -> None:
        ctx.abort("path gave up")

    graph = nt.in_parallel("p", [nt.run_code("quit", quitter), nt.run_code("ok", lambda v: "ok")])
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "fork_partial"
    assert [r.error.code for r in err.value.failed] == ["cancelled"]


# --- a tool call cut short still gets an output (IL-8) ---------------------------------------


def _outputs_of(items: Any) -> dict[str, FunctionCallOutputItem]:
    return {i.call_id: i for i in items if isinstance(i, FunctionCallOutputItem)}


async def test_il_8_abort_while_a_tool_waits_records_a_cancelled_output() -> None:
    entered = anyio.Event()

    async def waiting(args: dict[str, Any], ctx: nt.Context) -> str:
        entered.set()
        return str(await ctx.recv(NEVER, timeout=0))

    wait_tool = nt.tool("wait", description="waits", input={"type": "object"}, execute=waiting)
    model = ScriptedModel([tool_call_reply("wait", {}), text_reply("second turn")])
    graph = nt.call_model("m", tools=[wait_tool])
    async with nt.AgentHarness("t", agent_graph=graph, model=model) as h:
        await h.execute("go")
        with anyio.fail_after(5):
            await entered.wait()
        h.abort(reason="user stop")
        with pytest.raises(nt.NoeticError) as err:
            await h.get_agent_response()
        assert err.value.code == "cancelled"
        with anyio.fail_after(5):
            await h.run("again")
    first_view = model.calls[1].items
    call = next(i for i in first_view if isinstance(i, FunctionCallItem))
    output = _outputs_of(first_view)[call.call_id]
    assert output.status == "incomplete"
    assert json.loads(output.output) == {"error": "cancelled", "reason": "user stop"}


async def test_il_8_cancelling_the_turn_from_outside_mid_tool_records_a_cancelled_output() -> None:
    entered = anyio.Event()

    async def slow(args: dict[str, Any]) -> str:
        entered.set()
        await anyio.sleep(30)
        return "late"

    slow_tool = nt.tool("slow", description="slow", input={"type": "object"}, execute=slow)
    model = ScriptedModel([[tool_call_reply("slow", {}), tool_call_reply("slow", {})], text_reply("next")])
    graph = nt.call_model("m", tools=[slow_tool])
    async with nt.AgentHarness("t", agent_graph=graph, model=model) as h:
        with anyio.move_on_after(0.1):
            await h.run("go")
        assert entered.is_set()
        with anyio.fail_after(5):
            await h.run("again")
    view = model.calls[1].items
    calls = [i for i in view if isinstance(i, FunctionCallItem)]
    outputs = _outputs_of(view)
    assert len(calls) == 2 and set(outputs) == {c.call_id for c in calls}
    assert all(json.loads(o.output)["error"] == "cancelled" for o in outputs.values())


async def test_ctx_17_abort_during_a_tool_keeps_its_result_and_starts_no_further_round() -> None:
    async def finishing(args: dict[str, Any], ctx: nt.Context) -> str:
        ctx.abort("enough")
        await anyio.sleep(0.01)  # not cut
        return "done anyway"

    done_tool = nt.tool("finish", description="f", input={"type": "object"}, execute=finishing)
    model = ScriptedModel([tool_call_reply("finish", {}), text_reply("never asked")])
    graph = nt.call_model("m", tools=[done_tool])
    async with nt.AgentHarness("t", agent_graph=graph, model=model) as h:
        with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
            await h.run("go")
        log = h._session(None).log.items
    assert err.value.code == "cancelled" and err.value.reason == "enough"
    assert len(model.calls) == 1
    assert [json.loads(o.output) for o in _outputs_of(log).values()] == ["done anyway"]


async def test_ctx_17_a_route_and_a_directly_invoked_tool_are_never_cut() -> None:
    trace: list[str] = []

    async def route(_: Any, ctx: nt.Context) -> nt.Step:
        ctx.abort("route stop")
        await anyio.sleep(0.01)
        trace.append("route finished")
        return nt.run_code("chosen", lambda v: trace.append("chosen ran"))

    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.conditional("c", route))
    assert err.value.reason == "route stop" and trace == ["route finished"]

    async def body(args: dict[str, Any], ctx: nt.Context) -> str:
        ctx.abort("tool stop")
        await anyio.sleep(0.01)
        trace.append("tool finished")
        return "ignored"

    direct = nt.invoke_tool("t", nt.tool("t", description="d", input={"type": "object"}, execute=body), {})
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(direct)
    assert err.value.reason == "tool stop" and trace[-1] == "tool finished"


async def test_ctx_17_a_layer_recall_finishes_and_the_model_is_not_called_after_abort() -> None:
    from noetic.layers import ContextLayer, LayerContext

    trace: list[str] = []

    class Slow(ContextLayer):
        id = "slow"
        slot = 100

        async def recall(self, ctx: LayerContext, budget: float) -> str:
            await anyio.sleep(0.05)  # aborted meanwhile: not cut
            trace.append("recall finished")
            return "remembered"

    async def stopper(_: Any, ctx: nt.Context) -> None:
        await anyio.sleep(0.01)
        assert ctx.parent is not None
        ctx.parent.abort("halt")

    model = ScriptedModel.echo()
    graph = nt.in_parallel("p", [nt.call_model("m"), nt.run_code("stop", stopper)])
    async with nt.AgentHarness("t", agent_graph=graph, model=model, layers=[Slow()]) as h:
        with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
            await h.run("hi")
    assert err.value.reason == "halt" and trace == ["recall finished"] and model.calls == []
