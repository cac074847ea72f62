"""Where layer state lives between executions: the `LayerStateStore` contract (LY-14).

A store is three async methods over string keys. The harness holds one (`harness.layer_store`,
in-memory unless configured otherwise) and every layer reaches its part of it through a
`ScopedStorage` that prefixes keys with `layers/{layer_id}/{scope_key}/`. The scope key is the
thread id, the resource id (falling back to the thread), `"__global__"` or the execution id,
so a thread-scoped layer can never read another thread's data.

Values are JSON-shaped data (dicts, lists, strings, numbers, booleans, None); the in-memory
store copies them on the way in and out, so a caller mutating what it read never changes what
is stored.

The in-memory store also remembers which keys hold one thread's state (a `thread`-scoped
layer, or a `resource`-scoped one on a thread with no resource id), so that state can leave
memory with the thread: `drop_thread`. A harness without `storage=` calls it when it evicts
the thread's session, whose history is gone too (`noetic.sessions`), so memory stays bounded
by the sessions kept however many threads come and go.
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
    "StorageScope",
    "owning_thread",
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


#: Value types `copy.deepcopy` gives back unchanged (immutable atoms).
_ATOMS = frozenset({str, int, float, bool, bytes, type(None)})


def detached(value: Any) -> Any:
    """A deep copy of `value`: `copy.deepcopy`, without the call for an immutable atom (which
    it would give back as it is) — most layer states read and snapshotted are None or a string."""
    return value if type(value) in _ATOMS else copy.deepcopy(value)


class MemoryLayerStateStore:
    """The default `LayerStateStore`: a dict in memory, values copied in and out."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        #: The keys of each thread's own state, and the thread of each such key (`drop_thread`).
        self._thread_keys: dict[str, set[str]] = {}
        self._thread_of: dict[str, str] = {}

    async def get(self, key: str) -> Any:
        """The value under `key`, or None when there is none."""
        return detached(self._data.get(key))

    async def set(self, key: str, value: Any) -> None:
        """Store a copy of `value` under `key`."""
        self._data[key] = copy.deepcopy(value)

    async def delete(self, key: str) -> None:
        """Remove `key` if present."""
        self._data.pop(key, None)
        thread_id = self._thread_of.pop(key, None)
        if thread_id is not None:
            keys = self._thread_keys[thread_id]
            keys.discard(key)
            if not keys:
                del self._thread_keys[thread_id]

    def belongs_to_thread(self, key: str, thread_id: str) -> None:
        """Note that `key` holds state of thread `thread_id` only, for `drop_thread`."""
        if key in self._data and key not in self._thread_of:
            self._thread_of[key] = thread_id
            self._thread_keys.setdefault(thread_id, set()).add(key)

    def drop_thread(self, thread_id: str) -> int:
        """Remove every key holding thread `thread_id`'s state; returns how many there were."""
        keys = self._thread_keys.pop(thread_id, set())
        for key in keys:
            self._data.pop(key, None)
            self._thread_of.pop(key, None)
        return len(keys)

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


def owning_thread(scope: str, ctx: Context) -> str | None:
    """The thread whose state alone a layer with `scope` keeps on `ctx`: the thread id for a
    `thread` scope and for a `resource` scope on a thread with no resource id, else None."""
    if scope == "thread" or (scope == "resource" and not ctx.resource_id):
        return ctx.thread_id
    return None


def scope_key(scope: str, ctx: Context) -> str:
    """The scope key of a layer with `scope` running on `ctx` (LY-14)."""
    if scope == "thread":
        return ctx.thread_id
    if scope == "resource":
        return ctx.resource_id or ctx.thread_id
    if scope == "global":
        return GLOBAL_SCOPE_KEY
    return ctx.id


#: What a `ScopedStorage` is made of besides the layer id: the store, the scope key and the
#: owning thread (`owning_thread`). A frame's layers of one scope share it.
StorageScope = tuple[LayerStateStore, str, str | None]


class ScopedStorage:
    """One layer's view of the store, confined to `layers/{layer_id}/{scope_key}/`.

    `thread_id` is the thread whose state alone this is (`owning_thread`), or None; an
    in-memory store is told, so the state can leave memory with the thread's session.
    """

    __slots__ = ("_store", "layer_id", "scope_key", "thread_id")

    def __init__(self, store: LayerStateStore, layer_id: str, scope_key: str, thread_id: str | None = None):
        self._store = store
        self.layer_id = layer_id
        self.scope_key = scope_key
        self.thread_id = thread_id

    def key(self, key: str) -> str:
        """The full store key of `key`."""
        return storage_key(self.layer_id, self.scope_key, key)

    async def get(self, key: str) -> Any:
        """The value under `key`, or None."""
        return await self._store.get(self.key(key))

    async def set(self, key: str, value: Any) -> None:
        """Store `value` under `key`."""
        full = self.key(key)
        await self._store.set(full, value)
        if self.thread_id is not None and isinstance(self._store, MemoryLayerStateStore):
            self._store.belongs_to_thread(full, self.thread_id)

    async def delete(self, key: str) -> None:
        """Remove `key`."""
        await self._store.delete(self.key(key))

    def __repr__(self) -> str:
        return f"<ScopedStorage layers/{self.layer_id}/{self.scope_key}/>"
