"""Context fields, abort semantics and spend roll-up (CTX-1..CTX-16, TU-4..TU-7)."""

from __future__ import annotations

from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.testing import ScriptedModel, text_reply

pytestmark = pytest.mark.anyio


async def run_graph(graph: nt.Step, input: Any = "", **harness: Any) -> nt.HarnessResponse:
    async with nt.AgentHarness("t", agent_graph=graph, **harness) as h:
        return await h.run(input)


async def test_ctx_9_first_abort_wins() -> None:
    seen: dict[str, Any] = {}

    def body(_: Any, ctx: nt.Context) -> None:
        ctx.abort("a")
        ctx.abort("b")
        seen["reason"], seen["aborted"] = ctx.abort_reason, ctx.aborted

    with pytest.raises(nt.NoeticError) as err:
        await run_graph(nt.sequence("s", [nt.run_code("b", body), nt.run_code("after", lambda i: i)]))
    assert seen == {"reason": "a", "aborted": True}
    assert err.value.code == "cancelled"


async def test_ctx_1_2_3_identity_depth_and_counters() -> None:
    seen: list[tuple[str, int, int, nt.Context | None]] = []

    def record(_: Any, ctx: nt.Context) -> str:
        seen.append((ctx.id, ctx.depth, ctx.step_count, ctx.parent))
        return "x"

    graph = nt.sequence("s", [nt.run_code("a", record), nt.spawn("sp", nt.run_code("b", record))])
    resp = await run_graph(graph)
    (root_id, root_depth, root_steps, root_parent), (child_id, child_depth, _, child_parent) = seen
    assert root_depth == 0 and root_parent is None
    assert child_depth == 1 and child_parent is not None and child_parent.id == root_id
    assert child_id != root_id
    assert resp.execution_id == root_id
    assert root_steps == 2  # the sequence, then `a`


async def test_ctx_8_complete_sets_value_and_becomes_the_output() -> None:
    def body(_: Any, ctx: nt.Context) -> str:
        ctx.complete(42)
        assert ctx.completed and ctx.completion_value == 42
        return "ignored"

    resp = await run_graph(nt.run_code("c", body))
    assert resp.output == 42


async def test_ctx_7_last_step_meta_none_until_a_step_completes() -> None:
    metas: list[Any] = []

    def body(_: Any, ctx: nt.Context) -> str:
        metas.append((ctx.last_step_meta, ctx.last_layer_usage))
        return "x"

    await run_graph(nt.run_code("a", body))
    assert metas == [(None, None)]


async def test_ctx_10_12_abort_reaches_grandchild_blocked_in_recv_within_a_second() -> None:
    q = nt.channel("q", schema=str)
    events: dict[str, Any] = {}

    async def blocked(_: Any, ctx: nt.Context) -> None:
        events["grandchild"] = ctx
        try:
            await ctx.recv(q, timeout=0)
        except nt.NoeticError as exc:
            events["error"] = exc
            events["at"] = anyio.current_time()
            raise

    async def stopper(_: Any, ctx: nt.Context) -> str:
        await anyio.sleep(0.05)
        events["aborted_at"] = anyio.current_time()
        assert ctx.parent is not None
        ctx.parent.abort("stop")
        return "stopped"

    tree = nt.spawn("child", nt.spawn("grandchild", nt.run_code("wait", blocked)))
    graph = nt.in_parallel("p", [tree, nt.run_code("stopper", stopper)], mode="settle")
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph)
    assert err.value.code == "cancelled"
    assert events["error"].code == "cancelled"
    assert events["grandchild"].aborted and events["grandchild"].abort_reason == "stop"
    assert events["grandchild"].depth == 3
    assert events["at"] - events["aborted_at"] < 1.0


async def test_ctx_10_abort_never_travels_up() -> None:
    def self_abort(_: Any, ctx: nt.Context) -> None:
        ctx.abort("path gave up")

    parent_state: dict[str, Any] = {}

    def check_parent(results: list[nt.SettleResult]) -> list[str]:
        return [r.status for r in results]

    def after(value: Any, ctx: nt.Context) -> Any:
        parent_state["aborted"] = ctx.aborted
        return value

    graph = nt.sequence(
        "s",
        [
            nt.in_parallel(
                "p",
                [nt.run_code("quitter", self_abort), nt.run_code("ok", lambda i: "fine")],
                mode="settle",
                merge=check_parent,
            ),
            nt.run_code("after", after),
        ],
    )
    resp = await run_graph(graph)
    assert resp.output == ["rejected", "fulfilled"]
    assert parent_state == {"aborted": False}


async def test_ctx_11_child_of_aborted_parent_is_aborted_at_construction() -> None:
    async with nt.AgentHarness("t", agent_graph=nt.run_code("x", lambda i: i)) as h:
        parent = h.create_context()
        parent.abort()
        child = h.create_context(parent=parent)
        assert child.aborted and child.abort_reason == "parent context aborted"
        parent2 = h.create_context()
        parent2.abort("why")
        assert h.create_context(parent=parent2).abort_reason == "why"


async def test_ctx_15_loop_checks_abort_at_top_and_never_consults_on_error() -> None:
    runs: list[int] = []
    on_error_calls: list[Any] = []

    def body(value: int, ctx: nt.Context) -> int:
        runs.append(value)
        if value == 2:
            ctx.abort("enough")
        return value + 1

    def on_error(err: nt.NoeticError, ctx: nt.Context) -> str:
        on_error_calls.append(err)
        return "retry"

    graph = nt.loop("l", nt.run_code("b", body), until=nt.until.never(), on_error=on_error)
    with pytest.raises(nt.NoeticError) as err:
        await run_graph(graph, 1)
    assert err.value.code == "cancelled" and err.value.reason == "enough"
    assert runs == [1, 2]
    assert on_error_calls == []


