"""Work the layered path skips while nothing changed must come back the moment something does.

Each test runs turns through one harness and changes one thing between them — a layer's
churn, its `provides`, its hooks' ordering, the state a `store` snapshot is taken of — and
would fail if a shortcut of the per-round path (the cold-start banding, the hook lists of a
frame, the lazily built epoch figures, the store snapshot of an immutable state) served a
stale or shared value.
"""

from __future__ import annotations

import pickle
from typing import Any

import noetic as nt
import pytest
from noetic.items import Item, item_text
from noetic.layers import CallResult, ContextLayer, LayerContext, LayerResult, layer_function
from noetic.testing import ScriptedModel, text_reply
from noetic.tokens import estimate_item_tokens
from noetic.usage import EpochUsage

pytestmark = pytest.mark.anyio


def _harness(layers: list[Any]) -> tuple[nt.AgentHarness, ScriptedModel]:
    model = ScriptedModel(default=lambda request: text_reply("ok"))
    graph = nt.call_model("a", instructions="be brief")
    return nt.AgentHarness("h", agent_graph=graph, model=model, layers=layers), model


def _texts(items: tuple[Item, ...] | list[Item] | Any) -> list[str]:
    return [item_text(i) for i in items if getattr(i, "role", None) == "developer"]


class Note(ContextLayer):
    """An anchored paragraph whose `text` a test changes between turns."""

    id = "note"
    slot = 10
    placement = "anchor"

    def __init__(self, text: str):
        self.text = text

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return self.text


async def test_a_new_thread_serves_its_pins_with_the_churn_seen_so_far() -> None:
    """A new thread's first assembly pins every anchored layer and serves it fresh; the serve
    record it reports carries the layer's churn as it stands (changes seen on earlier
    threads), not the figures of an unchurned layer."""
    note = Note("v1")
    h, _ = _harness([note])
    async with h:
        first = await h.run("hi", thread_id="t1")
        note.text = "v2"  # changed while pinned on t1: one change in two watched assemblies
        await h.run("hi", thread_id="t1")
        fresh = await h.run("hi", thread_id="t2")
    before = first.last_layer_usage
    after = fresh.last_layer_usage
    assert before is not None and after is not None
    (entry_before,) = before.layers
    (entry_after,) = after.layers
    assert (entry_before.served, entry_before.changed, entry_before.churn_rate) == ("fresh", False, 0.0)
    assert (entry_after.served, entry_after.placement, entry_after.changed) == ("fresh", "anchor", False)
    assert entry_after.churn_rate == pytest.approx(1 / 3)  # the t2 render itself counted unchanged
    assert entry_after.rebill_tokens > 0
    assert [i for i in entry_after.items] and _texts(entry_after.items) == ["v2"]


async def test_the_epoch_figures_read_back_as_the_snapshot_epoch() -> None:
    """The epoch behind an assembly is kept as plain figures and read back as `EpochUsage`:
    its anchor band counted with the per-item estimates the window check uses."""
    h, _ = _harness([Note("a paragraph")])
    async with h:
        first = await h.run("hi", thread_id="t")
        second = await h.run("hi", thread_id="t")
    usage = first.last_layer_usage
    assert usage is not None and isinstance(usage.epoch, EpochUsage)
    assert (usage.epoch.id, usage.epoch.age, usage.epoch.reanchor_reason) == ("t:t#0", 1, "cold-start")
    assert (
        usage.epoch.anchor_tokens == sum(estimate_item_tokens(i) for e in usage.layers for i in e.items) > 0
    )
    later = second.last_layer_usage
    assert later is not None and later.epoch is not None
    assert (later.epoch.age, later.epoch.reanchor_reason) == (2, None)


class Toolbox(ContextLayer):
    """A layer whose `provides` a test extends between turns."""

    id = "box"
    slot = 10

    def __init__(self) -> None:
        self.provides: dict[str, Any] = {}

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "box"


async def _noop(args: Any, ctx: LayerContext) -> LayerResult:
    return LayerResult(result="done")


