"""Lenient readers for decoded JSON: a field of the wrong type reads as absent.

Provider payloads vary by route and over time, so every module reads them through these
instead of trusting shapes (booleans never count as numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["count", "mapping", "number", "string"]

_EMPTY: Mapping[str, Any] = {}


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
