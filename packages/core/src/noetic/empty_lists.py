"""Lists that are the empty tuple while they hold nothing (GC-2).

A long-lived harness keeps a session per thread, and each empty list a session holds (its
queue, its stream's subscribers, its log's listeners) is one more object the cyclic garbage
collector walks on every full collection; the empty tuple is not tracked. `added` and
`removed` keep such a value a list only while it has members.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["MaybeList", "added", "removed"]

T = TypeVar("T")

#: A list with members, or `()` while there are none.
MaybeList = list[T] | tuple[()]


def added(values: MaybeList[T], value: T) -> list[T]:
    """`values` with `value` appended: the same list, or a new one in place of `()`."""
    if isinstance(values, list):
        values.append(value)
        return values
    return [value]


def removed(values: MaybeList[T], value: T) -> MaybeList[T] | None:
    """`values` without `value` (`()` once nothing is left), or None when `value` is not in it."""
    if not isinstance(values, list) or value not in values:
        return None
    values.remove(value)
    return values or ()
