"""Value classes without generated code: `Record` and `FrozenRecord`.

`dataclasses.dataclass` writes the source of `__init__`, `__repr__`, `__eq__` (and, frozen,
`__hash__`, `__setattr__`, `__delattr__`) for every class and compiles it while the module is
imported: about 3 million instructions per frozen class, which for the core's thirty-odd value
classes was a third of `import noetic` (measured with `bench/import_instructions.py`). No
library gives that behaviour without compiling code at import, so it is written here once: a
subclass lists its fields in `__slots__`, annotates each one in the class body (their order is
the fields' order), writes its `__init__` by hand (compiled into the bytecode cache like any
other code), and inherits equality, hashing, `repr`, immutability, copying and pickling:

    class Point(FrozenRecord):
        __slots__ = ("x", "y")
        x: int
        y: int

        def __init__(self, x: int, y: int = 0) -> None:
            set_field(self, "x", x)
            set_field(self, "y", y)

`__init__` takes every field by its name, so a record is rebuilt from its values for `copy` and
`pickle`; fields listed in `_derived` (caches the record fills itself) are not taken by
`__init__`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar

__all__ = ["FrozenRecord", "Record", "set_field"]

#: How a record's `__init__` writes a field past a frozen `__setattr__`.
set_field = object.__setattr__


def _values_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function from a record to the tuple of its fields `names`."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda record: (one(record),)
    return lambda record: ()


class Record:
    """A mutable value class: equal when of the same class with equal fields; not hashable."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    #: Fields left out of equality, hashing and `repr` (state that is not part of the value).
    _hidden: ClassVar[tuple[str, ...]] = ()
    #: Fields `__init__` does not take (caches the record fills itself); also hidden.
    _derived: ClassVar[tuple[str, ...]] = ()
    #: The fields of the value, and those `__init__` takes, in the order they are annotated
    #: (set for each subclass).
    _compared: ClassVar[tuple[str, ...]] = ()
    _init_fields: ClassVar[tuple[str, ...]] = ()
    #: A record's compared values as one tuple (an `attrgetter`: records are compared and
    #: hashed on hot paths, such as budget memo keys, where a Python loop costs 3x as much).
    _values_of: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = tuple(name for name in inspect.get_annotations(cls) if name in cls.__slots__)
        if set(fields) != set(cls.__slots__):
            raise TypeError(f"{cls.__qualname__}: annotate every field of __slots__ in the class body")
        cls._init_fields = tuple(name for name in fields if name not in cls._derived)
        cls._compared = tuple(name for name in cls._init_fields if name not in cls._hidden)
        cls._values_of = staticmethod(_values_getter(cls._compared))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return type(self)._values_of(self) == type(other)._values_of(other)
        return NotImplemented

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._compared)
        return f"{type(self).__qualname__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), {name: getattr(self, name) for name in self._init_fields}))


class FrozenRecord(Record):
    """An immutable, hashable value class (assigning a field raises `FrozenInstanceError`)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(type(self)._values_of(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def _rebuild(cls: type[Record], fields: dict[str, Any]) -> Record:
    """A record from its fields by name (what `copy` and `pickle` call)."""
    return cls(**fields)
