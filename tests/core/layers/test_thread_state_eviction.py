"""A thread's layer state leaves memory with its session: a harness without `storage=` that
evicts idle sessions keeps layer state only for the threads it still holds, however many threads
come and go; with `storage=` the state lives in the checkpoint store and comes back on the
thread's next turn."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.layers.storage import MemoryLayerStateStore
from noetic.testing import ScriptedModel

pytestmark = pytest.mark.anyio


class Counter(nt.ContextLayer):
    """Counts the model calls of its scope; `seen` records the state each execution starts from."""

    slot = nt.Slot.REMINDER

    def __init__(self, layer_id: str = "counter", scope: str = "thread") -> None:
        self.id = layer_id
        self.scope = scope  # type: ignore[assignment]
        self.seen: list[int] = []

    async def init(self, ctx: nt.LayerContext) -> int:
        state: int = await ctx.storage.get("state") or 0
        self.seen.append(state)
        return state

    async def recall(self, ctx: nt.LayerContext, budget: int) -> str:
        return f"calls: {ctx.state}"

    async def store(self, ctx: nt.LayerContext, response: nt.CallResult) -> int:
        return int(ctx.state) + 1


def _harness(layers: list[Any], **options: Any) -> nt.AgentHarness[Any]:
    return nt.AgentHarness(
        "t", agent_graph=nt.call_model("chat"), model=ScriptedModel.echo(), layers=layers, **options
    )


def _threads(store: MemoryLayerStateStore, layer_id: str) -> set[str]:
    prefix = f"layers/{layer_id}/"
    stored = list(store.keys())
    return {key[len(prefix) :].rsplit("/", 1)[0] for key in stored if key.startswith(prefix)}


async def test_without_storage_the_store_holds_state_only_for_kept_sessions() -> None:
    counter = Counter()
    async with _harness([counter], max_idle_sessions=5) as h:
        assert isinstance(h.layer_store, MemoryLayerStateStore)
        for n in range(300):
            await h.run("hi", thread_id=f"user/{n}")  # ids with a slash: matched exactly, not by prefix
            assert len(_threads(h.layer_store, "counter")) <= 6  # the kept five and the one just run
        assert _threads(h.layer_store, "counter") == {f"user/{n}" for n in range(295, 300)}
        assert len(list(h.layer_store.keys())) == 5


async def test_an_evicted_thread_starts_over_like_its_history() -> None:
    counter = Counter()
    async with _harness([counter], max_idle_sessions=1) as h:
        await h.run("hi", thread_id="a")
        await h.run("hi", thread_id="a")
        await h.run("hi", thread_id="b")  # `a` is evicted: its history and its layer state go
        await h.run("hi", thread_id="c")
        await h.run("hi", thread_id="a")
    assert counter.seen == [0, 1, 0, 0, 0]


async def test_state_not_owned_by_one_thread_stays() -> None:
    shared = Counter("shared", scope="global")
    per_user = Counter("per-user", scope="resource")
    per_thread = Counter("per-thread", scope="resource")  # no resource id: the thread's own
    async with _harness([shared, per_user], max_idle_sessions=0) as h:
        for n in range(20):
            await h.run("hi", thread_id=f"t{n}", resource_id="alice")
        store = h.layer_store
        assert isinstance(store, MemoryLayerStateStore)
        assert _threads(store, "shared") == {"__global__"} and _threads(store, "per-user") == {"alice"}
    assert shared.seen == list(range(20)) and per_user.seen == list(range(20))
    async with _harness([per_thread], max_idle_sessions=0) as h:
        for n in range(20):
            await h.run("hi", thread_id=f"t{n}")
        assert isinstance(h.layer_store, MemoryLayerStateStore)
        assert list(h.layer_store.keys()) == []


async def test_a_layer_store_you_pass_is_left_alone() -> None:
    mine = MemoryLayerStateStore()
    async with _harness([Counter()], max_idle_sessions=0, layer_store=mine) as h:
        for n in range(10):
            await h.run("hi", thread_id=f"t{n}")
    assert _threads(mine, "counter") == {f"t{n}" for n in range(10)}


async def test_with_storage_the_state_comes_back_after_eviction() -> None:
    counter = Counter()
    async with _harness([counter], storage="memory://", max_idle_sessions=1) as h:
        await h.run("hi", thread_id="a")
        for other in ("b", "c", "d"):  # `a` is evicted: its history is written out
            await h.run("hi", thread_id=other)
        await h.run("hi", thread_id="a")
    assert counter.seen == [0, 0, 0, 0, 1]


async def test_the_memory_store_forgets_only_the_dropped_thread() -> None:
    store = MemoryLayerStateStore()
    await store.set("layers/l/a/state", 1)
    await store.set("layers/l/a/notes", 2)
    await store.set("layers/l/ab/state", 3)
    await store.set("layers/l/__global__/state", 4)
    store.belongs_to_thread("layers/l/a/state", "a")
    store.belongs_to_thread("layers/l/a/notes", "a")
    store.belongs_to_thread("layers/l/ab/state", "ab")
    store.belongs_to_thread("layers/l/missing", "a")  # never stored: nothing to forget
    await store.delete("layers/l/a/notes")
    assert store.drop_thread("a") == 1
    assert store.drop_thread("a") == 0
    assert sorted(store.keys()) == ["layers/l/__global__/state", "layers/l/ab/state"]


class Profile(nt.ContextLayer):
    """An eventual layer: its recall is cached per thread until its state changes."""

    id = "profile"
    slot = nt.Slot.ENTITY
    recall_mode = "eventual"

    def __init__(self) -> None:
        self.recalled = 0

    async def recall(self, ctx: nt.LayerContext, budget: int) -> str:
        self.recalled += 1
        return f"thread {ctx.thread_id}"


@pytest.mark.parametrize("storage", [None, "memory://"])
async def test_cached_recalls_leave_memory_with_the_session(storage: str | None) -> None:
    profile = Profile()
    async with _harness([profile], storage=storage, max_idle_sessions=3) as h:
        await h.run("hi", thread_id="kept")
        await h.run("hi", thread_id="kept")
        assert profile.recalled == 1  # cached: the second turn did not recall
        for n in range(100):
            await h.run("hi", thread_id=f"t{n}")
        kept = {session.thread_id for session in h._sessions.values()}  # with storage=, one may be leaving
        assert {scope for scope, _ in h.layer_memory.recalls.outputs} == kept
        assert {"t97", "t98", "t99"} <= kept and len(kept) <= 4
        await h.run("hi", thread_id="kept")  # evicted meanwhile: recalled afresh
    assert profile.recalled == 102
