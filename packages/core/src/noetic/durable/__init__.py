"""Durable execution: checkpoint stores, the step ledger and resume (rules RS-1..RS-17).

`AgentHarness(storage=...)` takes a `CheckpointStore` or a URL resolved through the
`register_checkpoint_stores` hook (`"sqlite:///run.db"`, `"memory://"`). With storage, every
execution is checkpointed as it runs; `await harness.resume(execution_id)` continues one,
replaying completed steps from the ledger instead of paying for them again, and
`await harness.clear_checkpoint(execution_id)` forgets one. `durability="step"` (the default)
commits each completed step before the next starts, `"turn"` at the end of the turn; the SQLite
store flushes each commit to disk unless its URL says `?synchronous=normal`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from noetic.durable.store import CheckpointStore, Claim
from noetic.lazy import lazy_attribute, lazy_dir

if TYPE_CHECKING:
    from noetic.durable.ledger import StepLedger, StepLedgerRetention, StepLedgerStats
    from noetic.durable.memory import MemoryCheckpointStore
    from noetic.durable.sqlite import SqliteCheckpointStore

__all__ = [
    "CheckpointStore",
    "Claim",
    "MemoryCheckpointStore",
    "SqliteCheckpointStore",
    "StepLedger",
    "StepLedgerRetention",
    "StepLedgerStats",
]

# Imported on first use: a harness without `storage=` never loads sqlite3 or the ledger.
_LAZY = {
    "MemoryCheckpointStore": "noetic.durable.memory",
    "SqliteCheckpointStore": "noetic.durable.sqlite",
    "StepLedger": "noetic.durable.ledger",
    "StepLedgerRetention": "noetic.durable.ledger",
    "StepLedgerStats": "noetic.durable.ledger",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(globals(), _LAZY)