async def test_a_function_provided_from_the_next_turn_on_is_offered_then() -> None:
    """The model tools of a frame are worked out per frame: a layer that gains a function
    between turns offers its tool on the next turn, and not before."""
    box = Toolbox()
    h, model = _harness([box])
    async with h:
        await h.run("hi", thread_id="t")
        box.provides = {"open": layer_function(_noop, input={"type": "object"})}
        await h.run("hi", thread_id="t")
        box.provides = {}
        await h.run("hi", thread_id="t")
    assert [[t.name for t in call.tools] for call in model.calls] == [[], ["box/open"], []]


class Hooked(ContextLayer):
    """Records which of its hooks ran; `project_history` only on the object given it."""

    placement = "live"

    def __init__(self, id: str, slot: float, seen: list[str]):
        self.id = id
        self.slot = slot
        self.seen = seen

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        self.seen.append(f"recall {self.id}")
        return self.id


async def test_a_frame_lists_each_hook_of_its_own_layers_only() -> None:
    """A frame works out every hook its layers define at once: a hook only one layer object
    defines runs for that layer alone, and a layer list without it runs none."""
    seen: list[str] = []

    async def project_history(ctx: LayerContext, items: list[Item]) -> list[Item]:
        seen.append("project")
        return items

    plain, projecting = Hooked("plain", 10, seen), Hooked("proj", 20, seen)
    projecting.project_history = project_history  # type: ignore[method-assign]
    h1, _ = _harness([plain, projecting])
    h2, _ = _harness([Hooked("plain", 10, seen)])
    async with h1, h2:
        await h1.run("hi", thread_id="t")
        await h2.run("hi", thread_id="t")
    assert seen == ["recall plain", "recall proj", "project", "recall plain"]


class Tally(ContextLayer):
    """State starting as `initial`; its `store` mutates the snapshot it is given in place."""

    id = "tally"
    slot = 10
    placement = "live"

    def __init__(self, initial: Any):
        self.initial = initial
        self.shared: list[bool] = []  # per store: whether the snapshot is the state itself

    async def init(self, ctx: LayerContext) -> Any:
        return self.initial

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return f"tally {ctx.state!r}"

    async def store(self, ctx: LayerContext, response: CallResult) -> None:
        snapshot = ctx.state
        self.shared.append(snapshot is self.initial)
        if isinstance(snapshot, dict):
            snapshot["mutated"] = True  # a snapshot: the layer's own state must not see this


@pytest.mark.parametrize("initial", ["text", 3, None, {"n": 1}])
async def test_store_gets_a_snapshot_the_state_never_shares(initial: Any) -> None:
    """`store` reads a snapshot of the state (LY-7): an immutable state is handed over as it
    is, a mutable one as a copy whose changes never reach the layer's state."""
    tally = Tally(initial)
    h, model = _harness([tally])
    async with h:
        await h.run("hi", thread_id="t")
        await h.run("hi", thread_id="t2")
    assert [_texts(call.items) for call in model.calls] == [[f"tally {initial!r}"]] * 2
    mutable = isinstance(initial, dict)
    assert tally.shared == [not mutable, not mutable]
    assert initial == {"n": 1} or not mutable


def test_epoch_figures_pickle_as_plain_values() -> None:
    """The figures an idle session keeps pickle and read back equal."""
    from noetic.layers.anchoring import EpochFigures

    figures = EpochFigures("t:x#0", 1, 12, 3, 0, "cold-start")
    again = pickle.loads(pickle.dumps(figures))
    assert again == figures
    assert again.usage() == EpochUsage(
        id="t:x#0", age=1, anchor_tokens=12, live_tokens=3, delta_tokens=0, reanchor_reason="cold-start"
    )


async def test_the_memory_store_hands_out_copies_of_mutable_values_only() -> None:
    """The in-memory store copies a value out: a dict read back and changed leaves the stored
    one alone; an immutable value needs no copy and comes back as stored."""
    from noetic.layers.storage import MemoryLayerStateStore

    store = MemoryLayerStateStore()
    await store.set("d", {"notes": ["a"]})
    await store.set("s", "text")
    read = await store.get("d")
    read["notes"].append("b")
    assert await store.get("d") == {"notes": ["a"]}
    assert await store.get("s") == "text"
    assert await store.get("missing") is None


