"""`MemoryCheckpointStore`: the in-process checkpoint store (tests, demos, single-process resume).

It keeps the same JSON text a durable backend would, so a value that could not be stored on
disk cannot be stored here either, and readers never share objects with writers. Nothing
survives the process; `storage="memory://"` gives each harness its own empty store — pass one
instance to several harnesses to resume across them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from noetic.durable.claims import ClaimTable, HeldClaim
from noetic.errors import NoeticConfigError

__all__ = ["MemoryCheckpointStore", "memory_store_from_url"]


class MemoryCheckpointStore:
    """A `CheckpointStore` held in a dict; claims are exclusive within the process."""

    def __init__(self) -> None:
        self._rows: dict[str, str] = {}
        self._claims = ClaimTable()

    async def get(self, key: str) -> str | None:
        """The document at `key`, or None."""
        return self._rows.get(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        """The documents at `keys` that exist."""
        rows = self._rows
        return {key: rows[key] for key in keys if key in rows}

    async def set(self, key: str, value: str) -> None:
        """Write one document."""
        self._rows[key] = value

    async def delete(self, key: str) -> None:
        """Remove one document."""
        self._rows.pop(key, None)

    async def list_prefix(self, prefix: str) -> list[str]:
        """Every key starting with `prefix`, ascending."""
        return sorted(key for key in self._rows if key.startswith(prefix))

    async def write(self, sets: Mapping[str, str], deletes: Sequence[str] = ()) -> None:
        """Apply `sets` and `deletes` together (nothing can interleave: no await inside)."""
        self._rows.update(sets)
        for key in deletes:
            self._rows.pop(key, None)

    async def claim(self, execution_id: str) -> HeldClaim:
        """Claim an execution for this attempt, or raise `EXECUTION_LOCKED`."""
        return await self._claims.claim(execution_id)

    async def aclose(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"MemoryCheckpointStore({len(self._rows)} rows)"


def memory_store_from_url(url: str) -> MemoryCheckpointStore:
    """The `memory://` factory: a fresh, empty store."""
    if url.rstrip("/") not in ("memory:", "memory:/"):
        raise NoeticConfigError(
            "UNKNOWN_CHECKPOINT_STORE",
            f"storage URL {url!r}: memory:// stores take no path",
            hint="Write storage='memory://', or pass one MemoryCheckpointStore() instance to share it.",
        )
    return MemoryCheckpointStore()
