"""Prompt-cache anchoring: epochs, pins, updates, re-anchor reasons, churn (AN-2..AN-9, LU-3)."""

from __future__ import annotations

from typing import Any

import noetic as nt
import pytest
from noetic.items import ExtensionItem, Item, developer_message, item_text
from noetic.layers import ContextLayer, LayerContext, RecallResult
from noetic.testing import ScriptedModel, text_reply
from noetic.usage import LastLayerUsage

pytestmark = pytest.mark.anyio


class Changing(ContextLayer):
    """A layer rendering whatever `text` currently is (None renders nothing)."""

    slot = 100

    def __init__(
        self, id: str = "plan", *, text: str | None = "step 1", placement: str = "auto", **attrs: Any
    ):
        self.id = id
        self.text = text
        self.placement = placement  # type: ignore[assignment]
        for name, value in attrs.items():
            setattr(self, name, value)

    async def recall(self, ctx: LayerContext, budget: float) -> str | None:
        return self.text


class Session:
    """A harness plus the model calls and usage snapshots of each turn."""

    def __init__(self, harness: nt.AgentHarness, model: ScriptedModel):
        self.h = harness
        self.model = model
        self.usages: list[LastLayerUsage] = []

    async def turn(self, text: str = "hi") -> LastLayerUsage:
        response = await self.h.run(text)
        assert response.last_layer_usage is not None
        self.usages.append(response.last_layer_usage)
        return response.last_layer_usage

    def request(self, n: int) -> tuple[Item, ...]:
        return tuple(self.model.calls[n].items)


def session(layers: list[Any], *, cached: list[int | None] | None = None, **kwargs: Any) -> Session:
    """A harness whose model reports `cached[i]` cached tokens on call i (None: not reported)."""
    figures = list(cached or [])

    def reply(request: Any) -> Any:
        n = len(model.calls) - 1
        value = figures[n] if n < len(figures) else None
        return text_reply("ok", usage={"input_tokens": 500, "cached_tokens": value})

    model = ScriptedModel(default=reply)
    graph = kwargs.pop("graph", None) or nt.call_model(
        "a", instructions=kwargs.pop("instructions", "be brief")
    )
    return Session(nt.AgentHarness("h", agent_graph=graph, model=model, layers=layers, **kwargs), model)


def updates(items: tuple[Item, ...]) -> list[str]:
    return [
        item_text(i)
        for i in items
        if getattr(i, "role", None) == "developer" and "<context_updates" in item_text(i)
    ]


def reasons(usages: list[LastLayerUsage]) -> list[Any]:
    return [(u.epoch.age, u.epoch.reanchor_reason) if u.epoch else None for u in usages]


async def test_an_2_lu_2_a_changed_anchor_stays_pinned_and_one_update_follows_the_live_band() -> None:
    """Acceptance 36: an auto layer changes on call 2 → its pinned items are re-sent
    byte-identical before history, one trailing developer message carries `replace`, and the
    entry shows served='pinned', changed=True."""
    plan = Changing()
    live = Changing("clock", text="10:00", placement="live", slot=50)
    s = session([plan, live])
    async with s.h:
        first = await s.turn()
        plan.text, live.text = "step 2", "10:01"
        second = await s.turn("next")
    one, two = s.request(0), s.request(1)
    assert one[0] is two[0]
    assert one[0].model_dump_json() == two[0].model_dump_json()
    assert item_text(one[0]) == "step 1"  # the pin, before history
    assert next(getattr(i, "text", None) for i in two[-2:]) == "10:01"  # live band after history
    assert len(updates(two)) == 1
    assert item_text(two[-1]) == updates(two)[0]
    message = updates(two)[0]
    assert message.startswith('<context_updates epoch="t:default#0">')
    assert '<update layer="plan" action="replace">\nstep 2\n</update>' in message
    entry = {e.layer_id: e for e in second.layers}["plan"]
    assert (entry.placement, entry.served, entry.changed) == ("anchor", "pinned", True)
    assert entry.items == (one[0],)
    assert {e.layer_id: e for e in first.layers}["plan"].served == "fresh"
    clock = {e.layer_id: e for e in second.layers}["clock"]
    assert (clock.placement, clock.served, clock.changed) == ("live", "fresh", False)
    assert second.epoch is not None
    assert second.epoch.delta_tokens > 0
    assert second.epoch.age == 2


async def test_an_2_retract_and_add() -> None:
    """AN-2: a pinned layer that renders nothing is retracted (its pin still sent); a layer
    first seen mid-epoch is added through the update message, served fresh."""
    gone, late = Changing("gone"), Changing("late", text=None, slot=200)
    s = session([gone, late])
    async with s.h:
        await s.turn()
        gone.text, late.text = None, "new facts"
        usage = await s.turn()
    two = s.request(1)
    assert item_text(two[0]) == "step 1"
    message = updates(two)[0]
    assert '<update layer="gone" action="retract">' in message
    assert '<update layer="late" action="add">\nnew facts\n</update>' in message
    entries = {e.layer_id: e for e in usage.layers}
    assert (entries["gone"].served, entries["gone"].changed) == ("pinned", True)
    assert (entries["late"].served, entries["late"].changed, entries["late"].placement) == (
        "fresh",
        True,
        "anchor",
    )


