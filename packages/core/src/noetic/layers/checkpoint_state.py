"""`CheckpointLayerStateStore`: layer state kept in a checkpoint store, so it outlives the process.

A harness built with `storage=` (a URL such as `"sqlite:///run.db"`, or a `CheckpointStore`)
keeps its thread-, resource- and global-scoped layer state here instead of in memory: the
scratchpad a user filled in yesterday is there after a restart (LY-16). Each layer key is one
JSON document under `layer-state:{key}`, next to (never inside) the executions' own records.

Rows are read as hostile data: text that is not JSON raises `CHECKPOINT_CORRUPT` naming the key
(the layer's `init` then fails loudly, or disables the layer under `on_init_error="disable"`),
and a value JSON cannot carry is refused on write (the runtime logs it as a `persist` failure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from noetic.durable.store import CheckpointStore, decode_document, encode_document

__all__ = ["LAYER_STATE_PREFIX", "CheckpointLayerStateStore"]

#: The key prefix of layer state inside a checkpoint store.
LAYER_STATE_PREFIX = "layer-state:"


class CheckpointLayerStateStore:
    """A `LayerStateStore` over a `CheckpointStore` (values are JSON documents).

    `store` is the checkpoint store, or a function returning it — the harness passes its own
    resolver, so a store it closes on exit is opened again by the next turn that needs it.
    """

    __slots__ = ("_resolve",)

    def __init__(self, store: CheckpointStore | Callable[[], CheckpointStore]):
        if isinstance(store, CheckpointStore):
            checkpoints = store
            self._resolve: Callable[[], CheckpointStore] = lambda: checkpoints
        else:
            self._resolve = store

    @property
    def checkpoints(self) -> CheckpointStore:
        """The checkpoint store the state lives in."""
        return self._resolve()

    async def get(self, key: str) -> Any:
        """The value under `key`, or None; a damaged row raises `CHECKPOINT_CORRUPT`."""
        row_key = LAYER_STATE_PREFIX + key
        text = await self.checkpoints.get(row_key)
        return None if text is None else decode_document(row_key, text)

    async def set(self, key: str, value: Any) -> None:
        """Store `value` (JSON data) under `key`; other values raise `ValueError`/`TypeError`."""
        await self.checkpoints.set(LAYER_STATE_PREFIX + key, encode_document(value))

    async def delete(self, key: str) -> None:
        """Remove `key` (a missing key is fine)."""
        await self.checkpoints.delete(LAYER_STATE_PREFIX + key)

    def __repr__(self) -> str:
        return f"CheckpointLayerStateStore({self.checkpoints!r})"