async def test_ctx_13_abort_cuts_the_model_stream_and_raises_cancelled() -> None:
    started = anyio.Event()
    closed: list[bool] = []

    class SlowModel:
        model_id = "slow"

        async def stream(self, request: Any, *, cancel: Any) -> Any:
            try:
                started.set()
                await anyio.sleep_forever()
                yield  # pragma: no cover
            finally:
                closed.append(True)

    async def stopper(_: Any, ctx: nt.Context) -> None:
        await started.wait()
        ctx.parent.abort("user pressed stop")  # type: ignore[union-attr]

    graph = nt.in_parallel("p", [nt.call_model("m"), nt.run_code("stop", stopper)], mode="settle")
    with anyio.fail_after(5), pytest.raises(nt.NoeticError) as err:
        await run_graph(graph, "hi", model=SlowModel())
    assert err.value.code == "cancelled"
    assert closed == [True]


async def test_ctx_6_params_and_fs_are_reachable_from_the_context() -> None:
    def body(_: Any, ctx: nt.Context) -> Any:
        return (ctx.harness.config.params["answer"], ctx.fs is ctx.harness.fs)

    assert (await run_graph(nt.run_code("p", body), params={"answer": 42})).output == (42, True)


async def test_ctx_16_checkpoint_is_a_no_op_without_a_store() -> None:
    async def body(_: Any, ctx: nt.Context) -> str:
        await ctx.checkpoint()
        return "ok"

    assert (await run_graph(nt.run_code("c", body))).output == "ok"


async def test_tu_4_5_costs_sum_and_billed_equals_cost_when_fully_billed() -> None:
    model = ScriptedModel([text_reply("a", cost=0.01), text_reply("b", cost=0.02)])
    graph = nt.sequence("s", [nt.call_model("one"), nt.call_model("two")])
    resp = await run_graph(graph, "go", model=model)
    assert resp.cost == pytest.approx(0.03) and resp.billed_cost == resp.cost
    assert resp.cost == 0.03  # exact: spend is summed as decimals


async def test_tu_6_held_cost_is_zero_without_cut_off_calls_and_on_children() -> None:
    children: list[float] = []

    def child_body(_: Any, ctx: nt.Context) -> str:
        children.append(ctx.held_cost)
        return "x"

    model = ScriptedModel([text_reply("a", cost=0.01)])
    graph = nt.sequence("s", [nt.call_model("m"), nt.spawn("sp", nt.run_code("c", child_body))])
    resp = await run_graph(graph, "go", model=model)
    assert resp.held_cost == 0 and children == [0]


async def test_tu_7_spawn_child_spend_and_tokens_roll_up_into_the_parent() -> None:
    model = ScriptedModel(
        [text_reply("child answer", cost=0.05, usage={"input_tokens": 7, "output_tokens": 3})]
    )
    seen: dict[str, Any] = {}

    def after(value: Any, ctx: nt.Context) -> Any:
        seen["cost"], seen["tokens"] = ctx.cost, ctx.tokens
        return value

    graph = nt.sequence("s", [nt.spawn("sp", nt.call_model("m")), nt.run_code("after", after)])
    resp = await run_graph(graph, "go", model=model)
    assert seen["cost"] == pytest.approx(0.05)
    assert (seen["tokens"].input, seen["tokens"].output, seen["tokens"].total) == (7, 3, 10)
    assert resp.output == "child answer"


async def test_tu_2_cache_fields_keep_none_versus_zero() -> None:
    model = ScriptedModel(
        [
            text_reply("a", usage={"input_tokens": 1}),
            text_reply("b", usage={"input_tokens": 1, "cached_tokens": 0, "cache_write_tokens": 0}),
        ]
    )
    metas: list[Any] = []

    def keep(value: Any, ctx: nt.Context) -> Any:
        metas.append((ctx.last_step_meta.usage, ctx.tokens.cached))  # type: ignore[union-attr]
        return value

    graph = nt.sequence(
        "s", [nt.call_model("a"), nt.run_code("k1", keep), nt.call_model("b"), nt.run_code("k2", keep)]
    )
    await run_graph(graph, "go", model=model)
    (first, first_total), (second, second_total) = metas
    assert first.cached_tokens is None and first.cache_write_tokens is None and first_total is None
    assert second.cached_tokens == 0 and second.cache_write_tokens == 0 and second_total == 0


async def test_tu_4_a_round_without_cost_figures_leaves_the_spend_untouched() -> None:
    from noetic.execution_context import to_decimal
    from noetic.usage import RoundUsage

    seen: dict[str, Any] = {}

    def body(_: Any, ctx: nt.Context) -> str:
        before = (ctx._cost, ctx._billed)
        ctx._record_round(RoundUsage(input_tokens=2), to_decimal(None), to_decimal(None))
        seen["untouched"] = (ctx._cost, ctx._billed) == before and ctx._cost is before[0]
        ctx._record_round(RoundUsage(), to_decimal(0.25), to_decimal(None))
        seen["charged"] = (ctx.cost, ctx.billed_cost, ctx.tokens.input)
        return "ok"

    await run_graph(nt.run_code("c", body))
    assert seen == {"untouched": True, "charged": (0.25, 0.0, 2)}
