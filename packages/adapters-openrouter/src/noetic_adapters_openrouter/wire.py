"""Readers for decoded JSON: a scalar field of the wrong type reads as absent.

Provider payloads vary by route and over time, so every module reads them through these
instead of trusting shapes (booleans never count as numbers). A list field is the exception:
`array` raises `MalformedPayload` naming the field when it holds something else, because
silently dropping tool calls or reasoning would change what the model said.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MalformedPayload", "array", "count", "mapping", "number", "string"]

_EMPTY: Mapping[str, Any] = {}


class MalformedPayload(Exception):
    """A provider payload has a field of an impossible shape; the message names the field."""


def array(value: Any, field: str) -> list[Any]:
    """`value` when it is a JSON array, `[]` when absent or null; else `MalformedPayload`."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise MalformedPayload(f"the field {field!r} is {_json_type(value)}, not a list")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` when it is a JSON object, else an empty mapping."""
    return value if isinstance(value, Mapping) else _EMPTY


def string(value: Any) -> str:
    """`value` when it is a string, else `""`."""
    return value if isinstance(value, str) else ""


def count(value: Any) -> int | None:
    """`value` as an int when it is an integral number, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def number(value: Any) -> float | None:
    """`value` as a float when it is a number, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
