"""The layer contract and layer sets: construction errors and name resolution (LY-13)."""

from __future__ import annotations

import math
from typing import Any

import noetic as nt
import pytest
from noetic.layers import BudgetRange, ContextLayer, LayerContext, LayerSet, Slot, layer_data, layer_function
from noetic.testing import ScriptedModel
from pydantic import BaseModel


class Plain(ContextLayer):
    """A minimal layer: id and slot; everything else is the base-class default."""

    def __init__(self, id: str = "plain", **attributes: Any):
        self.id = id
        self.slot = Slot.RAG
        for name, value in attributes.items():
            setattr(self, name, value)

    async def recall(self, ctx: LayerContext, budget: float) -> str:
        return "plain"


def config_error(layers: list[Any]) -> nt.NoeticConfigError:
    with pytest.raises(nt.NoeticConfigError) as info:
        nt.context(layers)
    return info.value


def test_slot_constants() -> None:
    """The slot constants of §2.6."""
    assert (Slot.REMINDER, Slot.STEERING, Slot.SCRATCHPAD, Slot.ENTITY, Slot.OBSERVATIONS) == (
        80,
        90,
        100,
        150,
        200,
    )
    assert (Slot.PROCEDURAL, Slot.EPISODIC, Slot.RAG, Slot.SEMANTIC_RECALL) == (250, 300, 350, 400)


def test_defaults_of_the_base_class() -> None:
    """A subclass needs only id, slot and a hook: thread scope, auto budget and placement."""
    layer = Plain()
    assert (layer.scope, layer.budget, layer.placement, layer.on_init_error, layer.recall_mode) == (
        "thread",
        "auto",
        "auto",
        "throw",
        "atomic",
    )
    assert dict(layer.provides) == {}
    assert dict(layer.timeouts) == {}
    assert nt.context([layer]).specs == (layer,)


def test_ly_13_duplicate_ids() -> None:
    """LY-13: two layers with one id → DUPLICATE_LAYER_ID, naming the id."""
    error = config_error([Plain("x"), Plain("x")])
    assert error.code == "DUPLICATE_LAYER_ID"
    assert "'x'" in error.message
    assert error.hint


@pytest.mark.parametrize(
    ("attributes", "field"),
    [
        ({"slot": math.nan}, "slot"),
        ({"slot": math.inf}, "slot"),
        ({"slot": "100"}, "slot"),
        ({"slot": True}, "slot"),
        ({"scope": "session"}, "scope"),
        ({"budget": {"min": 500, "max": 100}}, "budget"),
        ({"budget": {"min": -1, "max": 100}}, "budget"),
        ({"budget": -5}, "budget"),
        ({"budget": math.nan}, "budget"),
        ({"budget": {"min": 1}}, "budget"),
        ({"budget": "lots"}, "budget"),
        ({"placement": "middle"}, "placement"),
        ({"on_init_error": "ignore"}, "on_init_error"),
        ({"recall_mode": "lazy"}, "recall_mode"),
        ({"timeouts": {"recall": 0}}, "timeouts"),
        ({"timeouts": {"think": 1.0}}, "timeouts"),
        ({"provides": {"x": lambda state: state}}, "provides"),
        ({"provides": {"not an id": layer_data(lambda s: s)}}, "provides"),
        ({"id": ""}, "id"),
    ],
)
def test_ly_13_invalid_fields(attributes: dict[str, Any], field: str) -> None:
    """LY-13: a non-finite slot, an unknown scope, min > max or min < 0 budgets, … are
    construction errors that name the layer and the field."""
    error = config_error([Plain(**attributes)])
    assert error.code == "INVALID_LAYER"
    assert error.field == field


@pytest.mark.parametrize(
    "budget", [0, 1500, 2.5, "auto", None, {"min": 0, "max": math.inf}, BudgetRange(10, 20)]
)
def test_ly_13_valid_budgets(budget: Any) -> None:
    """Ints, ranges (max may be infinite), 'auto' and None are budgets."""
    nt.context([Plain(budget=budget)])