async def test_a_new_thread_bands_a_layer_moved_live_after_the_history() -> None:
    """A new epoch reuses the last new epoch's banding only for the same placements: a layer
    moved from `anchor` to `live` between threads renders after the history on the next
    thread, though its recall returned the very same text (the same output)."""
    note = Note("same text")
    h, model = _harness([note])
    async with h:
        await h.run("hi", thread_id="t1")
        note.placement = "live"
        await h.run("hi", thread_id="t2")
    roles = [[getattr(i, "role", None) for i in call.items] for call in model.calls]
    assert roles == [["developer", "user"], ["user", "developer"]]
    assert [_texts(call.items) for call in model.calls] == [["same text"], ["same text"]]


async def test_a_new_thread_bands_an_auto_layer_by_its_churn_then() -> None:
    """An `auto` layer is banded by its churn when an epoch opens: once it churns enough to be
    demoted, the next thread renders it live, not as the last new epoch's plan had it."""
    note = Note("same text")
    note.placement = "auto"
    h, model = _harness([note])
    async with h:
        await h.run("hi", thread_id="t1")
        churn = h.layer_memory.anchors.churn_of("note")
        churn.observed, churn.changed = 10.0, 10.0  # churning on every assembly
        await h.run("hi", thread_id="t2")
    roles = [[getattr(i, "role", None) for i in call.items] for call in model.calls]
    assert roles == [["developer", "user"], ["user", "developer"]]


async def test_a_new_thread_reports_the_churn_as_it_stands_though_its_pins_are_planned() -> None:
    """Two threads with the very same outputs share one banding plan, yet each reports its
    layer's churn as it stands when it assembles (here changed in between), not the figures
    the plan was made with."""
    h, _ = _harness([Note("same text")])
    async with h:
        first = await h.run("hi", thread_id="t1")
        churn = h.layer_memory.anchors.churn_of("note")
        churn.changed, churn.rebill_tokens = 1.0, 7.0
        second = await h.run("hi", thread_id="t2")
        third = await h.run("hi", thread_id="t3")
    rows = []
    for response in (first, second, third):
        usage = response.last_layer_usage
        assert usage is not None
        (entry,) = usage.layers
        rows.append((entry.served, entry.changed, entry.churn_rate, entry.rebill_tokens))
    assert rows == [("fresh", False, 0.0, 0), ("fresh", False, 0.5, 7), ("fresh", False, 1 / 3, 7)]


async def test_new_epochs_planned_alike_keep_pins_of_their_own() -> None:
    """Epochs that pin by one plan each hold their own pins: a change published on one
    thread (a replace update against its pin) leaves the other thread's epoch pinned to
    the first text, which it then updates itself."""
    note = Note("v1")
    h, model = _harness([note])
    async with h:
        await h.run("hi", thread_id="t1")
        await h.run("hi", thread_id="t2")
        epochs = h.layer_memory.anchors.epochs
        assert epochs["t:t1"].pins is not epochs["t:t2"].pins
        note.text = "v2"
        await h.run("hi", thread_id="t1")
        assert epochs["t:t2"].pins["note"].text == "v1"
        await h.run("hi", thread_id="t2")
    updates = [[t for t in _texts(call.items) if "<context_updates" in t] for call in model.calls]
    assert [len(u) for u in updates] == [0, 0, 1, 1]
    assert all("v2" in u[0] for u in updates[2:])


async def test_a_planned_new_epoch_counts_the_anchor_band_it_sends() -> None:
    """A new epoch banded by the last one's plan reports the anchor tokens of what it sends:
    the same count while the text is the same, the new text's once it changes."""
    note = Note("short")
    h, _ = _harness([note])
    async with h:
        responses = [await h.run("hi", thread_id="t1"), await h.run("hi", thread_id="t2")]
        note.text = "a much longer paragraph than the first one " * 4
        responses.append(await h.run("hi", thread_id="t3"))
    counts = []
    for response in responses:
        usage = response.last_layer_usage
        assert usage is not None and usage.epoch is not None
        assert usage.epoch.anchor_tokens == sum(
            estimate_item_tokens(i) for e in usage.layers for i in e.items
        )
        counts.append(usage.epoch.anchor_tokens)
    assert counts[0] == counts[1] < counts[2]
