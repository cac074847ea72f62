"""Tool names on the wire: providers accept only `^[a-zA-Z0-9_-]{1,64}$`.

Noetic names may hold other characters (layer functions are offered as `"{layer}/{fn}"`), so
each name is rewritten for the wire — every other character becomes `_`, the result is cut to
64 characters, and a clash gets a numbered suffix — and function calls coming back are mapped
to the original name. Names already valid pass unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ToolNames"]

_INVALID = re.compile(r"[^a-zA-Z0-9_-]")
_MAX = 64


class ToolNames:
    """The two-way mapping between Noetic tool names and wire names for one request."""

    __slots__ = ("_to_original", "_to_wire")

    def __init__(self, names: Iterable[str] = ()):
        self._to_wire: dict[str, str] = {}
        self._to_original: dict[str, str] = {}
        # Valid names first, so a rewritten name can never take a valid name's place.
        for name in sorted(names, key=lambda n: len(n) > _MAX or _INVALID.search(n) is not None):
            self.wire(name)

    def wire(self, name: str) -> str:
        """The wire name for `name` (assigned on first sight, stable afterwards)."""
        known = self._to_wire.get(name)
        if known is not None:
            return known
        base = _INVALID.sub("_", name)[:_MAX] or "tool"
        candidate, n = base, 1
        while candidate in self._to_original:
            n += 1
            suffix = f"_{n}"
            candidate = base[: _MAX - len(suffix)] + suffix
        self._to_wire[name] = candidate
        self._to_original[candidate] = name
        return candidate

    def original(self, wire_name: str) -> str:
        """The Noetic name behind `wire_name` (unknown names come back unchanged)."""
        return self._to_original.get(wire_name, wire_name)
