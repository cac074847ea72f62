"""`noetic.packed_form`: what it encodes comes back exactly; what it cannot, it refuses (SE-5)."""

from __future__ import annotations

import datetime
import enum
import marshal
import math
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from noetic.items import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputText,
    MessageItem,
    OtherPart,
    OutputText,
    ReasoningItem,
    Refusal,
)
from noetic.model import TextDelta, ToolDefinition
from noetic.packed_form import MAX_DEPTH, Unencodable, decode, encode
from noetic.records import FrozenRecord, Record, set_field
from noetic.usage import RoundUsage
from pydantic import BaseModel, ConfigDict, PrivateAttr


class Point(BaseModel):
    """A user's model of plain fields (module level, as a graph's output would be)."""

    x: int
    y: float | None = None
    label: str = "p"
    tags: list[str] = []


class Open(BaseModel):
    """A user's model that keeps extra fields."""

    model_config = ConfigDict(extra="allow")
    name: str


class Pair(FrozenRecord):
    """A user's record of two values (refused: its constructor could change what it is given)."""

    __slots__ = ("left", "right")
    left: Any
    right: Any

    def __init__(self, left: Any, right: Any = None) -> None:
        set_field(self, "left", left)
        set_field(self, "right", right)


class Span(NamedTuple):
    """A user's named tuple (refused, as a user's record is)."""

    start: int
    label: str | None = None


def _shape(value: Any) -> Any:
    """What equality does not check: every value's exact type, and each model's fields set and
    extra fields, all the way down."""
    kind = type(value)
    if isinstance(value, BaseModel):
        return (
            kind,
            frozenset(value.model_fields_set),
            _shape(value.__pydantic_extra__),
            {name: _shape(v) for name, v in value.__dict__.items()},
        )
    if isinstance(value, Record):
        return (kind, [_shape(getattr(value, name)) for name in kind._init_fields])
    if isinstance(value, list | tuple):
        return (kind, [_shape(v) for v in value])
    if kind is dict:
        return (kind, {name: _shape(v) for name, v in value.items()})
    if kind is float and math.isnan(value):
        return (kind, "nan")
    return (kind, value)


def _round_trip(value: Any) -> Any:
    back = decode(encode(value))
    assert _shape(back) == _shape(value)
    return back


# --- many shapes ----------------------------------------------------------------------------

_texts = st.text(max_size=12)
_plain = st.none() | st.booleans() | st.integers() | st.floats() | _texts
_parts = st.one_of(
    st.builds(InputText, text=_texts),
    st.builds(OutputText, text=_texts),
    st.builds(Refusal, refusal=_texts),
    st.builds(
        lambda kind, url: OtherPart(type=kind, image_url=url), st.sampled_from(["input_image", "x"]), _texts
    ),
)
_extra = st.dictionaries(
    st.sampled_from(["provider", "format", "index"]), _plain | st.lists(_texts), max_size=2
)
_items = st.one_of(
    st.builds(
        lambda role, parts, extra, status: MessageItem(role=role, content=parts, status=status, **extra),
        st.sampled_from(["user", "assistant", "system", "developer"]),
        st.lists(_parts, max_size=3),
        _extra,
        st.sampled_from(["completed", "incomplete"]),
    ),
    st.builds(lambda text: MessageItem(role="user", content=text), _texts),
    st.builds(FunctionCallItem, call_id=_texts, name=_texts, arguments=_texts),
    st.builds(
        lambda call, out, extra: FunctionCallOutputItem(call_id=call, output=out, **extra),
        _texts,
        _texts,
        _extra,
    ),
    st.builds(
        ReasoningItem,
        content=st.lists(_parts, max_size=2),
        summary=st.none() | st.lists(_parts, max_size=2),
        encrypted_content=st.none() | _texts,
    ),
    st.builds(ReasoningItem),
)
_models = st.one_of(
    _items,
    _parts,
    st.builds(RoundUsage, input_tokens=st.integers(0, 10**6), cached_tokens=st.none() | st.integers(0, 99)),
    st.builds(RoundUsage),
    st.builds(Point, x=st.integers(), y=st.none() | st.floats(), tags=st.lists(_texts, max_size=2)),
    st.builds(Point, x=st.integers()),
    st.builds(lambda name, extra: Open(name=name, **extra), _texts, _extra),
)
_values = st.recursive(
    _plain | _models,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_texts, inner, max_size=4),
        st.builds(ToolDefinition, _texts, _texts, st.dictionaries(_texts, inner, max_size=3)),
        st.builds(TextDelta, _texts, st.none() | _texts),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_any_value_of_these_shapes_comes_back_equal_with_the_same_types_and_fields_set(value: Any) -> None:
    back = _round_trip(value)
    if not _has_nan(value):
        assert back == value


