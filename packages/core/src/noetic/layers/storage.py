"""Where layer state lives between executions: the `LayerStateStore` contract (LY-14).

A store is three async methods over string keys. The harness holds one (`harness.layer_store`,
in-memory unless configured otherwise) and every layer reaches its part of it through a
`ScopedStorage` that prefixes keys with `layers/{layer_id}/{scope_key}/`. The scope key is the
thread id, the resource id (falling back to the thread), `"__global__"` or the execution id,
so a thread-scoped layer can never read another thread's data.

Values are JSON-shaped data (dicts, lists, strings, numbers, booleans, None); the in-memory
store copies them on the way in and out, so a caller mutating what it read never changes what
is stored.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from noetic.execution_context import Context

__all__ = [
    "GLOBAL_SCOPE_KEY",
    "LayerStateStore",
    "MemoryLayerStateStore",
    "ScopedStorage",
    "scope_key",
    "storage_key",
]

#: The scope key of `scope="global"` layers.
GLOBAL_SCOPE_KEY = "__global__"


@runtime_checkable
class LayerStateStore(Protocol):
    """Durable key/value storage for layer state."""

    async def get(self, key: str) -> Any:
        """The value under `key`, or None when there is none."""
        ...

    async def set(self, key: str, value: Any) -> None:
        """Store `value` under `key`."""
        ...

    async def delete(self, key: str) -> None:
        """Remove `key` (a missing key is not an error)."""
        ...


class MemoryLayerStateStore:
    """The default `LayerStateStore`: a dict in memory, values copied in and out."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    async def get(self, key: str) -> Any:
        """The value under `key`, or None when there is none."""
        return copy.deepcopy(self._data.get(key))

    async def set(self, key: str, value: Any) -> None:
        """Store a copy of `value` under `key`."""
        self._data[key] = copy.deepcopy(value)

    async def delete(self, key: str) -> None:
        """Remove `key` if present."""
        self._data.pop(key, None)

    def keys(self) -> Iterator[str]:
        """Every stored key (for inspection and tests)."""
        return iter(tuple(self._data))

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"MemoryLayerStateStore({len(self._data)} keys)"


def storage_key(layer_id: str, scope: str, key: str) -> str:
    """The store key of a layer's `key` under a scope key: `layers/{id}/{scope}/{key}`."""
    return f"layers/{layer_id}/{scope}/{key}"


def scope_key(scope: str, ctx: Context) -> str:
    """The scope key of a layer with `scope` running on `ctx` (LY-14)."""
    if scope == "thread":
        return ctx.thread_id
    if scope == "resource":
        return ctx.resource_id or ctx.thread_id
    if scope == "global":
        return GLOBAL_SCOPE_KEY
    return ctx.id


class ScopedStorage:
    """One layer's view of the store, confined to `layers/{layer_id}/{scope_key}/`."""

    __slots__ = ("_store", "layer_id", "scope_key")

    def __init__(self, store: LayerStateStore, layer_id: str, scope_key: str):
        self._store = store
        self.layer_id = layer_id
        self.scope_key = scope_key

    def key(self, key: str) -> str:
        """The full store key of `key`."""
        return storage_key(self.layer_id, self.scope_key, key)

    async def get(self, key: str) -> Any:
        """The value under `key`, or None."""
        return await self._store.get(self.key(key))

    async def set(self, key: str, value: Any) -> None:
        """Store `value` under `key`."""
        await self._store.set(self.key(key), value)

    async def delete(self, key: str) -> None:
        """Remove `key`."""
        await self._store.delete(self.key(key))

    def __repr__(self) -> str:
        return f"<ScopedStorage layers/{self.layer_id}/{self.scope_key}/>"
