"""in_parallel, spawn and loop semantics (LC-1..LC-5, SP-1, SP-7, CTX-4, LP-1..LP-4)."""

from __future__ import annotations

import math
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio

#: A channel nothing is ever sent to: a path blocked on it waits in a Noetic wait, which abort
#: rejects (user code of its own, such as `anyio.sleep`, is never cut by abort: CTX-17).
NEVER = nt.channel("never", schema=str)


async def run_graph(graph: nt.Step, input: Any = "", **harness: Any) -> nt.HarnessResponse:
    async with nt.AgentHarness("t", agent_graph=graph, **harness) as h:
        return await h.run(input)


def fail(message: str) -> Any:
    def body(_: Any) -> None:
        raise ValueError(message)

    return body


async def test_lc_1_all_failure_aborts_the_slow_sibling_and_raises_fork_partial() -> None:
    slow_finished: list[bool] = []

    async def slow(_: Any, ctx: nt.Context) -> str:
        await ctx.recv(NEVER, timeout=0)
        slow_finished.append(True)
        return "slow"

    async def bad(_: Any) -> None:
        await anyio.sleep(0.02)  # let `ok` finish first, whatever order the backend starts tasks in
        raise ValueError("boom")

    graph = nt.in_parallel(
        "p", [nt.run_code("ok", lambda i: "ok"), nt.run_code("bad", bad), nt.run_code("slow", slow)]
    )
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "fork_partial"
    assert [r.step_id for r in err.value.succeeded] == ["ok"]
    failed = {r.step_id: r.error for r in err.value.failed}
    assert failed["bad"].code == "step_failed" and isinstance(failed["bad"].cause, ValueError)
    assert failed["slow"].code == "cancelled"
    assert slow_finished == []


async def test_lc_1_all_returns_outputs_in_path_order_and_merge_gets_them() -> None:
    async def later(_: Any) -> str:
        await anyio.sleep(0.02)
        return "first-declared"

    graph = nt.in_parallel("p", [nt.run_code("a", later), nt.run_code("b", lambda i: "second")])
    assert (await run_graph(graph)).output == ["first-declared", "second"]
    merged = nt.in_parallel("m", [nt.run_code("a", lambda i: 1), nt.run_code("b", lambda i: 2)], merge=sum)
    assert (await run_graph(merged)).output == 3


async def test_lc_2_parent_abort_gives_cancelled_not_fork_partial() -> None:
    async def slow(_: Any, ctx: nt.Context) -> None:
        await ctx.recv(NEVER, timeout=0)

    def stop_parent(_: Any, ctx: nt.Context) -> None:
        assert ctx.parent is not None
        ctx.parent.abort("parent stop")
        raise ValueError("this path fails too")

    graph = nt.in_parallel("p", [nt.run_code("slow", slow), nt.run_code("stop", stop_parent)])
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "cancelled" and err.value.reason == "parent stop"


async def test_lc_3_race_first_success_wins_losers_are_cancelled_and_winner_state_kept() -> None:
    finished: list[str] = []

    async def fast(_: Any, ctx: nt.Context) -> str:
        ctx.state["by"] = "fast"
        return "fast"

    async def slow(_: Any, ctx: nt.Context) -> str:
        ctx.state["by"] = "slow"
        await ctx.recv(NEVER, timeout=0)
        finished.append("slow")
        return "slow"

    def read_state(value: Any, ctx: nt.Context) -> Any:
        return (value, ctx.state)

    graph = nt.sequence(
        "s",
        [
            nt.in_parallel("r", [nt.run_code("slow", slow), nt.run_code("fast", fast)], mode="race"),
            nt.run_code("state", read_state),
        ],
    )
    async with nt.AgentHarness("t", agent_graph=graph) as h:
        with anyio.fail_after(5):
            resp = await h.run("", state={"by": None})
    assert resp.output == ("fast", {"by": "fast"})
    assert finished == []


async def test_lc_3_race_where_every_path_fails_raises_fork_partial() -> None:
    graph = nt.in_parallel("r", [nt.run_code("a", fail("a")), nt.run_code("b", fail("b"))], mode="race")
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "fork_partial" and len(err.value.failed) == 2


async def test_lc_4_settle_never_raises_and_reports_every_path() -> None:
    graph = nt.in_parallel(
        "s", [nt.run_code("a", fail("x")), nt.run_code("b", lambda i: "ok")], mode="settle"
    )
    results = (await run_graph(graph)).output
    assert [(r.step_id, r.status) for r in results] == [("a", "rejected"), ("b", "fulfilled")]
    assert results[1].value == "ok" and results[0].error.code == "step_failed"