@settings(max_examples=100, deadline=None)
@given(st.lists(_items, min_size=1, max_size=6), st.data())
def test_items_a_response_shares_with_the_log_come_back_shared(items: list[Any], data: st.DataObject) -> None:
    held = tuple(data.draw(st.lists(st.sampled_from(items), max_size=6)))
    log, fields, own = _round_trip((tuple(items), {"items": held, "output": "done"}, ("exec", held)))
    by_id = {id(item): index for index, item in enumerate(items)}
    for original, back in zip(held, fields["items"], strict=True):
        assert back is log[by_id[id(original)]]
    assert all(a is b for a, b in zip(own[1], fields["items"], strict=True))


def _has_nan(value: Any) -> bool:
    return "nan" in repr(value)


def test_floats_come_back_as_the_same_numbers() -> None:
    values = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310, 2**53 + 1.0]
    back = decode(encode(values))
    assert [math.copysign(1, v) for v in back] == [math.copysign(1, v) for v in values]
    assert math.isnan(back[4]) and back[:4] == values[:4] and back[5:] == values[5:]
    assert decode(encode(10**40)) == 10**40 and type(decode(encode(True))) is bool


def test_a_mutable_value_met_twice_comes_back_as_one_object() -> None:
    shared: list[Any] = [1, {"a": [2]}]
    back = _round_trip({"first": shared, "second": (shared, shared[1])})
    assert back["first"] is back["second"][0] and back["second"][1] is back["first"][1]
    back["first"].append(3)
    assert back["second"][0] == [1, {"a": [2]}, 3]


def test_a_model_comes_back_without_being_validated_again() -> None:
    built = Point.model_construct(x="not an int", label=5)  # what validation would refuse
    back = decode(encode(built))
    assert back.x == "not an int" and back.label == 5 and back.model_fields_set == {"x", "label"}


def test_a_named_tuple_comes_back_as_one_of_its_class() -> None:
    back = _round_trip([TextDelta("x", "id"), (TextDelta("y"),)])
    assert back == [TextDelta("x", "id"), (TextDelta("y"),)] and type(back[0]) is TextDelta


class _ReducingSpan(Span):
    def __reduce__(self) -> Any:
        return (str, ("NOT A SPAN",))


def test_a_record_whose_fields_hold_models_comes_back_equal() -> None:
    record = ToolDefinition("t", "d", {"point": Point(x=1), "more": [ToolDefinition("u", "e", {})]})
    assert _round_trip(record) == record


# --- refused: the caller falls back on pickle or keeps the session as it is -------------------


class Colour(enum.Enum):
    RED = "red"


class Label(str):
    """A str subclass (it would come back as a plain str)."""


class _Reducing(BaseModel):
    a: int = 1

    def __reduce__(self) -> Any:
        return (str, ("NOT A MODEL",))


class _Stated(BaseModel):
    a: int = 1

    def __getstate__(self) -> Any:
        return super().__getstate__()


class _StatedChild(_Stated):
    pass


class _Private(BaseModel):
    a: int = 1
    _secret: str = PrivateAttr(default="s")


class _PrivateUnset(BaseModel):
    """A private attribute without a default: `__pydantic_private__` is `{}`, not None."""

    a: int = 1
    _cache: dict[str, int] = PrivateAttr()


def _self_containing() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        Colour.RED,
        Label("x"),
        datetime.date(2026, 1, 1),
        {1, 2},
        b"bytes",
        {1: "int key"},
        {"k": Colour.RED},
        _Reducing(),
        _ReducingSpan(1),
        _StatedChild(),
        _Private(),
        _PrivateUnset(),
        Pair("a user's record", "may rebuild itself otherwise"),
        Span(1, "a user's named tuple"),
        _self_containing(),
        _nested(MAX_DEPTH + 1),
        MessageItem(role="user", content="hi", verdict=Colour.RED),
        object(),
        ValueError("boom"),
    ],
    ids=lambda value: type(value).__name__,
)
def test_what_would_not_come_back_exactly_is_refused(value: Any) -> None:
    with pytest.raises(Unencodable):
        encode(value)


def test_values_nested_as_deep_as_allowed_come_back() -> None:
    value = _nested(MAX_DEPTH - 1)
    assert _round_trip(value) == value


@pytest.mark.parametrize(
    "data",
    [b"", b"not marshal", marshal.dumps((9, 1)), marshal.dumps((4, 99, (), None, (), ()))],
    ids=["empty", "not marshal", "unknown node", "unknown class"],
)
def test_bytes_that_are_not_an_encoding_raise_instead_of_giving_something_back(data: bytes) -> None:
    with pytest.raises((ValueError, EOFError, TypeError, IndexError)):
        decode((data, ()))
