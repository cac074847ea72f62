"""The scratchpad layer (SC-1..SC-6) and its registration by entry point."""

from __future__ import annotations

import json
from typing import Any

import noetic as nt
import pytest
from noetic.items import FunctionCallItem, FunctionCallOutputItem, item_text
from noetic.layers import LayerContext
from noetic.plugins import make_plugin_manager
from noetic.testing import ScriptedModel, text_reply, tool_call_reply
from noetic_layers_scratchpad.layer import Scratchpad, deep_merge, scratchpad
from pydantic import BaseModel

pytestmark = pytest.mark.anyio


def run_code_on_pad(body: Any, **config: Any) -> tuple[nt.AgentHarness, list[Any]]:
    seen: list[Any] = []

    async def step(value: Any, ctx: nt.Context) -> Any:
        await body(ctx.context["scratchpad"], seen)
        return value

    return nt.AgentHarness("h", agent_graph=nt.run_code("pad", step), layers=[scratchpad(**config)]), seen


async def test_sc_1_shape() -> None:
    """SC-1: id scratchpad, slot 100, thread scope by default, budget {200, 1500}, the four
    hooks, snapshot + update provided."""
    layer = scratchpad()
    assert (layer.id, layer.slot, layer.scope, layer.budget) == (
        "scratchpad",
        100,
        "thread",
        {"min": 200, "max": 1500},
    )
    assert {"init", "recall", "store", "on_spawn"} <= {n for n in dir(layer) if not n.startswith("_")}
    assert set(layer.provides) == {"snapshot", "update"}
    assert scratchpad(scope="resource").scope == "resource"
    with pytest.raises(nt.NoeticConfigError):
        scratchpad(scope="global")
    with pytest.raises(nt.NoeticConfigError):
        scratchpad(schema={"type": "object"}, template="notes")


async def test_sc_4_deep_merge_strips_prototype_keys() -> None:
    """Acceptance 34: update {a: {b: 1}} then {a: {c: 2}, __proto__: {x: 1}} → {a: {b: 1, c: 2}}."""

    async def body(pad: Any, seen: list[Any]) -> None:
        await pad.update({"a": {"b": 1}})
        await pad.update({"a": {"c": 2}, "__proto__": {"x": 1}})
        seen.append(pad.snapshot)

    h, seen = run_code_on_pad(body, schema={"type": "object"})
    async with h:
        await h.run("go")
    assert seen == [{"a": {"b": 1, "c": 2}}]


def test_sc_4_merge_rules() -> None:
    """Dicts recurse; lists and scalars replace; unsafe keys go at every depth, inside lists too."""
    merged = deep_merge(
        {"keep": 1, "list": [1, 2], "nested": {"x": 1, "deep": {"y": 1}}},
        {
            "list": [3],
            "nested": {"deep": {"z": 2, "constructor": {}}, "__proto__": 1},
            "rows": [{"__proto__": {"p": 1}, "ok": True}],
            "constructor": "x",
        },
    )
    assert merged == {
        "keep": 1,
        "list": [3],
        "nested": {"x": 1, "deep": {"y": 1, "z": 2}},
        "rows": [{"ok": True}],
    }


async def test_sc_4_freeform_text_is_kept_as_previous() -> None:
    """SC-4: an object update on a non-empty freeform string keeps it under `_previous`."""

    async def body(pad: Any, seen: list[Any]) -> None:
        seen.append(pad.snapshot)
        await pad.update({"goal": "ship"})
        seen.append(pad.snapshot)

    h, seen = run_code_on_pad(body, template="- buy milk")
    async with h:
        await h.run("go")
    assert seen == ["- buy milk", {"goal": "ship", "_previous": "- buy milk"}]


class Plan(BaseModel):
    a: int
    notes: list[str] = []


@pytest.mark.parametrize("schema", [Plan, {"type": "object", "properties": {"a": {"type": "integer"}}}])
async def test_sc_4_schema_violation_raises_and_changes_nothing(schema: Any) -> None:
    """Acceptance 35: with a schema requiring `a: int`, update({"a": "x"}) raises and the state
    is unchanged; a partial update that keeps the merged state valid is fine."""

    async def body(pad: Any, seen: list[Any]) -> None:
        await pad.update({"a": 1})
        with pytest.raises(nt.NoeticError) as info:
            await pad.update({"a": "x"})
        seen.append(info.value.code)
        seen.append(pad.snapshot)
        await pad.update({"notes": ["n"]})
        seen.append(pad.snapshot)

    h, seen = run_code_on_pad(body, schema=schema)
    async with h:
        await h.run("go")
    assert seen == ["INVALID_LAYER_STATE", {"a": 1}, {"a": 1, "notes": ["n"]}]


