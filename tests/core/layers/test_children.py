"""Layers across spawn and parallel boundaries (SP-2, SP-3, SP-5, LY-8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import developer_message, user_message
from noetic.layers import ContextLayer, LayerContext, ReturnResult, SpawnResult
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio

Events = list[tuple[Any, ...]]


class Tally(ContextLayer):
    """State: an int. Children start at 0 with a seed item; on_return adds the child's count."""

    id = "tally"
    slot = 100

    def __init__(self, *, seed: bool = True, rewrite: bool = False):
        self.seed = seed
        self.rewrite = rewrite
        self.returns: list[Any] = []

    async def init(self, ctx: LayerContext) -> int:
        return 0

    async def on_spawn(self, ctx: LayerContext, child: nt.Context) -> SpawnResult:
        items = [developer_message(f"seeded from depth {ctx.depth}")] if self.seed else []
        return SpawnResult(child_state=0, items=items)

    async def on_return(self, ctx: LayerContext, child_state: int, result: Any, child: nt.Context) -> Any:
        self.returns.append((ctx.state, child_state, result))
        if self.rewrite:
            return ReturnResult(parent_state=ctx.state + child_state, result=f"{result}+tallied")
        return ctx.state + child_state


def bump(value: Any, ctx: nt.Context) -> Any:
    """A step that adds 1 to the tally of its own context (through the layer's entry)."""
    entry = ctx._layers.get("tally")  # type: ignore[union-attr]
    assert entry is not None
    entry.set_state(entry.state + 1)
    return value


def tally_of(box: list[int]) -> nt.Step:
    return nt.run_code("read", lambda v, ctx: box.append(ctx._layers.get("tally").state))


async def test_sp_2_on_spawn_items_seed_the_child_log_and_on_return_merges() -> None:
    """Acceptance 22 / SP-2 / SP-3: the child's log holds exactly the on_spawn items; after
    the child succeeds on_return adds its state to the parent's."""
    logs: list[list[str]] = []
    final: list[int] = []
    child = nt.sequence(
        "c",
        [
            nt.run_code("look", lambda v, ctx: logs.append([i.text for i in ctx.item_log.items])),
            nt.run_code("b", bump),
        ],
    )
    layer = Tally()
    graph = nt.sequence("g", [nt.spawn("s", child), nt.spawn("s2", nt.run_code("b", bump)), tally_of(final)])
    async with nt.AgentHarness("h", agent_graph=graph, layers=[layer]) as h:
        await h.run("go")
    assert logs == [["seeded from depth 0"]]
    assert final == [2]
    assert [(p, c) for p, c, _ in layer.returns] == [(0, 1), (1, 1)]


async def test_sp_3_on_return_is_a_pipeline_over_the_result() -> None:
    """SP-3: on_return may rewrite the child's result for the next layer and the caller."""
    async with nt.AgentHarness(
        "h", agent_graph=nt.spawn("s", nt.run_code("b", bump)), layers=[Tally(rewrite=True)]
    ) as h:
        response = await h.run("go")
    assert response.output == "go+tallied"


async def test_sp_3_no_on_return_when_the_child_fails() -> None:
    """SP-3: a failing child merges nothing back."""
    layer = Tally()

    def fail(value: Any, ctx: nt.Context) -> Any:
        bump(value, ctx)
        raise ValueError("child failed")

    async with nt.AgentHarness("h", agent_graph=nt.spawn("s", nt.run_code("f", fail)), layers=[layer]) as h:
        with pytest.raises(nt.NoeticError):
            await h.run("go")
    assert layer.returns == []


async def test_sp_2_spawn_layers_replace_the_inherited_set(events: Events, probe: Callable[..., Any]) -> None:
    """SP-2: spawn(layers=[...]) gives the child only those layers, initialized in the child and
    torn down when it ends; the parent's layers do not reach it (no on_spawn)."""
    seen: list[list[str]] = []
    child = nt.run_code("c", lambda v, ctx: seen.append(sorted(ctx.context)))
    graph = nt.sequence(
        "g",
        [
            nt.spawn("s", child, layers=[probe("own")]),
            nt.run_code("p", lambda v, ctx: seen.append(sorted(ctx.context))),
        ],
    )
    async with nt.AgentHarness("h", agent_graph=graph, layers=[probe("parent")]) as h:
        await h.run("go")
    assert seen == [["own"], ["parent"]]
    assert [e for e in events if e[1] == "on_spawn"] == []
    assert [(e[0], e[1]) for e in events if e[0] == "own"] == [
        ("own", "init"),
        ("own", "on_complete"),
        ("own", "dispose"),
    ]