async def test_an_4_lu_3_age_climbs_and_instructions_change_reanchors() -> None:
    """Acceptance 37: call 1 cold-start at age 1; calls 2-3 with cache hits climb to age 3
    with no reason; new instructions re-anchor with 'instructions-changed'."""
    instructions = {"text": "be brief"}
    s = session(
        [Changing()],
        cached=[0, 4000, 4000, 4000],
        graph=nt.call_model("a", instructions=lambda ctx: instructions["text"]),
    )
    async with s.h:
        for _ in range(3):
            await s.turn()
        instructions["text"] = "be thorough"
        await s.turn()
    assert reasons(s.usages) == [(1, "cold-start"), (2, None), (3, None), (1, "instructions-changed")]
    assert s.usages[0].epoch is not None
    assert s.usages[3].epoch is not None
    assert s.usages[3].epoch.id == "t:default#1" != s.usages[0].epoch.id


async def test_an_4_5_a_cache_miss_reanchors_at_the_next_assembly() -> None:
    """AN-4/5: round 0 reporting 0 cached tokens on a mature epoch re-anchors the *next* call
    with 'cache-miss'; the young epoch's first assembly is never judged."""
    s = session([Changing()], cached=[0, 0, 4000, 4000])
    async with s.h:
        for _ in range(4):
            await s.turn()
    assert reasons(s.usages) == [(1, "cold-start"), (2, None), (1, "cache-miss"), (2, None)]


async def test_an_5_cached_tokens_none_turns_cache_miss_judging_off() -> None:
    """AN-5: a provider that reports `cached_tokens` as None is cache-blind: later zero
    readings never re-anchor, and the age keeps climbing."""
    s = session([Changing()], cached=[None, 0, 0, 0, 0])
    async with s.h:
        for _ in range(5):
            await s.turn()
    assert reasons(s.usages) == [(1, "cold-start"), (2, None), (3, None), (4, None), (5, None)]


async def test_an_5_persistent_misses_make_the_lineage_blind() -> None:
    """AN-5: three judged misses in a row stop cache-miss re-anchoring."""
    s = session([Changing()], cached=[0] * 9)
    async with s.h:
        for _ in range(9):
            await s.turn()
    assert [r for _, r in reasons(s.usages)] == [
        "cold-start",
        None,
        "cache-miss",
        None,
        "cache-miss",
        None,
        None,
        None,
        None,
    ]


async def test_an_4_delta_pressure_reanchors_onto_the_fresh_render() -> None:
    """AN-4: updates outgrowing the anchor band re-anchor: the new content is pinned, no
    update message is sent."""
    plan = Changing()
    s = session([plan])
    async with s.h:
        await s.turn()
        plan.text = "a much longer plan " * 100
        usage = await s.turn()
    two = s.request(1)
    assert updates(two) == []
    assert item_text(two[0]) == plan.text
    assert reasons([usage]) == [(1, "delta-pressure")]
    assert usage.layers[0].served == "fresh"


async def test_an_4_delta_overflow_when_updates_do_not_fit() -> None:
    """AN-4: updates that cannot fit the window re-anchor with 'delta-overflow'."""
    plan = Changing()
    s = session(
        [plan],
        context_cache={"min_pressure_tokens": 100_000, "delta_budget_fraction": 1000.0},
        projection={"token_budget": 300, "response_reserve": 0},
    )
    async with s.h:
        await s.turn()
        plan.text = "x" * 1200
        usage = await s.turn()
    assert reasons([usage]) == [(1, "delta-overflow")]


async def test_an_4_delta_overflow_when_a_change_cannot_be_put_into_words() -> None:
    """AN-4: a pinned layer whose new output has no text cannot be described → re-anchor."""

    class Data(ContextLayer):
        id = "data"
        slot = 100
        value = 1

        async def recall(self, ctx: LayerContext, budget: float) -> RecallResult:
            return RecallResult(items=[ExtensionItem(type="app:data", data={"v": self.value})], token_count=5)

    layer = Data()
    s = session([layer])
    async with s.h:
        await s.turn()
        layer.value = 2
        usage = await s.turn()
    assert reasons([usage]) == [(1, "delta-overflow")]


async def test_an_4_max_age() -> None:
    """AN-4: an epoch that served `max_epoch_assemblies` assemblies re-anchors with 'max-age'."""
    s = session([Changing()], context_cache={"max_epoch_assemblies": 2})
    async with s.h:
        for _ in range(3):
            await s.turn()
    assert reasons(s.usages) == [(1, "cold-start"), (2, None), (1, "max-age")]