async def test_sc_2_3_state_persists_and_renders_as_one_developer_message() -> None:
    """SC-2/3: nothing renders while empty; after an update the next turn's init loads it and
    recall renders one `<scratchpad>` developer message."""
    model = ScriptedModel(
        [tool_call_reply("scratchpad/update", {"goal": "ship"}), text_reply("noted"), text_reply("again")]
    )
    async with nt.AgentHarness(
        "h",
        agent_graph=nt.call_model("a"),
        model=model,
        layers=[scratchpad()],
        context_cache={"enabled": False},
    ) as h:
        first = await h.run("remember the goal")
        assert await h.layer_store.get("layers/scratchpad/default/state") == {"goal": "ship"}
        second = await h.run("what was it?")
    assert first.last_layer_usage is not None
    assert first.last_layer_usage.layers == ()
    developer = [i for i in model.calls[2].items if getattr(i, "role", None) == "developer"]
    assert len(developer) == 1
    assert item_text(developer[0]) == '<scratchpad>\n{\n  "goal": "ship"\n}\n</scratchpad>'
    assert second.last_layer_usage is not None
    assert [e.layer_id for e in second.last_layer_usage.layers] == ["scratchpad"]
    assert "scratchpad/update" in [t.name for t in model.calls[0].tools]


async def test_sc_2_stored_state_failing_the_schema_is_replaced() -> None:
    """SC-2: stored state that fails the schema starts over as {}."""

    async def body(pad: Any, seen: list[Any]) -> None:
        seen.append(pad.snapshot)

    h, seen = run_code_on_pad(body, schema=Plan)
    async with h:
        await h.layer_store.set("layers/scratchpad/default/state", {"a": "not an int"})
        await h.run("go")
    assert seen == [{}]


async def test_sc_5_store_applies_raw_update_calls_unless_read_only() -> None:
    """SC-5: a raw `scratchpad/update` function call the tool loop did not answer is applied
    by store — unless read_only."""

    async def run(read_only: bool) -> Any:
        graph = nt.run_code("noop", lambda v: v)
        layer = scratchpad(read_only=read_only)
        async with nt.AgentHarness("h", agent_graph=graph, layers=[layer]) as h:
            ctx = h.create_context()
            await ctx._exec.layers.start_root(ctx, h.layer_set)
            call = FunctionCallItem(call_id="c1", name="scratchpad/update", arguments=json.dumps({"k": "v"}))
            result = nt.CallResult(new_items=(call,), rounds=(), model_id="raw", text="")
            entry = ctx._layers.get("scratchpad")  # type: ignore[union-attr]
            assert entry is not None
            return layer.store(LayerContext(entry, ctx), result)

    assert await run(False) == {"k": "v"}
    assert await run(True) is None


async def test_sc_5_updates_answered_by_the_tool_loop_are_not_applied_twice() -> None:
    """SC-5: a call that has its function_call_output was applied by the tool already."""
    layer = scratchpad()
    items = (
        FunctionCallItem(call_id="c", name="scratchpad/update", arguments="{}"),
        FunctionCallOutputItem(call_id="c", output="null"),
    )

    class Ctx:
        state = ""

    result = nt.CallResult(new_items=items, rounds=(), model_id="m", text="")
    assert layer.store(Ctx(), result) is None  # type: ignore[arg-type]


async def test_sc_5_only_unanswered_update_calls_apply_among_other_items() -> None:
    """SC-5: among other tools' calls and outputs, store applies exactly the unanswered
    `scratchpad/update` calls, in order; with none of those it changes nothing."""
    layer = scratchpad()

    class Ctx:
        state = "old notes"

    def result(*items: Any) -> nt.CallResult:
        return nt.CallResult(new_items=items, rounds=(), model_id="m", text="")

    other = FunctionCallItem(call_id="o", name="add", arguments=json.dumps({"k": "not mine"}))
    answered = FunctionCallItem(call_id="a", name="scratchpad/update", arguments=json.dumps({"k": "done"}))
    first = FunctionCallItem(call_id="r1", name="scratchpad/update", arguments=json.dumps({"k": 1, "x": 1}))
    second = FunctionCallItem(call_id="r2", name="scratchpad/update", arguments=json.dumps({"k": 2}))
    outputs = (
        FunctionCallOutputItem(call_id="o", output="3"),
        FunctionCallOutputItem(call_id="a", output="null"),
    )
    stored = layer.store(Ctx(), result(other, answered, first, *outputs, second))  # type: ignore[arg-type]
    assert stored == {"k": 2, "x": 1, "_previous": "old notes"}
    assert layer.store(Ctx(), result(other, answered, *outputs)) is None  # type: ignore[arg-type]


