"""The value classes of the core keep what they had as dataclasses: equality, hashing, `repr`,
immutability, copying and pickling (`noetic.records`), and each class its own validation."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError
from typing import Any

import noetic as nt
import pytest
from noetic.errors import NoeticConfigError
from noetic.harness import HarnessConfig, HarnessResponse
from noetic.layers.budgets import Projection
from noetic.layers.contract import BudgetRange, LayerFunction, RecallResult, ToolCallRequest, layer_function
from noetic.model import ModelRequest, ToolDefinition
from noetic.predicates import LoopSnapshot, Verdict
from noetic.records import FrozenRecord, Record, set_field
from noetic.usage import RoundUsage, TokenUsage


class Point(FrozenRecord):
    """A record for the tests: fields declared in the order y, x (not alphabetical)."""

    __slots__ = ("x", "y")
    y: int
    x: int

    def __init__(self, y: int, x: int = 0) -> None:
        set_field(self, "y", y)
        set_field(self, "x", x)


class Box(Record):
    """A mutable record with a field left out of its value."""

    __slots__ = ("note", "size")
    _hidden = ("note",)
    size: int
    note: str

    def __init__(self, size: int, note: str = "") -> None:
        self.size = size
        self.note = note


def test_frozen_records_compare_hash_and_show_their_fields_in_declaration_order() -> None:
    assert Point(1, 2) == Point(1, 2) and Point(1, 2) != Point(2, 1)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert {Point(1, 2), Point(1, 2)} == {Point(1, 2)}
    assert repr(Point(1, 2)) == "Point(y=1, x=2)"
    assert Point(1) != (1, 0)  # only a record of the same class is equal


class One(FrozenRecord):
    """A record of one field."""

    __slots__ = ("x",)
    x: int

    def __init__(self, x: int) -> None:
        set_field(self, "x", x)


class Nothing(FrozenRecord):
    """A record of no field."""

    __slots__ = ()


def test_records_of_one_field_and_of_none_compare_and_hash_as_values() -> None:
    assert One(1) == One(1) and One(1) != One(2) and hash(One(1)) == hash(One(1))
    assert One(1) != 1  # not its bare value
    assert Nothing() == Nothing() and hash(Nothing()) == hash(Nothing())
    assert Box(1, "a") == Box(1, "b") and Box(1) != Box(2)  # a hidden field is left out


def test_frozen_records_refuse_assignment_and_deletion() -> None:
    point = Point(1)
    with pytest.raises(FrozenInstanceError, match="'y'"):
        point.y = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del point.x
    with pytest.raises(AttributeError):
        point.z = 1  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__")


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, lambda r: pickle.loads(pickle.dumps(r))])
def test_records_copy_and_pickle_by_field_name(clone: Any) -> None:
    assert clone(Point(1, 2)) == Point(1, 2)
    box = clone(Box(3, "kept"))
    assert (box.size, box.note) == (3, "kept")


def test_mutable_records_change_in_place_and_are_not_hashable() -> None:
    box = Box(1, "a")
    box.size = 2
    assert box == Box(2, "b")  # the hidden note is not part of the value
    assert repr(box) == "Box(size=2)"
    with pytest.raises(TypeError):
        hash(box)


def test_a_field_without_annotation_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="annotate every field"):

        class Bad(FrozenRecord):
            __slots__ = ("a", "b")
            a: int


def test_the_core_value_classes_keep_their_dataclass_behaviour() -> None:
    call = ToolCallRequest("add", {"a": 1}, "c1")
    assert call == ToolCallRequest(name="add", args={"a": 1}, call_id="c1")
    assert repr(call) == "ToolCallRequest(name='add', args={'a': 1}, call_id='c1')"
    assert hash(BudgetRange(0, 5)) == hash(BudgetRange(0, 5))
    assert RecallResult([], 0) == RecallResult([], 0) and repr(RecallResult([], 0)).endswith("state=UNSET)")
    assert Verdict(True) == Verdict(stop=True, reason=None, feedback=None)
    snapshot = LoopSnapshot(1, TokenUsage(), 0.5, 0.0, None, "")
    assert snapshot.history == () and snapshot.held_cost == 0.0
    assert copy.deepcopy(snapshot) == snapshot
    assert ToolDefinition("t", "d", {}) == ToolDefinition("t", "d", {}, None)
    with pytest.raises(FrozenInstanceError):
        HarnessConfig("h").name = "other"  # type: ignore[misc]


def test_defaults_that_were_factories_are_fresh_per_instance() -> None:
    first, second = ModelRequest("m", []), ModelRequest("m", [])
    assert first.params == {} and first.params is not second.params
    first.billing = None  # a request is mutable, as the adapters' tests use it
    assert HarnessConfig("h").params == {} and HarnessConfig("h").params is not HarnessConfig("h").params


def test_projection_still_validates_its_overflow_mode() -> None:
    assert Projection.of({"token_budget": 1000}) == Projection(token_budget=1000)
    with pytest.raises(NoeticConfigError) as info:
        Projection(overflow="drop-everything")  # type: ignore[arg-type]
    assert info.value.code == "INVALID_BUDGET_INPUT"


def test_a_response_value_leaves_out_its_layer_usage_and_computes_it_once() -> None:
    calls: list[int] = []

    def usage() -> Any:
        calls.append(1)
        return None

    args = ("out", "text", (), RoundUsage(), 0.0, 0.0, 0.0, "e", "t")
    lazy = HarnessResponse(*args, _layer_usage=usage)
    assert lazy == HarnessResponse(*args) and "_layer_usage" not in repr(lazy)
    assert lazy.last_layer_usage is None and lazy.last_layer_usage is None
    assert calls == [1]


def test_a_layer_function_builds_its_input_schema_once_and_compares_without_its_tools() -> None:
    async def execute(args: Any, ctx: Any) -> Any:
        return args

    decl = layer_function(execute, input={"type": "object", "properties": {"n": {"type": "integer"}}})
    assert decl.input_schema is decl.input_schema
    assert decl.input_schema["properties"]["n"]["type"] == "integer"
    decl.tools["layer"] = nt.tool("t", description="", input={"type": "object"}, execute=lambda a: a)
    assert decl == LayerFunction(execute, decl.input, "")
    assert copy.copy(decl).tools == {}