async def test_an_6_auto_layers_move_by_churn_only_at_epoch_boundaries() -> None:
    """AN-6: an auto layer that changes every call stays anchored within the epoch, is demoted
    to live at the next epoch boundary, and is promoted back once it calms down; an explicit
    anchor with the same churn never moves."""
    volatile = Changing("volatile")
    fixed = Changing("fixed", placement="anchor", slot=200)
    instructions = {"text": "v1"}
    s = session(
        [volatile, fixed],
        cached=[None],
        context_cache={"min_pressure_tokens": 100_000, "max_epoch_assemblies": 1000},
        graph=nt.call_model("a", instructions=lambda ctx: instructions["text"]),
    )

    def placements(usage: LastLayerUsage) -> dict[str, str]:
        return {e.layer_id: e.placement for e in usage.layers}

    async with s.h:
        for n in range(4):
            volatile.text = fixed.text = f"state {n}"
            usage = await s.turn()
            assert placements(usage) == {"volatile": "anchor", "fixed": "anchor"}
        instructions["text"] = "v2"  # epoch boundary
        volatile.text = fixed.text = "state 4"
        usage = await s.turn()
        assert placements(usage) == {"volatile": "live", "fixed": "anchor"}
        assert {e.layer_id: e.churn_rate for e in usage.layers}["volatile"] == 0.75  # 3 of 4 watched
        for _ in range(7):  # calm: the live render stops changing, churn falls
            await s.turn()
        assert placements(s.usages[-1])["volatile"] == "live"
        instructions["text"] = "v3"
        usage = await s.turn()
        assert placements(usage) == {"volatile": "anchor", "fixed": "anchor"}


async def test_an_7_a_recall_that_returns_state_renders_live() -> None:
    """Acceptance 39: a layer declared anchor whose recall commits state lands live."""

    class Draining(ContextLayer):
        id = "drain"
        slot = 100
        placement = "anchor"

        async def recall(self, ctx: LayerContext, budget: float) -> RecallResult:
            return RecallResult(items=[developer_message("queued note")], token_count=3, state=[])

    s = session([Draining()])
    async with s.h:
        usage = await s.turn()
    assert usage.layers[0].placement == "live"
    assert item_text(s.request(0)[-1]) == "queued note"


async def test_an_8_render_delta_describes_a_stale_pin_and_falls_back_on_errors() -> None:
    """AN-8: render_delta writes the update body; when it raises, the full content is used."""

    class Describing(Changing):
        broken = False

        async def render_delta(
            self, ctx: LayerContext, previous: tuple[Item, ...], current: tuple[Item, ...], budget: float
        ) -> str:
            if self.broken:
                raise RuntimeError("cannot describe")
            return f"changed from {item_text(previous[0])!r} to {item_text(current[0])!r}"

    layer = Describing()
    s = session([layer])
    async with s.h:
        await s.turn()
        layer.text = "step 2"
        await s.turn()
        layer.text, layer.broken = "step 3", True
        await s.turn()
    assert "changed from 'step 1' to 'step 2'" in updates(s.request(1))[0]
    assert '<update layer="plan" action="replace">\nstep 3\n</update>' in updates(s.request(2))[0]


async def test_an_9_disabled_anchoring_renders_every_layer_before_history() -> None:
    """Acceptance 38: enabled=False → epoch None, all layers (live ones too) before history,
    no cache_control on the request."""
    s = session([Changing(), Changing("clock", placement="live", slot=50)], context_cache={"enabled": False})
    async with s.h:
        usage = await s.turn()
    assert usage.epoch is None
    items = s.request(0)
    assert [getattr(i, "text", None) for i in items] == ["step 1", "step 1", "hi"]
    assert s.model.calls[0].cache_control is False
    assert all(e.placement == "anchor" and e.served == "fresh" for e in usage.layers)


async def test_an_9_requests_ask_for_the_cache_while_enabled() -> None:
    """AN-9: with anchoring on, requests carry cache_control."""
    s = session([Changing()])
    async with s.h:
        await s.turn()
    assert s.model.calls[0].cache_control is True


async def test_an_3_children_never_share_the_parent_pins() -> None:
    """AN-3: a spawn child assembles on its own lineage (`x:{execution id}`), cold."""
    child_usage: list[LastLayerUsage] = []

    def capture(value: Any, ctx: nt.Context) -> Any:
        assert ctx.last_layer_usage is not None
        child_usage.append(ctx.last_layer_usage)
        return value

    child = nt.sequence("c", [nt.call_model("inner"), nt.run_code("capture", capture)])

    class Inherit(Changing):
        async def on_spawn(self, ctx: LayerContext, child: Any) -> Any:
            return nt.SpawnResult(child_state=None)

    plan = Inherit()
    graph = nt.sequence("g", [nt.call_model("outer"), nt.spawn("s", child)])
    s = session([plan], graph=graph)
    async with s.h:
        parent_usage = await s.turn()
    epoch = child_usage[0].epoch
    assert epoch is not None
    assert epoch.id.startswith("x:")
    assert epoch.reanchor_reason == "cold-start"
    assert parent_usage.epoch is not None
    assert parent_usage.epoch.id == "t:default#0"
    assert [e.served for e in child_usage[0].layers] == ["fresh"]  # its own pin, not the parent's
