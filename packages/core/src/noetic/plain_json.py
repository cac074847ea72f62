"""What a checkpoint can store: plain JSON data, and how deep it may nest.

Kept apart from `noetic.durable` so the layer runtime can hold layer state to it without
importing the durable machinery.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_DEPTH", "is_plain_json"]

#: The deepest nesting of arrays and objects a checkpoint document may have. What is recorded
#: is held to it (a deeper output is not recorded), so a deeper stored row is damaged or forged.
MAX_DEPTH = 200


def is_plain_json(value: Any, *, max_depth: int = MAX_DEPTH) -> bool:
    """True when `value` is made only of what a JSON round trip gives back as the very same
    types: `dict` with `str` keys, `list`, `str`, `int`, `bool`, None and finite `float`, nested
    at most `max_depth` levels (RS-14: a step sees on resume what it saw before).

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
            if leaf is float:
                if not math.isfinite(child):
                    return False
            else:
                stack.append((child, depth + 1))
    return True


#: The scalar types JSON gives back exactly as they went in.
_SCALARS = frozenset({str, int, bool, type(None)})