def test_a_layer_class_is_not_a_layer() -> None:
    """Passing the class instead of an instance says so."""
    error = config_error([Plain])
    assert error.code == "INVALID_LAYER"
    assert "Plain()" in error.hint


def test_construction_errors_surface_where_layers_are_given() -> None:
    """The harness, call_model, spawn and with_context validate layer objects on construction."""
    bad = Plain(slot=math.nan)
    with pytest.raises(nt.NoeticConfigError):
        nt.AgentHarness("h", agent_graph=nt.call_model("a"), layers=[bad])
    with pytest.raises(nt.NoeticConfigError):
        nt.call_model("a", layers=[bad])
    with pytest.raises(nt.NoeticConfigError):
        nt.spawn("s", nt.call_model("a"), layers=[Plain("d"), Plain("d")])
    with pytest.raises(nt.NoeticConfigError):
        nt.with_context("w", nt.call_model("a"), layers=[bad])
    with pytest.raises(nt.NoeticConfigError) as info:
        nt.with_context("w", nt.call_model("a"), layers=[])
    assert info.value.code == "INVALID_STEP"


def test_layer_function_input_must_be_a_schema() -> None:
    """layer_function validates its JSON Schema up front."""
    with pytest.raises(nt.NoeticConfigError):
        layer_function(lambda args, ctx: None, input={"type": "no-such-type"})  # type: ignore[arg-type, return-value]


def test_layer_sets_flatten_and_keep_array_order() -> None:
    """context() accepts layers, names and other sets; order is array order."""
    a, b = Plain("a"), Plain("b")
    inner = nt.context([b, "scratchpad"])
    outer = nt.context([a, inner])
    assert outer.specs == (a, b, "scratchpad")
    assert outer.names == ("scratchpad",)
    assert LayerSet.of(None) is None
    assert LayerSet.of(outer) is outer


@pytest.mark.anyio
async def test_unknown_layer_names_fail_the_run_with_a_hint() -> None:
    """A name nobody registered fails at first use with UNKNOWN_CONTEXT_LAYER."""
    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("a"), model=ScriptedModel.echo(), layers=["no-such-layer"]
    ) as h:
        with pytest.raises(nt.NoeticConfigError) as info:
            await h.run("hi")
    assert info.value.code == "UNKNOWN_CONTEXT_LAYER"
    assert info.value.hint


@pytest.mark.anyio
async def test_registered_names_resolve_and_duplicate_ids_across_names_are_caught() -> None:
    """Names resolve through the plugin registry; a resolved layer clashing with an object id
    is DUPLICATE_LAYER_ID."""

    class Plugin:
        @nt.hookimpl
        def register_context_layers(self, register: Any) -> None:
            register("plain", lambda: Plain("plain"))

    async with nt.AgentHarness(
        "h", agent_graph=nt.call_model("a"), model=ScriptedModel.echo(), layers=["plain"], plugins=[Plugin()]
    ) as h:
        response = await h.run("hi")
        assert response.last_layer_usage is not None
        assert [e.layer_id for e in response.last_layer_usage.layers] == ["plain"]
    async with nt.AgentHarness(
        "h",
        agent_graph=nt.call_model("a"),
        model=ScriptedModel.echo(),
        layers=["plain", Plain()],
        plugins=[Plugin()],
    ) as h:
        with pytest.raises(nt.NoeticConfigError) as info:
            await h.run("hi")
    assert info.value.code == "DUPLICATE_LAYER_ID"


def test_pydantic_function_inputs_publish_their_schema() -> None:
    """A pydantic input model gives the tool its JSON Schema."""

    class Add(BaseModel):
        n: int

    async def add(args: Add, ctx: LayerContext) -> int:
        return args.n

    decl = layer_function(add, input=Add, description="Add n.")
    assert decl.input_schema["properties"]["n"]["type"] == "integer"
    assert decl.validate({"n": 2}) == Add(n=2)
