"""The packed form of an idle session's values: nested tuples of plain values, as bytes (SE-5).

`encode` turns what a packed session keeps (its log's items, its last response's fields, its
layer usage's own figures) into nested tuples whose leaves are strings, numbers, booleans and
None, and those into bytes with `marshal` (the standard library's encoder of exactly such
tuples, in C); `decode` builds equal copies back. Why not pickle alone, which the session
packer falls back on: pickle's way through a pydantic model (its reduction, pydantic's
`__getstate__`, pickle's memo) plus the check that pickle would give the session back exactly
cost about 400,000 instructions for a tool round trip's session; this walk checks as it
encodes, in about 250,000. Bytes, unlike nested tuples, are one object the cyclic collector
never walks (it untracks a tuple only once everything in it is untracked, one level per pass).

Only what is rebuilt exactly is encoded; anything else raises `Unencodable` and the caller
falls back on pickle (or keeps the session unpacked). Encoded: exact `str`, `int`, `float`,
`bool` and None; exact tuples, lists and string-keyed dicts of encodable values; pydantic
models whose classes leave pickling to pydantic (no pickle hook of their own, no slots of their
own, no private attributes declared), as their field dict, fields set and extra fields, rebuilt
the way pydantic unpickles them (without validating again); and noetic's own named tuples and
records, rebuilt from their fields (a user's may change what its constructor is given). Classes other
than the built-in item, part and usage models travel beside the bytes (`Encoded`), by
reference. An object met twice comes back as one object met twice (the log's items the
response also holds stay shared); an object that contains itself, or values nested deeper than
`MAX_DEPTH`, are not encoded.

The encoded form never leaves the process: it is made from a session's own objects and read
back only by it (`marshal` is not meant for bytes from elsewhere).
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

from pydantic import BaseModel

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
from noetic.records import Record
from noetic.usage import RoundUsage

__all__ = ["MAX_DEPTH", "Unencodable", "decode", "encode", "pickles_as_a_model"]

#: How deeply values may nest (a response's output included) before they are not encoded.
MAX_DEPTH = 64

# The first element of every encoded node says what it is (a plain value is never a tuple).
_REF = 0  # (_REF, n): the n-th object encoded before (counted as each one is finished)
_TUPLE = 1  # (_TUPLE, values)
_LIST = 2  # (_LIST, values)
_DICT = 3  # (_DICT, names, values)
_MODEL = 4  # (_MODEL, class number, fields set, extra, names, values)
_RECORD = 5  # (_RECORD, class number, values of its fields in order)
_NAMED_TUPLE = 6  # (_NAMED_TUPLE, class number, values)
# where `values` is a tuple whose items are plain values or nodes

_PLAIN = frozenset({str, int, float, bool, type(None)})

#: Model classes known to unpickle as they are; a node names a class by its number here, or
#: past these in the classes `encode` returns beside the bytes.
_KNOWN_MODELS: tuple[type[BaseModel], ...] = (
    MessageItem,
    FunctionCallItem,
    FunctionCallOutputItem,
    ReasoningItem,
    InputText,
    OutputText,
    Refusal,
    OtherPart,
    RoundUsage,
)
_MODEL_NUMBERS = {cls: number for number, cls in enumerate(_KNOWN_MODELS)}

_set_slot = object.__setattr__


class Unencodable(Exception):
    """A value `encode` does not give back exactly (the caller falls back on another form)."""


#: What `encode` makes: the nodes as `marshal` bytes, and the classes they name by number
#: past `_KNOWN_MODELS` (bytes cannot hold a class).
Encoded: TypeAlias = tuple[bytes, tuple[type, ...]]


def encode(value: Any) -> Encoded:
    """`value` encoded; raises `Unencodable` for anything `decode` would not give back equal,
    of the same types, with the same fields set."""
    if type(value) in _PLAIN:
        return marshal.dumps(value), ()
    encoder = _Encoder()
    node = encoder.encode(value, 0)
    return marshal.dumps(node), tuple(encoder.classes)


def decode(encoded: Encoded) -> Any:
    """The value `encode` made `encoded` from: equal copies of its objects, sharing as the
    originals shared."""
    data, classes = encoded
    node = marshal.loads(data)
    if type(node) is not tuple:
        return node
    return _Decoder((*_KNOWN_MODELS, *classes)).decode(node)


class _Encoder:
    """One `encode` call: the objects finished so far, by identity (for `_REF` nodes)."""

    __slots__ = ("classes", "done", "finished")

    def __init__(self) -> None:
        #: The classes of the models and records met that `_KNOWN_MODELS` does not list.
        self.classes: list[type] = []
        #: id of each object met → its number once encoded, or -1 while it is being encoded
        #: (met again then, it contains itself).
        self.done: dict[int, int] = {}
        #: How many objects are encoded (the next one's number).
        self.finished = 0

    def encode(self, value: Any, depth: int) -> Any:
        """The node of `value`, a value that is not plain."""
        done = self.done
        key = id(value)
        number = done.get(key)
        if number is not None:
            if number < 0:
                raise Unencodable("a value that contains itself")
            return (_REF, number)
        if depth >= MAX_DEPTH:
            raise Unencodable(f"values nested deeper than {MAX_DEPTH}")
        done[key] = -1
        depth += 1
        kind = type(value)
        known = _MODEL_NUMBERS.get(kind)
        if known is not None:  # the most common node, so the shortest way
            node = self._model(value, known, depth)
        elif kind is tuple:
            node = (_TUPLE, self._values(value, depth))
        elif kind is list:
            node = (_LIST, self._values(value, depth))
        elif kind is dict:
            node = self._dict(value, depth)
        elif isinstance(value, BaseModel):
            if not pickles_as_a_model(kind):
                raise Unencodable(f"a {kind.__qualname__} model with its own pickling")
            node = self._model(value, self._number(kind), depth)
        elif not _noetics(kind):  # a user's record or named tuple may rebuild itself otherwise
            raise Unencodable(f"a {kind.__qualname__} value")
        elif isinstance(value, tuple) and _is_a_named_tuple(kind) and not getattr(value, "__dict__", None):
            node = (_NAMED_TUPLE, self._number(kind), self._values(value, depth))
        elif isinstance(value, Record) and _rebuilt_from_its_fields(kind):
            fields = [getattr(value, name) for name in kind._init_fields]
            node = (_RECORD, self._number(kind), self._values(fields, depth))
        else:
            raise Unencodable(f"a {kind.__qualname__} value")
        done[key] = self.finished
        self.finished += 1
        return node

    def _number(self, kind: type) -> int:
        """The number `decode` finds the class `kind` by."""
        classes = self.classes
        if kind not in classes:
            classes.append(kind)
        return len(_KNOWN_MODELS) + classes.index(kind)

    def _values(self, values: Iterable[Any], depth: int) -> tuple[Any, ...]:
        """`values` as one tuple, each value plain or a node."""
        values = tuple(values)
        if _PLAIN.issuperset(map(type, values)):  # most are: a loop in C, no tuple of nodes
            return values
        encode = self.encode
        return tuple([v if type(v) in _PLAIN else encode(v, depth) for v in values])

    def _dict(self, mapping: dict[Any, Any], depth: int) -> tuple[Any, ...]:
        if not mapping:
            return _EMPTY_DICT
        names = tuple(mapping)
        if not _STR.issuperset(map(type, names)):
            raise Unencodable("a dict key that is not a string")
        return (_DICT, names, self._values(mapping.values(), depth))

    def _model(self, model: BaseModel, kind: int, depth: int) -> tuple[Any, ...]:
        """The node of a model whose class has the number `kind`."""
        if model.__pydantic_private__ is not None:  # even {}: it comes back as None otherwise
            raise Unencodable(f"a {type(model).__qualname__} model with private attributes")
        extra = model.__pydantic_extra__
        fields = model.__dict__  # its keys are the model's field names
        return (
            _MODEL,
            kind,
            tuple(model.__pydantic_fields_set__),
            _EMPTY_DICT if extra == {} else None if extra is None else self._dict(extra, depth),
            tuple(fields),
            self._values(fields.values(), depth),
        )


#: The node of an empty dict (one for all: most items have no extra fields).
_EMPTY_DICT = (_DICT, (), ())
_STR = frozenset({str})


class _Decoder:
    """One `decode` call: the classes by number, and the objects decoded so far in the order
    `_Encoder` numbered them (for `_REF` nodes)."""

    __slots__ = ("classes", "done")

    def __init__(self, classes: tuple[type, ...]) -> None:
        self.classes = classes
        self.done: list[Any] = []

    def decode(self, node: tuple[Any, ...]) -> Any:
        """The value of `node`."""
        tag = node[0]
        if tag == _REF:
            return self.done[node[1]]
        value: Any
        if tag == _MODEL:
            kind = self.classes[node[1]]
            value = kind.__new__(kind)
            extra = node[3]
            # what pydantic's own unpickling sets, in its order
            _set_slot(value, "__pydantic_fields_set__", set(node[2]))
            _set_slot(
                value, "__pydantic_extra__", None if extra is None else self._dict(extra) if extra[1] else {}
            )
            _set_slot(value, "__pydantic_private__", None)
            # names and values were written together (a strict zip would cost twice as much)
            _set_slot(value, "__dict__", dict(zip(node[4], self._values(node[5]))))  # noqa: B905
        elif tag == _TUPLE:
            value = tuple(self._values(node[1]))
        elif tag == _LIST:
            value = list(self._values(node[1]))
        elif tag == _DICT:
            value = self._dict(node)
        elif tag == _NAMED_TUPLE:  # as pickle makes one: its class's tuple of these values
            value = tuple.__new__(self.classes[node[1]], self._values(node[2]))
        elif tag == _RECORD:
            kind = self.classes[node[1]]
            value = kind(**dict(zip(kind._init_fields, self._values(node[2]), strict=True)))
        else:
            raise ValueError(f"not a packed value (node tag {tag!r})")
        self.done.append(value)
        return value

    def _values(self, values: tuple[Any, ...]) -> Sequence[Any]:
        """The values of a node's tuple of values, decoded."""
        if _PLAIN.issuperset(map(type, values)):
            return values
        decode = self.decode
        return [decode(v) if type(v) is tuple else v for v in values]

    def _dict(self, node: tuple[Any, ...]) -> dict[str, Any]:
        """The dict of a `_DICT` node."""
        return dict(zip(node[1], self._values(node[2])))  # noqa: B905