async def test_lc_5_concurrency_bounds_paths_in_flight() -> None:
    live = {"now": 0, "max": 0}

    async def work(_: Any) -> None:
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await anyio.sleep(0.01)
        live["now"] -= 1

    graph = nt.in_parallel("c", [nt.run_code(f"w{i}", work) for i in range(6)], concurrency=2)
    await run_graph(graph)
    assert live["max"] == 2


async def test_ctx_4_path_state_mutations_do_not_reach_the_parent_after_all() -> None:
    def mutate(_: Any, ctx: nt.Context) -> None:
        ctx.state["touched"] = True

    def read(_: Any, ctx: nt.Context) -> Any:
        return dict(ctx.state)

    graph = nt.sequence("s", [nt.in_parallel("p", [nt.run_code("m", mutate)]), nt.run_code("r", read)])
    async with nt.AgentHarness("t", agent_graph=graph) as h:
        assert (await h.run("", state={"touched": False})).output == {"touched": False}


async def test_sp_1_spawn_child_starts_with_an_empty_log_and_cloned_state() -> None:
    def child(_: Any, ctx: nt.Context) -> Any:
        ctx.state["child"] = True
        return (len(ctx.item_log), ctx.depth)

    def parent_state(value: Any, ctx: nt.Context) -> Any:
        return (value, ctx.state, len(ctx.item_log))

    graph = nt.sequence(
        "s", [nt.call_model("m"), nt.spawn("sp", nt.run_code("c", child)), nt.run_code("p", parent_state)]
    )
    async with nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel([text_reply("hi")])) as h:
        resp = await h.run("hello", state={"child": False})
    assert resp.output == ((0, 1), {"child": False}, 2)


async def test_sp_7_spawn_timeout_aborts_the_child_and_raises_cancelled() -> None:
    seen: list[nt.Context] = []

    async def hang(_: Any, ctx: nt.Context) -> None:
        seen.append(ctx)
        await ctx.recv(NEVER, timeout=0)

    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.spawn("sp", nt.run_code("hang", hang), timeout=0.05))
    assert err.value.code == "cancelled" and err.value.reason == "spawn timeout"
    assert seen[0].aborted


async def test_lp_1_loop_pipes_body_and_prepare_next_builds_the_next_input() -> None:
    seen: list[Any] = []

    def prepare(output: int, verdict: nt.Verdict, ctx: nt.Context) -> int:
        seen.append(verdict.stop)
        return output * 10

    graph = nt.loop(
        "l", [nt.run_code("inc", lambda i: i + 1)], until=nt.until.max_steps(3), prepare_next=prepare
    )
    assert (await run_graph(graph, 0)).output == 111
    assert seen == [False, False]


async def test_lp_2_raising_predicate_stops_the_loop_normally() -> None:
    def broken(snap: nt.LoopSnapshot) -> bool:
        raise RuntimeError("oops")

    assert (await run_graph(nt.loop("l", nt.run_code("i", lambda i: i + 1), until=broken), 0)).output == 1


async def test_lp_2_exceeding_max_iterations_fails_the_step() -> None:
    graph = nt.loop("l", nt.run_code("i", lambda i: i + 1), until=nt.until.never(), max_iterations=3)
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(graph, 0)
    assert err.value.code == "step_failed" and "3 iterations" in err.value.message


async def test_lp_3_on_error_retry_and_skip() -> None:
    attempts: list[int] = []

    def flaky(value: int) -> int:
        attempts.append(value)
        if len(attempts) == 2:
            raise ValueError("transient")
        return value + 1

    retry = nt.loop("l", nt.run_code("f", flaky), until=nt.until.max_steps(3), on_error="retry")
    assert (await run_graph(retry, 0)).output == 3 and attempts == [0, 1, 1, 2]

    calls: list[int] = []

    def every_other(value: int) -> int:
        calls.append(value)
        if len(calls) % 2 == 0:
            raise ValueError("skip me")
        return value + 1

    skip = nt.loop("l", nt.run_code("f", every_other), until=nt.until.max_steps(2), on_error="skip")
    assert (await run_graph(skip, 0)).output == 2 and calls == [0, 1, 1]

    with pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.loop("l", nt.run_code("f", fail("no")), until=nt.until.never()), 0)
    assert err.value.code == "step_failed"