async def test_an_update_nested_too_deeply_is_an_error_the_model_sees() -> None:
    # found by a fresh-eyes run: 100,000-deep arguments ended the turn with a RecursionError
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    model = ScriptedModel([tool_call_reply("scratchpad/update", deep), text_reply("done")])
    graph = nt.loop("r", nt.call_model("think"), until=nt.until.no_tool_calls())
    async with nt.AgentHarness("h", agent_graph=graph, model=model, layers=[scratchpad()]) as h:
        resp = await h.run("go")
        state = await h.layer_store.get("layers/scratchpad/default/state")
    outputs = [i.output for i in resp.items if isinstance(i, FunctionCallOutputItem)]
    assert len(outputs) == 1 and "nests too deeply" in outputs[0]
    assert resp.text == "done"
    assert not state


async def test_store_skips_a_raw_update_nested_too_deeply() -> None:
    layer = scratchpad()
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    items = (FunctionCallItem(call_id="c", name="scratchpad/update", arguments=deep),)

    class Ctx:
        state = ""

    result = nt.CallResult(new_items=items, rounds=(), model_id="m", text="")
    assert layer.store(Ctx(), result) is None  # type: ignore[arg-type]


async def test_sc_6_only_a_resource_scratchpad_reaches_children() -> None:
    """SC-6: resource scope clones the state into a spawn child; thread scope disables it."""

    async def child_body(value: Any, ctx: nt.Context) -> Any:
        return ctx.context["scratchpad"].snapshot if "scratchpad" in ctx.context else "absent"

    async def parent_body(value: Any, ctx: nt.Context) -> Any:
        await ctx.context["scratchpad"].update({"shared": True})
        return value

    graph = nt.sequence("g", [nt.run_code("p", parent_body), nt.spawn("s", nt.run_code("c", child_body))])
    async with nt.AgentHarness("h", agent_graph=graph, layers=[scratchpad(scope="resource")]) as h:
        assert (await h.run("go")).output == {"shared": True}
    async with nt.AgentHarness("h", agent_graph=graph, layers=[scratchpad()]) as h:
        assert (await h.run("go")).output == "absent"


async def test_the_installed_package_registers_scratchpad_by_name() -> None:
    """The entry point registers `scratchpad`; `layers=["scratchpad"]` resolves it through the
    plugin registry (with default config)."""
    pm = make_plugin_manager()
    registration = pm.registries.context_layers.get("scratchpad")
    assert registration is not None
    assert not registration.builtin
    assert isinstance(registration.resolve()(), Scratchpad)
    seen: list[Any] = []
    graph = nt.run_code("look", lambda v, ctx: seen.append(type(ctx.context["scratchpad"].snapshot)))
    async with nt.AgentHarness("h", agent_graph=graph, layers=["scratchpad"], plugins=pm) as h:
        await h.run("go")
    assert seen == [str]


async def test_unchanged_notes_are_sent_as_the_same_message_and_changed_ones_anew() -> None:
    """While the state does not change, each step sends the same `<scratchpad>` message; after
    an update the next step renders the new notes (never a stale render)."""
    model = ScriptedModel(
        [
            text_reply("one"),
            text_reply("two"),
            tool_call_reply("scratchpad/update", {"b": 2}),
            text_reply("ok"),
            text_reply("three"),
        ]
    )
    async with nt.AgentHarness(
        "h",
        agent_graph=nt.call_model("a"),
        model=model,
        layers=[scratchpad(template="start")],
        context_cache={"enabled": False},
    ) as h:
        for text in ("a", "b", "c", "d"):
            await h.run(text)

    def pad(n: int) -> Any:
        return next(i for i in model.calls[n].items if "<scratchpad>" in item_text(i))

    assert pad(0) is pad(1)
    assert "start" in item_text(pad(2)) and '"b": 2' not in item_text(pad(2))
    assert '"b": 2' in item_text(pad(4)) and pad(4) is not pad(0)
