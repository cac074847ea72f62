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

from noetic.durable.ledger import StepLedger, StepLedgerRetention, StepLedgerStats
from noetic.durable.memory import MemoryCheckpointStore
from noetic.durable.sqlite import SqliteCheckpointStore
from noetic.durable.store import CheckpointStore, Claim

__all__ = [
    "CheckpointStore",
    "Claim",
    "MemoryCheckpointStore",
    "SqliteCheckpointStore",
    "StepLedger",
    "StepLedgerRetention",
    "StepLedgerStats",
]