async def test_lp_4_predicates_and_combinators() -> None:
    def snap(**kw: Any) -> nt.LoopSnapshot:
        base: dict[str, Any] = {
            "step_count": 1,
            "tokens": None,
            "elapsed": 0.0,
            "cost": 0.0,
            "last_output": "x",
            "last_text": "x",
        }
        return nt.LoopSnapshot(**{**base, **kw})

    from noetic.predicates import evaluate

    assert (await evaluate(nt.until.max_cost(0.5), snap(cost=0.5))).stop
    assert not (await evaluate(nt.until.max_cost(0.5), snap(cost=0.4))).stop
    assert (await evaluate(nt.until.max_duration(1), snap(elapsed=1000.0))).stop
    assert (await evaluate(nt.until.output_contains("DONE"), snap(last_text="all DONE"))).stop
    assert (await evaluate(nt.until.output_equals(3), snap(last_output=3))).stop
    assert (await evaluate(nt.until.no_tool_calls(), snap())).stop
    assert not (await evaluate(nt.until.never(), snap())).stop
    converged = nt.until.converged()
    assert not (await evaluate(converged, snap(last_text="a"))).stop
    assert (await evaluate(converged, snap(last_text="a"))).stop
    either = nt.any_(nt.until.never(), nt.until.max_steps(1))
    both = nt.all_(nt.until.max_steps(1), nt.until.output_contains("zzz"))
    assert (await evaluate(either, snap())).stop and not (await evaluate(both, snap())).stop
    verified = nt.until.verified(lambda out: (out == "x", "looks good"))
    verdict = await evaluate(verified, snap())
    assert verdict.stop and verdict.feedback == "looks good"


async def test_lp_4_no_tool_calls_stops_a_react_loop() -> None:
    """Issue 13, point 1: the loop stops once the last model response asked for no tools, so a
    tool call and an answer cost exactly two model calls (no third call on the answer)."""
    lookup = nt.tool("lookup", description="Look up", input={"type": "object"}, execute=lambda a: "data")
    from noetic.testing import tool_call_reply

    model = ScriptedModel([tool_call_reply("lookup", {}), text_reply("final")])
    graph = nt.loop("react", nt.call_model("m", tools=[lookup]), until=nt.until.no_tool_calls())
    resp = await run_graph(graph, "go", model=model)
    assert resp.output == "final" and len(model.calls) == 2 and model.remaining == 0
    roles = [getattr(i, "role", None) for i in resp.items if getattr(i, "type", None) == "message"]
    assert roles == ["user", "assistant"]  # the answer was never sent back as a user message


async def test_lp_4_no_tool_calls_judges_the_last_response_not_the_whole_step() -> None:
    """Issue 13, point 1: a step whose earlier rounds called tools but whose last response did
    not is a stop; a step that records tool calls of its last response is not."""
    from noetic.items import FunctionCallItem
    from noetic.predicates import evaluate
    from noetic.usage import StepMeta

    call = FunctionCallItem(call_id="c1", name="lookup", arguments="{}")

    def snap(meta: StepMeta) -> nt.LoopSnapshot:
        return nt.LoopSnapshot(1, None, 0.0, 0.0, "x", "x", last_step_meta=meta)  # type: ignore[arg-type]

    answered = StepMeta(tool_calls=(call,), last_response_tool_calls=())
    asking = StepMeta(tool_calls=(call,), last_response_tool_calls=(call,))
    assert (await evaluate(nt.until.no_tool_calls(), snap(answered))).stop
    assert not (await evaluate(nt.until.no_tool_calls(), snap(asking))).stop
    assert not (await evaluate(nt.until.no_tool_calls(), snap(StepMeta(tool_calls=(call,))))).stop


async def test_loop_accepts_infinite_max_iterations_and_rejects_bad_ones() -> None:
    graph = nt.loop(
        "l", nt.run_code("i", lambda i: i + 1), until=nt.until.max_steps(2), max_iterations=math.inf
    )
    assert (await run_graph(graph, 0)).output == 2
    with pytest.raises(nt.NoeticConfigError):
        nt.loop("l", nt.run_code("i", lambda i: i), until=nt.until.never(), max_iterations=0)


async def test_loop_snapshot_history_holds_at_most_keep_history_outputs() -> None:
    histories: list[tuple[Any, ...]] = []

    def watch(snap: nt.LoopSnapshot) -> bool:
        histories.append(tuple(snap.history))
        return snap.step_count >= 4

    default = nt.loop("l", nt.run_code("i", lambda i: i + 1), until=watch)
    assert (await run_graph(default, 0)).output == 4
    assert histories[-1] == (1, 2, 3, 4)
    histories.clear()
    short = nt.loop("l", nt.run_code("i", lambda i: i + 1), until=watch, keep_history=2)
    assert (await run_graph(short, 0)).output == 4
    assert histories == [(1,), (1, 2), (2, 3), (3, 4)]
    for bad in (0, 1.5, True):
        with pytest.raises(nt.NoeticConfigError, match="keep_history"):
            nt.loop("l", nt.run_code("i", lambda i: i), until=nt.until.never(), keep_history=bad)  # type: ignore[arg-type]
