"""Pydantic models the framework builds from values it made itself, without validating them.

Validating a model runs pydantic-core plus every Python validator and discriminator of its
fields: for the items and usage a plain turn builds itself (the user message of a string
input, a tool's output item, the turn's usage) that is a large share of the turn's work,
spent checking values that are valid by construction. `assembled` builds the very instance
validation would, and each caller keeps the validated build for any value it did not make
(`tests/core/test_round_trip_shortcuts.py` compares the two for each use).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["assembled"]

M = TypeVar("M", bound=BaseModel)

_new_object = object.__new__
_set_attribute = object.__setattr__


def assembled(cls: type[M], values: dict[str, Any], fields_set: set[str], extra: dict[str, Any] | None) -> M:
    """The instance of `cls` a validated build from the same values makes, without validation.

    `values` must hold every field of `cls`, in the order of `cls.model_fields`, as validation
    would leave them; `fields_set` the fields the validated build is given explicitly; `extra`
    `{}` for a model that allows extra fields, else None. Pydantic has no cheaper way:
    `model_construct` reads every default factory's signature on each call, costing more
    than validating.
    """
    built = _new_object(cls)
    _set_attribute(built, "__dict__", values)
    _set_attribute(built, "__pydantic_fields_set__", fields_set)
    _set_attribute(built, "__pydantic_extra__", extra)
    _set_attribute(built, "__pydantic_private__", None)
    return built
