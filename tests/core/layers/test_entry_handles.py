"""What a layer entry is built from once, or only when read: the storage handle (made on the
first `ctx.storage` read, from the scope the entry was built on), the kept active flag, and a
layer set's hook tables (looked up once per tuple of layers, `LayerMemory.hooks_of`). Each test
would fail with a handle pointing at the wrong scope, a stale active flag or a stale memo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import noetic as nt
import pytest
from noetic.items import Item, item_text
from noetic.layers import CallResult, ContextLayer, LayerContext
from noetic.layers.memory import LayerMemory
from noetic.layers.storage import MemoryLayerStateStore
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


def _texts(items: Sequence[Item]) -> list[str]:
    return [item_text(i) for i in items if getattr(i, "role", None) == "developer"]


class Marks(ContextLayer):
    """Writes its scope key under `seen` from `store`: the first time its storage is read."""

    slot = 100

    def __init__(self, id: str, scope: str):
        self.id = id
        self.scope = scope  # type: ignore[assignment]

    async def store(self, ctx: LayerContext, response: CallResult) -> None:
        await ctx.storage.set("seen", ctx.scope_key)


async def test_a_storage_handle_read_late_is_the_one_of_its_scope() -> None:
    """Layers of four scopes on one frame: the handle each first reads in `store` writes under
    its own scope key; a layer that never reads its storage never gets a handle."""
    layers = [Marks("t", "thread"), Marks("r", "resource"), Marks("g", "global"), Marks("x", "execution")]
    entries: list[Any] = []
    graph = nt.sequence(
        "g",
        [nt.call_model("a"), nt.run_code("k", lambda v, ctx: entries.extend(ctx._layers.entries))],
    )
    quiet = Marks("quiet", "thread")
    quiet.store = None  # type: ignore[assignment,method-assign]
    async with nt.AgentHarness(
        "h", agent_graph=graph, model=ScriptedModel.echo(), layers=[*layers, quiet]
    ) as h:
        response = await h.run("hi", thread_id="th", resource_id="res")
        store = h.layer_store
        assert isinstance(store, MemoryLayerStateStore)
        assert {key: await store.get(key) for key in tuple(store.keys())} == {
            "layers/t/th/seen": "th",
            "layers/r/res/seen": "res",
            "layers/g/__global__/seen": "__global__",
            f"layers/x/{response.execution_id}/seen": response.execution_id,
        }
    by_id = {entry.id: entry for entry in entries}
    assert by_id["quiet"]._storage is None  # never read, never made
    assert by_id["t"]._storage is by_id["t"].storage  # made once, then the same handle


class Keeper(ContextLayer):
    """Thread-scoped state loaded in `init`; keeps every recall's `ctx`; counts in `store`."""

    id = "keeper"
    slot = 100

    def __init__(self) -> None:
        self.kept: list[LayerContext] = []

    async def init(self, ctx: LayerContext) -> dict[str, int]:
        return await ctx.storage.get("state") or {"n": 0}

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        self.kept.append(ctx)
        return f"n={ctx.state['n']}"

    async def store(self, ctx: LayerContext, response: CallResult) -> dict[str, int]:
        return {"n": ctx.state["n"] + 1}


async def test_a_kept_context_reads_its_own_threads_storage_on_a_later_turn() -> None:
    """A `ctx` kept from a turn on thread a and first asked for its storage during a later turn
    on thread b still reads thread a's state (the handle is made from the entry's scope, not
    from whatever runs when it is first read)."""
    keeper = Keeper()
    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("a"), model=ScriptedModel.echo(), layers=[keeper]
    ) as h:
        await h.run("one", thread_id="a")
        await h.run("two", thread_id="a")
        first = keeper.kept[0]
        await h.run("three", thread_id="b")
        assert first.scope_key == "a"
        assert first.storage.scope_key == "a"
        assert await first.storage.get("state") == {"n": 2}
        assert await keeper.kept[2].storage.get("state") == {"n": 1}


class Counted(ContextLayer):
    """Recalls its state; with `starts`, an `init` gives it its first state."""

    def __init__(self, id: str, starts: bool):
        self.id = id
        self.slot = 100
        self.scope = "execution"
        self.inits = 0
        if starts:
            self.init = self._init

    async def _init(self, ctx: LayerContext) -> str:
        self.inits += 1
        return f"{self.id} started"

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"{self.id}: {ctx.state}"


async def test_a_layer_shared_by_two_harnesses_starts_as_its_hooks_say() -> None:
    """One layer object in two harnesses' sets of different shapes: on every turn (the memo's
    later hits included) the layer with `init` starts through it and renders its state, the
    one without starts at once, in both harnesses."""
    with_init, plain = Counted("with-init", True), Counted("plain", False)
    one_model, two_model = ScriptedModel.echo(), ScriptedModel.echo()
    async with (
        nt.AgentHarness(
            "one", agent_graph=nt.call_model("a"), model=one_model, layers=[with_init, plain]
        ) as one,
        nt.AgentHarness("two", agent_graph=nt.call_model("a"), model=two_model, layers=[plain]) as two,
    ):
        for turn in range(3):
            await one.run(f"q{turn}", thread_id=f"t{turn}")
            await two.run(f"q{turn}", thread_id=f"t{turn}")
    assert with_init.inits == 3
    assert [_texts(call.items) for call in one_model.calls] == [
        ["with-init: with-init started", "plain: None"]
    ] * 3
    assert [_texts(call.items) for call in two_model.calls] == [["plain: None"]] * 3


def test_the_hook_memo_of_a_layer_tuple_is_its_own() -> None:
    """`hooks_of` serves a tuple's remembered hooks only to that very tuple: another tuple
    that took over its id gets its own."""
    memory = LayerMemory()
    old, new = Counted("old", True), Counted("new", False)
    stale_tuple = (old,)
    memory.hooks_of(stale_tuple)
    fresh = (new,)
    memory.set_hooks[id(fresh)] = memory.set_hooks.pop(id(stale_tuple))  # as if the id were reused
    hooks = memory.hooks_of(fresh)
    assert [(h.layer, h.without_init) for h in hooks] == [(new, True)]
    assert memory.hooks_of(fresh) is hooks
