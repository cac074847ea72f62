"""What a checkpoint can store: plain JSON data, and how deep it may nest.

Kept apart from `noetic.durable` so the layer runtime can hold layer state to it without
importing the durable machinery.
"""

from __future__ import annotations

import math
import sys
from typing import Any

__all__ = ["MAX_DEPTH", "is_plain_json"]

#: The deepest nesting of arrays and objects a checkpoint document may have. What is recorded
#: is held to it (a deeper output is not recorded), so a deeper stored row is damaged or forged.
MAX_DEPTH = 200


def is_plain_json(value: Any, *, max_depth: int = MAX_DEPTH) -> bool:
    """True when `value` is made only of what a JSON round trip gives back as the very same
    types: `dict` with `str` keys, `list`, `str`, `int`, `bool`, None and finite `float`, nested
    at most `max_depth` levels (RS-14: a step sees on resume what it saw before).

    An `int` with more decimal digits than `sys.get_int_max_str_digits()` allows is not plain
    JSON either: it cannot be written as JSON text.

    Types are compared exactly: a `str` or `int` subclass (an `Enum` member), an `OrderedDict`,
    a tuple, NaN or an object is not plain JSON, although `json.dumps` may accept it — it would
    come back as another type. Walked with a stack, so neither depth nor a cycle recurses.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(key) is not str for key in item):
                return False
            children: Any = item.values()
        elif kind is list:
            children = item
        elif kind is float:
            if not math.isfinite(item):
                return False
            continue
        elif kind is int:
            if item.bit_length() > _SAFE_BITS and not _writable_int(item):
                return False
            continue
        elif kind in _SCALARS:
            continue
        else:
            return False
        if depth >= max_depth:
            return False
        for child in children:  # leaves are checked here, without a trip through the stack
            leaf = type(child)
            if leaf in _SCALARS:
                continue
            if leaf is int:
                if child.bit_length() > _SAFE_BITS and not _writable_int(child):
                    return False
            elif leaf is float:
                if not math.isfinite(child):
                    return False
            else:
                stack.append((child, depth + 1))
    return True


def _writable_int(number: int) -> bool:
    """True when `number` has no more decimal digits than Python converts to text (0: no limit)."""
    limit = sys.get_int_max_str_digits()
    return limit == 0 or abs(number) < 10**limit


#: Ints of at most this many bits are below 8**640 < 10**640 (the least digit limit Python
#: allows), so always writable: only a longer one pays for the exact test.
_SAFE_BITS = 3 * 640

#: The scalar types (besides `int`, checked for its length) JSON gives back exactly as they went in.
_SCALARS = frozenset({str, bool, type(None)})
