"""Numeric options checked at construction: a number is an int or a float, never a bool, and
it must fit in a float.

`math.isfinite(10**400)` and `float(10**400)` raise `OverflowError`, and a timer given such a
deadline fails later, in the middle of a run, so an option that takes seconds or a count
converts through `as_float` and treats None as "not a number" in its own error.
"""

from __future__ import annotations

__all__ = ["as_float"]


def as_float(value: object) -> float | None:
    """`value` as a float; None for a bool, a non-number (a str, a Decimal) or an int too large
    for a float. NaN and infinities are returned as they are, for the caller to judge."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None