async def test_sp_2_on_spawn_returning_none_disables_the_layer_in_the_child() -> None:
    """SP-2: None from on_spawn → the layer is absent from the child; a stateful layer without
    on_spawn is absent too; a stateless one is present."""

    class Declines(ContextLayer):
        id = "declines"
        slot = 100

        async def on_spawn(self, ctx: LayerContext, child: Any) -> None:
            return None

    class Stateful(ContextLayer):
        id = "stateful"
        slot = 100

        async def init(self, ctx: LayerContext) -> int:
            return 1

    class Stateless(ContextLayer):
        id = "stateless"
        slot = 100

    seen: list[list[str]] = []
    graph = nt.spawn("s", nt.run_code("c", lambda v, ctx: seen.append(sorted(ctx.context))))
    async with nt.AgentHarness("h", agent_graph=graph, layers=[Declines(), Stateful(), Stateless()]) as h:
        await h.run("go")
    assert seen == [["stateless"]]


async def test_sp_5_parallel_paths_see_the_full_log_without_on_spawn_items() -> None:
    """Acceptance 23: a parallel path sees the parent's log and none of the on_spawn items."""
    logs: list[list[str]] = []
    path = nt.run_code("p", lambda v, ctx: logs.append([i.text for i in ctx.item_log.items]))
    async with nt.AgentHarness("h", agent_graph=nt.in_parallel("f", [path, path]), layers=[Tally()]) as h:
        await h.run([user_message("question")])
    assert logs == [["question"], ["question"]]


async def test_sp_5_three_concurrent_paths_each_add_one() -> None:
    """Acceptance 24: three concurrent paths each add 1 through on_return → the parent has 3;
    merges are serialized, each seeing the previous one's contribution."""
    arrived = [anyio.Event() for _ in range(3)]

    def path(i: int) -> nt.Step:
        async def body(value: Any, ctx: nt.Context) -> Any:
            arrived[i].set()
            for event in arrived:  # all three run at once
                await event.wait()
            return bump(value, ctx)

        return nt.run_code(f"p{i}", body)

    final: list[int] = []
    layer = Tally(seed=False)
    graph = nt.sequence("g", [nt.in_parallel("f", [path(0), path(1), path(2)]), tally_of(final)])
    with anyio.fail_after(5):  # hang guard only
        async with nt.AgentHarness("h", agent_graph=graph, layers=[layer]) as h:
            await h.run("go")
    assert final == [3]
    assert sorted(p for p, _, _ in layer.returns) == [0, 1, 2]


async def test_sp_5_failed_and_lost_paths_merge_nothing_but_are_torn_down(
    events: Events, probe: Callable[..., Any]
) -> None:
    """SP-5: on_return runs only for successful paths; a race loser is aborted by the runtime
    and its layers still see on_complete('aborted')."""
    layer = Tally(seed=False)
    started = anyio.Event()

    async def slow(value: Any, ctx: nt.Context) -> Any:
        started.set()
        await ctx.wait_aborted()  # abort is cooperative (CTX-17)

    async def fast(value: Any, ctx: nt.Context) -> Any:
        await started.wait()
        return bump(value, ctx)

    graph = nt.in_parallel("race", [nt.run_code("slow", slow), nt.run_code("fast", fast)], mode="race")
    with anyio.fail_after(5):
        async with nt.AgentHarness("h", agent_graph=graph, layers=[layer, probe("watch")]) as h:
            await h.run("go")
    assert [(p, c) for p, c, _ in layer.returns] == [(0, 1)]
    outcomes = sorted((e[2], e[3]) for e in events if e[1] == "on_complete")
    assert outcomes == [("aborted", 1), ("success", 0), ("success", 1)]


async def test_spawn_timeout_tears_the_child_layers_down(events: Events, probe: Callable[..., Any]) -> None:
    """A spawn timeout aborts the child through the runtime: its layers complete as aborted."""

    async def hang(value: Any, ctx: nt.Context) -> Any:
        await ctx.wait_aborted()  # abort is cooperative (CTX-17)

    graph = nt.spawn("s", nt.run_code("h", hang), timeout=0.05, layers=[probe("inner")])
    with anyio.fail_after(5):
        async with nt.AgentHarness("h", agent_graph=graph, model=ScriptedModel.echo()) as h:
            with pytest.raises(nt.NoeticError):
                await h.run("go")
    assert [(e[0], e[1], e[2]) for e in events if e[1] == "on_complete"] == [
        ("inner", "on_complete", "aborted")
    ]