#: The methods by which a class may change what pickle makes of it.
_PICKLE_HOOKS = (
    "__reduce__",
    "__reduce_ex__",
    "__getstate__",
    "__setstate__",
    "__getnewargs_ex__",
    "__getnewargs__",
)


def _noetics(kind: type) -> bool:
    """Whether `kind` is one of noetic's own classes (its records and named tuples are known to
    come back from their fields; a user's may change what its constructor is given)."""
    module = kind.__module__
    return module == "noetic" or module.startswith("noetic.")


def _is_a_named_tuple(kind: type) -> bool:
    """Whether the tuple subclass `kind` is a named tuple's (pickled as its class's tuple)."""
    return isinstance(getattr(kind, "_fields", None), tuple) and not any(
        hook in cls.__dict__
        for cls in kind.__mro__[:-2]
        for hook in _PICKLE_HOOKS
        if hook != "__getnewargs__"
    )


def _rebuilt_from_its_fields(kind: Any) -> bool:
    """Whether the record class `kind` is copied and pickled as `Record` does it: `kind(**fields)`."""
    return kind.__reduce__ is Record.__reduce__


def pickles_as_a_model(kind: type) -> bool:
    """Whether pickle gives an instance of the pydantic model class `kind` back as one: it
    uses pydantic's own pickling (no class of its own overrides a pickle hook — a model whose
    `__reduce__` returns a string comes back as that string — or adds slots of its own)."""
    for cls in kind.__mro__:
        if cls is BaseModel or cls is object:
            continue
        if any(hook in cls.__dict__ for hook in _PICKLE_HOOKS) or cls.__dict__.get("__slots__"):
            return False
    return True
