"""LY-16: layer state backed by the checkpoint store of `storage=`, or a store the user passes."""

from __future__ import annotations

import logging
from typing import Any

import noetic as nt
import pytest
from noetic.durable.memory import MemoryCheckpointStore
from noetic.layers import ContextLayer, LayerContext
from noetic.layers.checkpoint_state import LAYER_STATE_PREFIX, CheckpointLayerStateStore
from noetic.layers.storage import MemoryLayerStateStore

pytestmark = pytest.mark.anyio


class Counter(ContextLayer):
    """Counts the turns of a thread in its durable state."""

    id = "counter"
    slot = 100

    def __init__(self, seen: list[Any], **attributes: Any):
        self.seen = seen
        for name, value in attributes.items():
            setattr(self, name, value)

    async def init(self, ctx: LayerContext) -> Any:
        saved = await ctx.storage.get("state")
        return saved if saved is not None else {"turns": 0}

    async def on_complete(self, ctx: LayerContext, outcome: str) -> Any:
        self.seen.append(ctx.state)
        return {"turns": ctx.state["turns"] + 1}


def harness(layer: ContextLayer, **options: Any) -> nt.AgentHarness:
    return nt.AgentHarness("h", agent_graph=nt.run_code("noop", lambda v, ctx: v), layers=[layer], **options)


async def test_storage_backs_layer_state_with_the_checkpoint_store() -> None:
    """Two harnesses sharing one checkpoint store share thread state; the rows are JSON text
    under `layer-state:`."""
    store = MemoryCheckpointStore()
    seen: list[Any] = []
    for _ in range(2):
        async with harness(Counter(seen), storage=store) as h:
            await h.run("go", thread_id="t1")
    assert seen == [{"turns": 0}, {"turns": 1}]
    assert await store.get(LAYER_STATE_PREFIX + "layers/counter/t1/state") == '{"turns":2}'


async def test_without_storage_state_stays_in_memory() -> None:
    """No `storage=`: the in-memory store, so a second harness starts over."""
    seen: list[Any] = []
    for _ in range(2):
        h = harness(Counter(seen))
        assert isinstance(h.layer_store, MemoryLayerStateStore)
        async with h:
            await h.run("go", thread_id="t1")
    assert seen == [{"turns": 0}, {"turns": 0}]


async def test_a_user_layer_store_wins_over_storage() -> None:
    """`layer_store=` is used even with `storage=`; a non-store is a config error."""
    mine = MemoryLayerStateStore()
    async with harness(Counter([]), storage=MemoryCheckpointStore(), layer_store=mine) as h:
        await h.run("go", thread_id="t1")
    assert await mine.get("layers/counter/t1/state") == {"turns": 1}
    with pytest.raises(nt.NoeticConfigError) as info:
        harness(Counter([]), layer_store={"not": "a store"})
    assert info.value.code == "INVALID_LAYER"


@pytest.mark.parametrize("row", ["{not json", "[" * 100_000 + "]" * 100_000])
async def test_a_damaged_row_fails_init_with_checkpoint_corrupt(row: str) -> None:
    """A row that is not JSON, or nested absurdly deep, fails the layer's init loudly with
    `CHECKPOINT_CORRUPT` naming the key — never a RecursionError or a hang."""
    store = MemoryCheckpointStore()
    key = LAYER_STATE_PREFIX + "layers/counter/t1/state"
    await store.set(key, row)
    async with harness(Counter([]), storage=store) as h:
        with pytest.raises(nt.NoeticError) as info:
            await h.run("go", thread_id="t1")
    assert info.value.code == "layer_init_failed"
    cause = info.value.__cause__
    assert isinstance(cause, nt.NoeticError) and cause.code == "CHECKPOINT_CORRUPT"
    assert key in str(cause)


async def test_state_json_cannot_carry_is_logged_not_stored(caplog: pytest.LogCaptureFixture) -> None:
    """A state that is not JSON data is refused where the hook sets it (that hook fails,
    LY-12); the turn still succeeds and nothing is stored."""

    class Unstorable(Counter):
        async def on_complete(self, ctx: LayerContext, outcome: str) -> Any:
            return {"when": object()}

    store = MemoryCheckpointStore()
    async with harness(Unstorable([]), storage=store) as h:
        with caplog.at_level(logging.WARNING, logger="noetic.layers"):
            await h.run("go", thread_id="t1")
    assert any(
        "on_complete failed" in r.getMessage() and "cannot be checkpointed" in r.getMessage()
        for r in caplog.records
    )
    assert await store.list_prefix(LAYER_STATE_PREFIX) == []


async def test_store_round_trips_and_deletes() -> None:
    """get/set/delete over a checkpoint store given directly."""
    layer_store = CheckpointLayerStateStore(MemoryCheckpointStore())
    assert await layer_store.get("k") is None
    await layer_store.set("k", {"a": [1, 2]})
    assert await layer_store.get("k") == {"a": [1, 2]}
    await layer_store.delete("k")
    await layer_store.delete("k")
    assert await layer_store.get("k") is None
