"""`on_parent_update` (LY-9): a running spawn child hears about its parent's `store`; parallel
paths and ended children do not; a failing hook leaves the child unchanged."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import noetic as nt
import pytest
from noetic.items import developer_message, item_text
from noetic.layers import CallResult, ContextLayer, LayerContext, ParentUpdateResult, SpawnResult
from noetic.steps.base import execute
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Shared(ContextLayer):
    """State: a turn counter `store` bumps; children follow the parent's count."""

    id = "shared"
    slot = 100
    scope = "execution"

    def __init__(self, *, fail: bool = False):
        self.fail = fail
        self.updates: list[tuple[Any, Any, int]] = []
        self.heard = anyio.Event()

    async def init(self, ctx: LayerContext) -> int:
        return 0

    async def store(self, ctx: LayerContext, response: CallResult) -> int:
        return int(ctx.state) + 1

    async def on_spawn(self, ctx: LayerContext, child: nt.Context) -> SpawnResult:
        return SpawnResult(child_state=-1)

    async def on_parent_update(self, ctx: LayerContext, parent_state: Any, parent: nt.Context) -> Any:
        self.updates.append((parent_state, ctx.state, ctx.depth))
        self.heard.set()
        if self.fail:
            raise RuntimeError("cannot follow")
        return ParentUpdateResult(
            child_state=parent_state, items=[developer_message(f"parent is at {parent_state}")]
        )


def concurrently(layer: Shared, seen: dict[str, Any]) -> nt.Step:
    """A code step running a spawn, a parallel path and a model step side by side."""

    child_running, path_running = anyio.Event(), anyio.Event()

    async def child(value: Any, ctx: nt.Context) -> Any:
        child_running.set()
        with anyio.fail_after(5):
            await layer.heard.wait()
        entry = ctx._layers.get("shared")  # type: ignore[union-attr]
        seen["child_state"] = entry.state if entry is not None else None
        seen["child_log"] = [item_text(i) for i in ctx.item_log.items]
        return value

    async def path(value: Any, ctx: nt.Context) -> Any:
        path_running.set()
        with anyio.fail_after(5):
            await layer.heard.wait()
        return value

    async def body(value: Any, ctx: nt.Context) -> Any:
        async with anyio.create_task_group() as tg:
            tg.start_soon(execute, nt.spawn("child", nt.run_code("wait", child)), None, ctx)
            tg.start_soon(execute, nt.in_parallel("paths", [nt.run_code("p", path)]), None, ctx)
            with anyio.fail_after(5):
                await child_running.wait()
                await path_running.wait()
            await execute(nt.call_model("m"), "hello", ctx)
        return value

    return nt.run_code("main", body)


async def test_ly_9_a_running_spawn_child_follows_the_parent_store() -> None:
    """The parent's store bumps its count to 1: the spawn child's hook sees (1, -1), adopts 1
    and gets the injected message; the parallel path never hears of it."""
    layer = Shared()
    seen: dict[str, Any] = {}
    h = nt.AgentHarness(
        "t", agent_graph=concurrently(layer, seen), model=ScriptedModel.echo(), layers=[layer]
    )
    async with h:
        await h.run("go")
    assert layer.updates == [(1, -1, 1)]
    assert seen["child_state"] == 1
    assert seen["child_log"] == ["parent is at 1"]


async def test_ly_9_a_failing_hook_leaves_the_child_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    """The hook raises: logged, the child keeps its state and log, the turn succeeds."""
    layer = Shared(fail=True)
    seen: dict[str, Any] = {}
    h = nt.AgentHarness(
        "t", agent_graph=concurrently(layer, seen), model=ScriptedModel.echo(), layers=[layer]
    )
    with caplog.at_level(logging.WARNING, logger="noetic.layers"):
        async with h:
            await h.run("go")
    assert seen == {"child_state": -1, "child_log": []}
    assert any("on_parent_update failed" in r.getMessage() for r in caplog.records)


async def test_ly_9_an_ended_child_hears_nothing() -> None:
    """A spawn that already returned is not told about later stores."""
    layer = Shared()
    graph = nt.sequence("s", [nt.spawn("child", nt.run_code("quick", lambda v, ctx: v)), nt.call_model("m")])
    h = nt.AgentHarness("t", agent_graph=graph, model=ScriptedModel.echo(), layers=[layer])
    async with h:
        await h.run("go")
    assert layer.updates == []
